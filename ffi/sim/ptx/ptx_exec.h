/* The PTX interpreter's shared state: frames, warps, blocks, lane loops.
 *
 * The interpreter is split by job: ptx_exec.c (scheduling, calls, control
 * flow, blocks), ptx_exec_data.c (moves, conversions, compares and the
 * dispatch of the rest), ptx_exec_int.c, ptx_exec_float.c, ptx_exec_cvt.c
 * (rounding and conversions), ptx_exec_mem.c (loads, stores, atomics) and
 * ptx_exec_warp.c (warp-synchronous instructions).
 */
#ifndef CUSIM_PTX_EXEC_H
#define CUSIM_PTX_EXEC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../sim_bits.h"
#include "../sim_tensormap.h"
#include "ptx_internal.h"

#define FULL 0xffffffffu

enum { R_DONE = 0, R_BARRIER = 1 };
/* Errors travel as negative arsim statuses. */
#define E_FAULT (-(int)ARSIM_ERR_ILLEGAL_ADDRESS)
#define E_FAIL (-1000)
#define E_ASSERT (-(int)ARSIM_ERR_ASSERT) /* a failed assert(): sticky */
/* An access not aligned to its size (sticky).  Loads and stores return
 * E_FAULT whatever stopped them; block_ctx.misaligned says which it was. */
#define E_MISALIGNED (-(int)ARSIM_ERR_MISALIGNED_ADDRESS)

typedef uint64_t lanes_t[PTX_LANES];

/* ------------------------------------------------------------- per-thread state */

typedef struct range {
    uintptr_t lo, hi;
} range;

typedef struct frame {
    const pfunc *f;
    lanes_t *R;
    uint8_t *pf;       /* per-lane .param frame: lane * f->frame_bytes */
    uint32_t local_base; /* offset of this frame's depot in the lane's stack */
    uint32_t pc[PTX_LANES];
    uint32_t active, waiting, parked, blocked, done;
    uint32_t cur_pc, next_pc, nopark_pc;
    uint32_t mbwait;   /* lanes parked at an mbarrier wait (top frame only), in blocked */
    uint32_t exited;   /* lanes that ran exit inside this frame (calls) */
    /* Cache of the waiting lanes' distinct pcs, sorted, and the lowest pc
     * of an unparked waiting lane: rebuilt only when the sets change, so a
     * branch taken by a converged group next to waiting lanes stays cheap. */
    int wdirty;
    uint32_t nwpcs, wmin_unparked;
    uint32_t wpcs[PTX_LANES];
    uint8_t cc[PTX_LANES];
} frame;

/* A cp.async issued and not yet completed by a wait (ptx_exec_async.c). */
typedef struct cp_copy {
    uint64_t src;     /* global address */
    uint32_t dst;     /* offset in the block's shared memory */
    uint32_t group;   /* the issuing lane's count of committed groups at issue */
    int32_t line;
    uint16_t warp;
    uint8_t lane, size, srcn; /* cp-size; the bytes read from src (the rest: zeros) */
} cp_copy;

/* A cp.async.bulk[.tensor] issued and not yet completed (ptx_exec_bulk.c). */
typedef struct bulk_op {
    uint8_t *data;      /* a load: the bytes that land; a store: its source, once read */
    uint64_t gaddr;     /* a plain store's global destination */
    sim_tensormap map;  /* a tensor store's map */
    int32_t coord[5];
    uint32_t soff, size; /* the shared bytes: a load's destination, a store's source */
    uint32_t mbar;      /* a load: its mbarrier's shared offset */
    uint32_t group;     /* a store: the issuing lane's count of committed bulk groups */
    int32_t line;
    uint16_t warp;
    uint8_t lane, store, tensor, read;
} bulk_op;

