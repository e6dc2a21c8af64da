/* The decoded form of a PTX module, shared by the parser (ptx_lex.c,
 * ptx_operand.c, ptx_insn.c, ptx_parse.c) and the interpreter
 * (ptx_exec*.c).
 *
 * Every value an instruction reads is a register slot: PTX registers,
 * immediates (constant slots filled once per frame), special registers
 * (%tid.x, ...) and symbol addresses all get slots at load time, so the
 * interpreter's inner loops only index the register file.  A register file
 * holds each slot as 32 lanes of 64 bits.
 */
#ifndef CUSIM_PTX_INTERNAL_H
#define CUSIM_PTX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ptx.h"

#define PTX_HIDDEN __attribute__((visibility("hidden")))
#define PTX_NONE 0xffffffffu
#define PTX_LANES 32

typedef enum ptx_type {
    T_NONE = 0,
    T_B8, T_B16, T_B32, T_B64, T_B128,
    T_U8, T_U16, T_U32, T_U64,
    T_S8, T_S16, T_S32, T_S64,
    T_F16, T_F16X2, T_BF16, T_BF16X2, T_F32, T_F64,
    T_PRED,
} ptx_type;

typedef enum ptx_space {
    S_GENERIC = 0, S_GLOBAL, S_SHARED, S_LOCAL, S_PARAM, S_CONST,
    S_FRAME, /* .param of a .func or of a call site: the per-lane frame */
} ptx_space;

/* The decoded operations, one per row of ptx_opcodes.def. */
typedef enum ptx_op {
#define PTX_OP(id, name, family, route) OP_##id,
#define PTX_DECODED(id, family, route) OP_##id,
#include "ptx_opcodes.def"
    OP_COUNT
} ptx_op;

/* Which executor handler runs an operation: the route column of
 * ptx_opcodes.def, read through ptx_route_of[op].  The first group moves
 * the pc itself (exec_control in ptx_exec.c); the rest run in
 * ptx_exec_data, and the pc moves on after them. */
typedef enum ptx_route {
    ROUTE_NOTHING = 0, /* runs as a no-op (setmaxnreg: register allocation) */
    ROUTE_BRANCH, ROUTE_RETURN, ROUTE_TRAP, ROUTE_BARRIER, ROUTE_CALL, ROUTE_HOSTCALL,
    ROUTE_WARP, ROUTE_MBAR_WAIT, ROUTE_MATRIX, ROUTE_ACTIVEMASK,
    ROUTE_ARITH, ROUTE_FLOAT, ROUTE_MOVE, ROUTE_COMPARE, ROUTE_MEM, ROUTE_ASYNC,
    ROUTE_MBAR, ROUTE_BULK, ROUTE_FENCE, ROUTE_PROXY_FENCE, ROUTE_CLOCK,
} ptx_route;

extern const unsigned char ptx_route_of[OP_COUNT];

/* Modifier values (pinsn.mode), by op. */
enum { RND_NONE = 0, RND_RN, RND_RZ, RND_RM, RND_RP, RND_RNI, RND_RZI, RND_RMI, RND_RPI,
       RND_RNA };
enum { CMP_EQ = 1, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_LO, CMP_LS, CMP_HI, CMP_HS,
       CMP_EQU, CMP_NEU, CMP_LTU, CMP_LEU, CMP_GTU, CMP_GEU, CMP_NUM, CMP_NAN };
enum { BOOL_NONE = 0, BOOL_AND, BOOL_OR, BOOL_XOR };
/* cvt's fp8 pairs (in.imm) and wgmma's 8-bit inputs: e4m3, e5m2; FP8_TO: to fp8 */
enum { FP8_E4M3 = 1, FP8_E5M2 = 2, FP8_TO = 4 };
/* tensormap.replace's fields (pinsn.mode) */
enum { TMAP_GLOBAL_ADDRESS = 1, TMAP_RANK, TMAP_BOX_DIM, TMAP_GLOBAL_DIM, TMAP_GLOBAL_STRIDE,
       TMAP_ELEMENT_STRIDE, TMAP_ELEMTYPE, TMAP_INTERLEAVE, TMAP_SWIZZLE, TMAP_SWIZZLE_ATOMICITY,
       TMAP_FILL };
