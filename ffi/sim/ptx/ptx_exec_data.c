/* PTX moves, conversions, compares and selects, for the interpreter, and
 * the dispatch of every other non-control instruction to its family. */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptx_exec.h"

static inline int fcmp(int mode, double x, double y)
{
    int un = isnan(x) || isnan(y);
    switch (mode) {
    case CMP_EQ: return !un && x == y;
    case CMP_NE: return !un && x != y;
    case CMP_LT: return !un && x < y;
    case CMP_LE: return !un && x <= y;
    case CMP_GT: return !un && x > y;
    case CMP_GE: return !un && x >= y;
    case CMP_EQU: return un || x == y;
    case CMP_NEU: return un || x != y;
    case CMP_LTU: return un || x < y;
    case CMP_LEU: return un || x <= y;
    case CMP_GTU: return un || x > y;
    case CMP_GEU: return un || x >= y;
    case CMP_NUM: return !un;
    case CMP_NAN: return un;
    default: return 0;
    }
}

static inline int icmp(int mode, int sgn, uint64_t a, uint64_t b, int bits)
{
    int64_t sa = sim_sext(a, bits), sb = sim_sext(b, bits);
    uint64_t ua = a & sim_mask(bits), ub = b & sim_mask(bits);
    switch (mode) {
    case CMP_EQ: return ua == ub;
    case CMP_NE: return ua != ub;
    case CMP_LT: return sgn ? sa < sb : ua < ub;
    case CMP_LE: return sgn ? sa <= sb : ua <= ub;
    case CMP_GT: return sgn ? sa > sb : ua > ub;
    case CMP_GE: return sgn ? sa >= sb : ua >= ub;
    case CMP_LO: return ua < ub;
    case CMP_LS: return ua <= ub;
    case CMP_HI: return ua > ub;
    case CMP_HS: return ua >= ub;
    default: return 0;
    }
}

/* Each operation's executor handler, the route column of ptx_opcodes.def: what
 * exec_control (ptx_exec.c) and ptx_exec_data below switch on. */