typedef struct warp {
    frame top;
    uint32_t wg_groups; /* wgmma groups the warp has committed */
    int wg_fenced;      /* a wgmma.fence has run */
    uint32_t valid;    /* lanes that exist */
    uint32_t exited;
    uint32_t id;
    int finished;
    uint32_t tid[3][PTX_LANES];
    uint32_t red_dst, red_lanes; /* bar.red: the result's register and its lanes */
    uint8_t *local;    /* lane * stack bytes */
    uint32_t cp_groups[PTX_LANES]; /* cp.async groups each lane has committed */
    uint32_t bulk_groups[PTX_LANES]; /* cp.async.bulk groups each lane has committed */
    int mb_pass;       /* the next mbarrier wait that would park returns false instead */
} warp;

typedef struct block_ctx {
    const pmodule *mod;
    const pfunc *entry;
    const ar_launch *L;
    uint8_t *params;
    uint8_t *shared;
    uint32_t shared_size, dyn_size;
    uint32_t nthreads, nwarps;
    uint32_t stack;
    uint32_t ctaid[3];
    warp *warps;
    /* The barrier being filled: 0 for bar.sync, else the bar.red operation,
     * which every arrival must share; the reduction of the predicates so far. */
    int bar_red;
    uint32_t red_popc, red_all, red_any, bar_arrivals;
    range cache[8];
    unsigned cache_next;
    /* Ranges the launch declared read-only (engine.h), or NULL: every global
     * store is checked against them. */
    const arsim_readonly *ro;
    /* cp.async: the copies issued and not yet completed, in issue order, and
     * per byte of shared memory how many of them write it (allocated at the
     * first copy).  A copy is performed when a wait completes it. */
    cp_copy *cp;
    uint32_t ncp, cap_cp;
    uint16_t *cp_busy;
    /* wgmma.mma_async: issued, not yet performed (ptx_exec_wgmma.c); and per
     * shared byte, written through the generic proxy since the last
     * fence.proxy.async (allocated when the module has wgmma). */
    struct wg_op *wg;
    uint32_t nwg, cap_wg;
    uint8_t *gdirty;
    /* The access that stopped the block was misaligned (ptx_exec_mem.c). */
    int misaligned;
    /* cp.async.bulk: the copies issued and not completed; loads also count
     * in cp_busy.  mb_epoch counts mbarrier state changes (progress for the
     * scheduler, ptx_exec.c); mb_stuck: a round without any was seen. */
    bulk_op *bl;
    uint32_t nbl, cap_bl;
    uint64_t mb_epoch;
    int mb_stuck;
} block_ctx;

/* A wgmma.mma_async a warp issued: its frame, instruction, descriptors. */
typedef struct wg_op {
    frame *fr;
    const pinsn *in;
    uint64_t da, db;
    uint32_t group;
    uint16_t warp;
    uint8_t scale_d;
} wg_op;

/* ------------------------------------------------------------- values */

static inline float ftz32(float f)
{
    return fpclassify(f) == FP_SUBNORMAL ? copysignf(0.0f, f) : f;
}

static inline double h2d(uint16_t h)
{
    _Float16 x;
    memcpy(&x, &h, 2);
    return (double)x;
}
static inline uint16_t d2h(double d)
{
    if (d != d)
        return 0x7fff; /* the canonical NaN cvt writes */
    _Float16 x = (_Float16)d;
    uint16_t h;
    memcpy(&h, &x, 2);
    return h;
}
static inline double bf2d(uint16_t b) { return (double)sim_f32((uint64_t)b << 16); }
/* The 8-bit floats of sm_89 on (OCP FP8): e4m3 (bias 7, no infinities,
 * S.1111.111 NaN, largest 448) and e5m2 (bias 15, IEEE-like: infinities and
 * NaNs at exponent 31, largest 57344); exactly, as a double. */
static inline double fp8_to_double(uint8_t v, int kind)
{
    int e5 = kind == FP8_E5M2, mb = e5 ? 2 : 3, bias = e5 ? 15 : 7;
    int e = (v & 0x7f) >> mb, m = v & ((1 << mb) - 1), top = e5 ? 31 : 15;
    double x;
    if (e == top && (e5 || m == (1 << mb) - 1))
        x = e5 && !m ? INFINITY : NAN;
    else if (!e) /* subnormal */
        x = ldexp(m, 1 - bias - mb);
    else
        x = ldexp((1 << mb) + m, e - bias - mb);
    return v & 0x80 ? -x : x;
}
/* double -> bf16 in a rounding mode (RND_*). */
PTX_HIDDEN uint16_t ptx_d2bf(double d, int mode);