enum { BAR_RED_POPC = 1, BAR_RED_AND, BAR_RED_OR };
enum { ATOM_ADD = 1, ATOM_MIN, ATOM_MAX, ATOM_EXCH, ATOM_CAS, ATOM_AND, ATOM_OR, ATOM_XOR,
       ATOM_INC, ATOM_DEC };
enum { SHFL_UP = 1, SHFL_DOWN, SHFL_BFLY, SHFL_IDX };
enum { VOTE_ALL = 1, VOTE_ANY, VOTE_UNI, VOTE_BALLOT };
enum { TESTP_FINITE = 1, TESTP_INFINITE, TESTP_NUMBER, TESTP_NAN, TESTP_NORMAL,
       TESTP_SUBNORMAL };
enum { MULW_LO = 0, MULW_HI, MULW_WIDE };

/* pinsn.flags */
#define FL_FTZ 0x01u
#define FL_SAT 0x02u
#define FL_APPROX 0x04u
#define FL_CC 0x08u     /* add.cc / sub.cc: writes the carry */
#define FL_SHIFTAMT 0x10u
#define FL_NAN 0x20u    /* min/max .NaN */
#define FL_WRAP 0x40u   /* shf.wrap */
#define FL_RELU 0x40u   /* fma, min, max on .f16/.bf16: .relu (shf's .wrap bit: no op has both) */
#define FL_RIGHT 0x80u  /* shf.r */
#define FL_IM2COL 0x01u /* cp.async.bulk.tensor: the im2col load mode (no float op there) */

/* Special registers, filled per block/warp/frame. */
typedef enum ptx_special {
    SP_TID_X = 1, SP_TID_Y, SP_TID_Z, SP_NTID_X, SP_NTID_Y, SP_NTID_Z,
    SP_CTAID_X, SP_CTAID_Y, SP_CTAID_Z, SP_NCTAID_X, SP_NCTAID_Y, SP_NCTAID_Z,
    SP_LANEID, SP_WARPID, SP_NWARPID, SP_SMID, SP_NSMID, SP_GRIDID,
    SP_LANEMASK_EQ, SP_LANEMASK_LT, SP_LANEMASK_LE, SP_LANEMASK_GT, SP_LANEMASK_GE,
    SP_DYN_SMEM, SP_TOTAL_SMEM, SP_LOCAL_BASE, SP_ZERO,
} ptx_special;

typedef struct pinsn {
    uint8_t op;
    uint8_t type;   /* the operation's type */
    uint8_t type2;  /* cvt: source type; mul/mad: MULW_*; setp: BOOL_* */
    uint8_t mode;   /* rounding, comparison, atomic op, shuffle mode, ... */
    uint8_t flags;
    uint8_t space;  /* ld/st/atom/cvta */
    uint8_t vec;    /* ld/st vector width; pack/unpack count */
    uint8_t guard_neg;
    uint32_t guard; /* predicate slot or PTX_NONE */
    uint32_t d, d2; /* destinations (d2: setp's q, shfl's p) */
    uint32_t a, b, c, e; /* sources; ld/st/atom address base in a */
    uint32_t f;     /* a fifth source (cp.async.bulk.tensor .im2col: the D offset) */
    uint32_t neg;   /* bit i: source i (a=0,b=1,c=2) is a negated predicate */
    uint32_t v[4];  /* vector registers (ld/st .v2/.v4, mov pack/unpack) */
    int64_t imm;    /* address offset; lop3 table; prmt mode; bar id */
    int32_t target; /* branch target pc, or callee function index */
    int32_t aux;    /* call: index into the function's call table */
    int32_t line;
} pinsn;

/* A function's address, as `mov.u64 %rd, f;` gives it: a non-canonical
 * address (no load or store reaches it) that an indirect call decodes. */
#define PTX_FUNC_ADDR_BASE 0x7ead000000000000ull
#define PTX_FUNC_ADDR(i) (PTX_FUNC_ADDR_BASE | ((uint64_t)(i) << 4))

/* A call site: the caller-frame offsets of the argument and return .param
 * variables, in order. */
#define PTX_MAX_CALL_ARGS 128
typedef struct pcall {
    int32_t nargs, nrets;
    uint32_t arg_off[PTX_MAX_CALL_ARGS];
    uint32_t ret_off[PTX_MAX_CALL_ARGS];
    uint32_t ret_size[PTX_MAX_CALL_ARGS]; /* bytes of each return .param */
} pcall;

typedef struct pconst {
    uint32_t slot;
    uint64_t value;
} pconst;