const unsigned char ptx_route_of[OP_COUNT] = {
#define PTX_OP(id, name, family, route) [OP_##id] = ROUTE_##route,
#define PTX_DECODED(id, family, route) [OP_##id] = ROUTE_##route,
#include "ptx_opcodes.def"
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* mov, pack/unpack, cvt, cvta. */
static void exec_move(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m,
                      uint64_t *D, const uint64_t *A, const uint64_t *B)
{
    const pfunc *f = fr->f;
    lanes_t *R = fr->R;
    int t = in->type;
    switch (in->op) {
    case OP_MOV: {
        uint64_t mask = sim_mask(ibits(t));
        FOR_LANES(m, D[l] = A[l] & mask);
        break;
    }
    case OP_PACK: {
        int eb = ibits(t) / in->vec;
        uint64_t em = sim_mask(eb);
        FOR_LANES(m, {
            uint64_t v = 0;
            for (int k = 0; k < in->vec; k++)
                v |= (R[in->v[k]][l] & em) << (k * eb);
            D[l] = v;
        });
        break;
    }
    case OP_UNPACK: {
        int eb = ibits(t) / in->vec;
        uint64_t em = sim_mask(eb);
        uint64_t src[PTX_LANES];
        memcpy(src, A, sizeof src);
        FOR_LANES(m, {
            for (int k = 0; k < in->vec; k++)
                R[in->v[k]][l] = (src[l] >> (k * eb)) & em;
        });
        break;
    }
    case OP_CVT:
        if (in->imm) { /* an fp8 pair */
            FOR_LANES(m, D[l] = ptx_cvt_fp8(in, A[l], in->b == PTX_NONE ? 0 : B[l]));
        } else if (t == T_F16X2 || t == T_BF16X2) {
            int et = t == T_F16X2 ? T_F16 : T_BF16;
            FOR_LANES(m, D[l] = ptx_cvt_one(A[l], et, in->type2, in->mode, in->flags) << 16 |
                                ptx_cvt_one(B[l], et, in->type2, in->mode, in->flags));
        } else if (in->type2 == T_U32 && (t == T_U64 || t == T_S64)) {
            FOR_LANES(m, D[l] = A[l] & 0xffffffffu);
        } else if (in->type2 == T_S32 && (t == T_U64 || t == T_S64)) {
            FOR_LANES(m, D[l] = (uint64_t)(int64_t)(int32_t)A[l]);
        } else {
            FOR_LANES(m, D[l] = ptx_cvt_one(A[l], t, in->type2, in->mode, in->flags));
        }
        break;
    case OP_CVTA_FROM:
    case OP_CVTA_TO: {
        int to = in->op == OP_CVTA_TO;
        uint64_t mask = sim_mask(ibits(t));
        FOR_LANES(m, {
            uint64_t base = 0;
            switch (in->space) {
            case S_SHARED: base = (uintptr_t)b->shared; break;
            case S_LOCAL: base = (uintptr_t)w->local + (size_t)l * b->stack; break;
            case S_PARAM: base = f->is_entry ? (uintptr_t)b->params : (uintptr_t)(fr->pf + (size_t)l * f->frame_bytes); break;
            default: break;
            }
            D[l] = (to ? A[l] - base : A[l] + base) & mask;
        });
        break;
    }
    default:
        break;
    }
}

/* setp's and set's comparison of one lane's operands. */
static int compare_lane(const pinsn *in, uint64_t a, uint64_t b)
{
    int t = in->type;
    if (t == T_F32) {
        float x = sim_f32(a), y = sim_f32(b);
        if (in->flags & FL_FTZ) { x = ftz32(x); y = ftz32(y); }
        return fcmp(in->mode, x, y);
    }
    if (t == T_F64)
        return fcmp(in->mode, sim_f64(a), sim_f64(b));
    if (t == T_F16 || t == T_BF16)
        return fcmp(in->mode, ptx_to_double(a & 0xffff, t), ptx_to_double(b & 0xffff, t));
    return icmp(in->mode, is_signed(t), a, b, ibits(t));
}

/* selp, setp, set, testp. */
static void exec_compare(frame *fr, const pinsn *in, uint32_t m, uint64_t *D, const uint64_t *A,
                         const uint64_t *B, const uint64_t *C)
{
    lanes_t *R = fr->R;
    int t = in->type;
    switch (in->op) {
    case OP_SELP: {
        uint64_t mask = sim_mask(ibits(t));
        uint64_t neg = (in->neg >> 2) & 1;
        FOR_LANES(m, D[l] = ((C[l] & 1) ^ neg) ? A[l] & mask : B[l] & mask);
        break;
    }
    case OP_SET:
    case OP_SETP: {
        uint64_t *Q = in->d2 != PTX_NONE ? R[in->d2] : NULL;
        uint64_t negc = (in->neg >> 2) & 1;
        int bop = in->type2;
        /* set's true: 1.0 in a float destination, all ones in an integer. */
        uint64_t yes = in->imm == T_F32    ? 0x3f800000u
                       : in->imm == T_F16  ? 0x3c00u
                       : in->imm == T_BF16 ? 0x3f80u
                       : ptx_type_size((int)in->imm) == 2 ? 0xffffu : 0xffffffffu;
        FOR_LANES(m, {
            int r = compare_lane(in, A[l], B[l]);
            int nr = !r;
            if (bop != BOOL_NONE) {
                int c = (int)((C[l] & 1) ^ negc);
                if (bop == BOOL_AND) { r = r && c; nr = nr && c; }
                else if (bop == BOOL_OR) { r = r || c; nr = nr || c; }
                else { r = r ^ c; nr = nr ^ c; }
            }
            D[l] = in->op == OP_SET ? (r ? yes : 0) : (uint64_t)r;
            if (Q)
                Q[l] = (uint64_t)nr;
        });
        break;
    }
    case OP_TESTP:
        FOR_LANES(m, {
            double x = t == T_F32 ? sim_f32(A[l]) : sim_f64(A[l]);
            int c = fpclassify(x), r;
            switch (in->mode) {
            case TESTP_FINITE: r = isfinite(x); break;
            case TESTP_INFINITE: r = isinf(x); break;
            case TESTP_NUMBER: r = !isnan(x); break;
            case TESTP_NAN: r = isnan(x); break;
            case TESTP_NORMAL: r = t == T_F32 ? fpclassify(sim_f32(A[l])) == FP_NORMAL : c == FP_NORMAL; break;
            default: r = t == T_F32 ? fpclassify(sim_f32(A[l])) == FP_SUBNORMAL : c == FP_SUBNORMAL; break;
            }
            D[l] = r != 0;
        });
        break;
    default:
        break;
    }
}

int ptx_exec_data(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    lanes_t *R = fr->R;
    uint64_t *D = in->d != PTX_NONE ? R[in->d] : NULL;
    const uint64_t *A = in->a != PTX_NONE ? R[in->a] : NULL;
    const uint64_t *B = in->b != PTX_NONE ? R[in->b] : NULL;
    const uint64_t *C = in->c != PTX_NONE ? R[in->c] : NULL;
    const uint64_t *E = in->e != PTX_NONE ? R[in->e] : NULL;
    int t = in->type;
    switch (ptx_route_of[in->op]) {
    case ROUTE_MOVE:
        exec_move(b, w, fr, in, m, D, A, B);
        return 0;
    case ROUTE_COMPARE:
        exec_compare(fr, in, m, D, A, B, C);
        return 0;
    case ROUTE_MEM:
        /* A shared access to the destination of a cp.async no wait has
         * completed fails the launch (ptx_exec_async.c). */
        if ((b->ncp || b->nbl || b->gdirty) && in->op != OP_ISSPACEP &&
            ptx_shared_access(b, in, A, (size_t)ptx_type_size(t) * in->vec, m))
            return E_FAIL;
        return ptx_exec_mem(b, w, fr, in, m);
    case ROUTE_ASYNC:
        return ptx_exec_async(b, w, fr, in, m);
    case ROUTE_PROXY_FENCE:
        ptx_proxy_fence(b);
        break;
    case ROUTE_MBAR:
        return ptx_exec_mbar(b, fr, in, m);
    case ROUTE_BULK:
        return ptx_exec_bulk(b, w, fr, in, m);
    case ROUTE_FENCE: {
        /* membar/fence: a locked read-modify-write is a full fence
         * (and one ThreadSanitizer understands). */
        static int fence_word;
        __atomic_fetch_add(&fence_word, 0, __ATOMIC_SEQ_CST);
        break;
    }
    case ROUTE_CLOCK: {
        uint64_t v = now_ns();
        FOR_LANES(m, D[l] = v);
        break;
    }
    case ROUTE_FLOAT:
        return ptx_exec_float(in, D, A, B, C, m);
    case ROUTE_ARITH:
        if (t == T_F32 || t == T_F64 || t == T_F16 || t == T_BF16 || t == T_F16X2 ||
            t == T_BF16X2)
            return ptx_exec_float(in, D, A, B, C, m);
        return ptx_exec_int(in, fr, D, A, B, C, E, m);
    default: /* ROUTE_NOTHING; the pc-moving routes never reach here (exec_control) */
        break;
    }
    return 0;
}