static inline int ibits(int t)
{
    switch (t) {
    case T_B8: case T_U8: case T_S8: return 8;
    case T_B16: case T_U16: case T_S16: case T_F16: case T_BF16: return 16;
    case T_B32: case T_U32: case T_S32: case T_F32: case T_F16X2: case T_BF16X2: return 32;
    case T_PRED: return 1;
    default: return 64;
    }
}
static inline int is_signed(int t) { return t == T_S8 || t == T_S16 || t == T_S32 || t == T_S64; }

#define FOR_LANES(mask, ...)                                                                     \
    do {                                                                                          \
        uint32_t m_ = (mask);                                                                     \
        if (m_ == FULL) {                                                                         \
            for (int l = 0; l < PTX_LANES; l++) {                                                 \
                __VA_ARGS__;                                                                      \
            }                                                                                     \
        } else {                                                                                  \
            while (m_) {                                                                          \
                int l = __builtin_ctz(m_);                                                        \
                m_ &= m_ - 1;                                                                     \
                __VA_ARGS__;                                                                      \
            }                                                                                     \
        }                                                                                         \
    } while (0)

/* Each runs one instruction for the lanes in m (a nonzero mask); 0, or a
 * negative E_* status. */
PTX_HIDDEN int ptx_exec_data(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m);
PTX_HIDDEN int ptx_exec_mem(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m);
PTX_HIDDEN int ptx_exec_int(const pinsn *in, frame *fr, uint64_t *D, const uint64_t *A,
                            const uint64_t *B, const uint64_t *C, const uint64_t *E, uint32_t m);
PTX_HIDDEN int ptx_exec_float(const pinsn *in, uint64_t *D, const uint64_t *A, const uint64_t *B,
                              const uint64_t *C, uint32_t m);
PTX_HIDDEN void ptx_exec_warp(warp *w, frame *fr, const pinsn *in, uint32_t m);
/* ptx_exec_mma.c: ldmatrix and mma, once the whole warp is here; a launch
 * failure (E_FAIL, said on stderr) unless m is all 32 lanes. */
PTX_HIDDEN int ptx_exec_matrix(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m);
/* ptx_exec_wmma.c: wmma.load, wmma.mma, wmma.store.d for a whole warp. */
PTX_HIDDEN int ptx_exec_wmma(block_ctx *b, frame *fr, const pinsn *in);
/* ptx_exec_async.c: cp.async, commit_group, wait_group and wait_all for the
 * lanes in m. */
PTX_HIDDEN int ptx_exec_async(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m);
/* 0, or E_FAIL (said on stderr, naming in's line and the copy's) when the
 * access of n bytes at shared offset off touches the destination of a
 * cp.async that no wait has completed.  Call only when b->ncp. */
PTX_HIDDEN int ptx_cp_hazard(block_ctx *b, const pinsn *in, uint64_t off, size_t n);
/* The same for each lane's access of in (ld, st, atom on shared or generic
 * addresses in A, plus in->imm); a write also marks the bytes for the
 * async proxy (ptx_proxy_written).  Call only when b->ncp or b->gdirty. */
PTX_HIDDEN int ptx_shared_access(block_ctx *b, const pinsn *in, const uint64_t *A, size_t n,
                                 uint32_t m);
/* fence.proxy.async: the generic proxy's writes become visible to the async proxy. */
PTX_HIDDEN void ptx_proxy_fence(block_ctx *b);
/* n shared bytes at off were written through the generic proxy. */
PTX_HIDDEN void ptx_proxy_written(block_ctx *b, uint64_t off, size_t n);
/* ptx_exec_wgmma.c: wgmma.fence, mma_async, commit_group, wait_group for warp w. */
PTX_HIDDEN int ptx_exec_wgmma(block_ctx *b, warp *w, frame *fr, const pinsn *in);
/* ptx_exec_mbar.c: the mbarrier operations but the waits, for the lanes in m. */
PTX_HIDDEN int ptx_exec_mbar(block_ctx *b, frame *fr, const pinsn *in, uint32_t m);
/* A test_wait or try_wait for the lanes in m: in *park the lanes whose phase
 * has not completed (they must wait at it); 0 or a negative status. */