typedef struct pspecial {
    uint32_t slot;
    uint32_t kind; /* ptx_special */
} pspecial;

typedef struct pparam {
    uint32_t offset, size;
} pparam;

typedef struct pfunc {
    char *name;
    int is_entry;
    int defined;
    int uses_barrier;
    int uses_printf; /* it, or a function it calls, calls vprintf (ptx_mark_printf) */
    int address_taken; /* its address is an operand: an indirect call may reach it */
    pinsn *code;
    int32_t ncode, cap_code;
    uint32_t nslots;
    pconst *consts;
    uint32_t nconsts, cap_consts;
    pspecial *specials;
    uint32_t nspecials;
    /* .entry: kernel parameters in the param buffer; .func: formal params
     * then return values in the per-lane frame. */
    pparam params[AR_KERNEL_MAX_PARAMS];
    uint32_t nparams;
    pparam rets[PTX_MAX_CALL_ARGS];
    uint32_t nrets;
    uint32_t param_bytes;  /* .entry: size of the param buffer */
    uint32_t frame_bytes;  /* per-lane .param frame (formals, returns, call args) */
    uint32_t local_bytes;  /* per-lane .local depot of this function */
    uint32_t shared_static; /* .entry: bytes of static shared memory (module + body) */
    uint32_t local_total;   /* .entry: per-lane .local of its deepest call chain */
    uint32_t maxntid[3];    /* .maxntid, zeros when absent */
    uint32_t reqntid[3];    /* .reqntid, zeros when absent */
    pcall *calls;
    uint32_t ncalls, cap_calls;
    /* Register slots of instructions with more operands than a pinsn holds
     * (mma: d, a, b, c in a row, from the pinsn's aux). */
    uint32_t *lists;
    uint32_t nlists, cap_lists;
    ar_kernel_info info;
} pfunc;

/* A .global or .const module variable (host memory the module owns). */
typedef struct pvar {
    char *name;
    void *data;
    size_t size;
    int is_const;   /* .const (else .global) */
    int registered; /* data is registered with the engine, so copies can reach it */
} pvar;

typedef struct pmodule {
    pfunc *funcs;
    uint32_t nfuncs, cap_funcs;
    pvar *vars;
    uint32_t nvars, cap_vars;
    uint32_t shared_module; /* bytes of the static .shared pool, 16-aligned: dynamic shared follows */
    uint32_t shared_declared; /* the bytes the .shared variables take: what ptxas reports */
    int has_dynamic_shared;
    int uses_wgmma; /* a function has wgmma: shared writes are tracked for the async proxy */
    uint32_t max_local;  /* per-lane local stack every launch gets */
    uint32_t local_align;  /* largest .local alignment (>= 16): every depot starts at one */
    uint32_t shared_align; /* largest .shared alignment (>= 16): the block's base has it */
} pmodule;

PTX_HIDDEN void ptx_program_free(pmodule *m);
/* Registers each module variable with the engine (ptx_query.c); -1 if one fails. */
PTX_HIDDEN int ptx_register_vars(pmodule *m);
/* Sets each function's uses_printf, once its calls are resolved (ptx_query.c). */
PTX_HIDDEN void ptx_mark_printf(pmodule *m);
/* The foreign kernel entry point (arsim_foreign_run); kernel_ctx is a pfunc*
 * whose module is reachable through ptx_kernel_ctx. */
#define PTX_CTX_MAGIC 0x50545831u
typedef struct ptx_kernel_ctx {
    uint32_t magic; /* PTX_CTX_MAGIC: tells a PTX module from other foreign ones */
    pmodule *mod;
    uint32_t func;
} ptx_kernel_ctx;
PTX_HIDDEN int ptx_run(void *kernel_ctx, const ar_launch *launch, void **params);

/* Bytes of one value of a type (0 for T_NONE). */
static inline int ptx_type_size(int t)
{
    switch (t) {
    case T_B8: case T_U8: case T_S8: case T_PRED: return 1;
    case T_B16: case T_U16: case T_S16: case T_F16: case T_BF16: return 2;
    case T_B32: case T_U32: case T_S32: case T_F32: case T_F16X2: case T_BF16X2: return 4;
    case T_B64: case T_U64: case T_S64: case T_F64: return 8;
    case T_B128: return 16;
    default: return 0;
    }
}

#endif /* CUSIM_PTX_INTERNAL_H */