PTX_HIDDEN int ptx_mbar_wait(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m,
                             uint32_t *park);
/* Says which wait can never complete (every warp is parked). */
PTX_HIDDEN void ptx_mbar_deadlock(block_ctx *b);
/* ptx_exec_bulk.c: bulk copies, their groups, tensor maps, for the lanes in m. */
PTX_HIDDEN int ptx_exec_bulk(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m);
/* Lands the loads that complete the mbarrier at shared offset mbar. */
PTX_HIDDEN int ptx_bulk_flush(block_ctx *b, uint64_t mbar);
/* Whether a load will still complete the mbarrier at mbar. */
PTX_HIDDEN int ptx_bulk_pending(const block_ctx *b, uint64_t mbar);
/* The pending load whose destination holds shared offset off, or NULL. */
PTX_HIDDEN const bulk_op *ptx_bulk_at(const block_ctx *b, uint64_t off);
/* E_FAIL (said) when n shared bytes at off are the source of a store not yet read. */
PTX_HIDDEN int ptx_bulk_write_hazard(block_ctx *b, const pinsn *in, uint64_t off, size_t n);
/* A block ends: its pending stores complete (when complete), its loads are dropped. */
PTX_HIDDEN int ptx_bulk_end(block_ctx *b, int complete);

/* Forgets the block's pending copies (a block ends, the next begins). */
PTX_HIDDEN void ptx_cp_reset(block_ctx *b);
/* ptx_exec_printf.c: a call of vprintf, or of __assertfail (a failed
 * assert(): the launch fails), for the lanes in m. */
PTX_HIDDEN int ptx_exec_vprintf(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m);
PTX_HIDDEN int ptx_exec_assertfail(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m);

/* ptx_exec_mem.c, for vprintf and cp.async */
/* The host address of n global bytes at addr to read (wr 0) or write, or
 * NULL (a fault, recorded). */
PTX_HIDDEN uint8_t *ptx_global_at(block_ctx *b, uint64_t addr, size_t n, int wr);
/* Lane l's load of n bytes (1, 2, 4 or 8, aligned) at generic address addr
 * into *v: 0, or E_FAULT (recorded, as any load's). */
PTX_HIDDEN int ptx_mem_read(block_ctx *b, warp *w, frame *fr, uint64_t addr, size_t n, int l,
                            uint64_t *v);
/* The memory lane l can read at generic address addr: its host address, and
 * in *avail the bytes from there to the end of the window that holds it
 * (shared memory, the lane's stack, the kernel's parameters, a live
 * allocation or a module variable).  NULL when none does; records no fault. */
PTX_HIDDEN const uint8_t *ptx_mem_span(block_ctx *b, warp *w, frame *fr, uint64_t addr, int l,
                                       size_t *avail);

/* ptx_exec_cvt.c */
/* One cvt of a lane's value from type st to type dt. */
PTX_HIDDEN uint64_t ptx_cvt_one(uint64_t x, int dt, int st, int mode, unsigned flags);
/* A float value of type t (f16, bf16, f32, f64) as double. */
PTX_HIDDEN double ptx_to_double(uint64_t v, int t);
/* cvt with an fp8 pair (in.imm: FP8_E4M3 or FP8_E5M2, | FP8_TO for a
 * destination .e4m3x2/.e5m2x2): lane values a and b, as the ISA packs them. */
PTX_HIDDEN uint64_t ptx_cvt_fp8(const pinsn *in, uint64_t a, uint64_t b);
/* add, sub, mul, div, fma, rcp, sqrt of f32 or f64 bits in a directed rounding mode. */
PTX_HIDDEN uint64_t ptx_directed(int op, int type, int mode, uint64_t a, uint64_t b, uint64_t c);

#endif /* CUSIM_PTX_EXEC_H */
