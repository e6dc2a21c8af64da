/* SPIR-V loader: compile handlers for OpenCL.std (OpExtInst), barriers and
 * collectives (work-group and sub-group operations). */
#include "spv_load.h"

static int ext_supported(uint32_t e)
{
    static const unsigned ok[] = {
        SPV_CL_acos, SPV_CL_acosh, SPV_CL_asin, SPV_CL_asinh, SPV_CL_atan, SPV_CL_atan2,
        SPV_CL_atanh, SPV_CL_cbrt, SPV_CL_ceil, SPV_CL_copysign, SPV_CL_cos, SPV_CL_cosh,
        SPV_CL_erfc, SPV_CL_erf, SPV_CL_exp, SPV_CL_exp2, SPV_CL_exp10, SPV_CL_expm1, SPV_CL_fabs,
        SPV_CL_fdim, SPV_CL_floor, SPV_CL_fma, SPV_CL_fmax, SPV_CL_fmin, SPV_CL_fmod,
        SPV_CL_hypot, SPV_CL_ldexp, SPV_CL_log, SPV_CL_log2, SPV_CL_log10, SPV_CL_log1p, SPV_CL_logb,
        SPV_CL_mad, SPV_CL_nextafter, SPV_CL_pow,
        SPV_CL_pown, SPV_CL_powr, SPV_CL_remainder, SPV_CL_rint, SPV_CL_round, SPV_CL_rsqrt,
        SPV_CL_sin, SPV_CL_sinh, SPV_CL_sqrt, SPV_CL_tan, SPV_CL_tanh, SPV_CL_trunc,
        SPV_CL_tgamma, SPV_CL_lgamma, SPV_CL_sinpi, SPV_CL_cospi, SPV_CL_tanpi,
        SPV_CL_half_cos, SPV_CL_half_exp, SPV_CL_half_exp2, SPV_CL_half_exp10, SPV_CL_half_log,
        SPV_CL_half_log2, SPV_CL_half_powr, SPV_CL_half_recip, SPV_CL_half_rsqrt, SPV_CL_half_sin,
        SPV_CL_native_cos, SPV_CL_native_divide, SPV_CL_native_exp, SPV_CL_native_exp2,
        SPV_CL_native_exp10, SPV_CL_native_log, SPV_CL_native_log2, SPV_CL_native_log10,
        SPV_CL_native_powr, SPV_CL_native_recip, SPV_CL_native_rsqrt, SPV_CL_native_sin,
        SPV_CL_native_sqrt, SPV_CL_native_tan, SPV_CL_fclamp, SPV_CL_degrees, SPV_CL_fmax_common,
        SPV_CL_fmin_common, SPV_CL_mix, SPV_CL_radians, SPV_CL_step, SPV_CL_sign, SPV_CL_s_abs,
        SPV_CL_s_abs_diff, SPV_CL_s_add_sat, SPV_CL_u_add_sat, SPV_CL_s_hadd, SPV_CL_u_hadd,
        SPV_CL_s_rhadd, SPV_CL_u_rhadd, SPV_CL_s_clamp, SPV_CL_u_clamp, SPV_CL_clz, SPV_CL_ctz,
        SPV_CL_s_mad_hi, SPV_CL_s_max, SPV_CL_u_max, SPV_CL_s_min, SPV_CL_u_min, SPV_CL_s_mul_hi,
        SPV_CL_rotate, SPV_CL_s_sub_sat, SPV_CL_u_sub_sat, SPV_CL_popcount, SPV_CL_s_mad24,
        SPV_CL_u_mad24, SPV_CL_s_mul24, SPV_CL_u_mul24, SPV_CL_u_abs, SPV_CL_u_abs_diff,
        SPV_CL_u_mul_hi, SPV_CL_u_mad_hi,
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (ok[i] == e)
            return 1;
    return 0;
}

/* The ones that also store through a pointer, their last operand (ext_out). */
static int ext_stores(uint32_t e)
{
    return e == SPV_CL_frexp || e == SPV_CL_modf || e == SPV_CL_fract || e == SPV_CL_sincos ||
           e == SPV_CL_remquo || e == SPV_CL_lgamma_r;
}

static const char *cl_name(uint32_t e)
{
    const char *n = spv_cl_name(e);
    return n ? n : "instruction";
}

/* OpenCL.std on half values: the float math of ext_supported (numbers below
 * s_abs) runs on halves through double, rounded once to half (spv_math.c),
 * and the instructions that only move bits run as they do on any width;
 * anything else is refused, naming it (check_half calls this for an
 * OpExtInst with a half operand or result). */
void spvl_ext_half(loader *L, const fnctx *c)
{
    uint32_t e = word(L, c->at, 4);
    if (word(L, c->at, 3) != L->opencl_set)
        return; /* spvl_c_extinst refuses it */
    switch (e) {
    case SPV_CL_vloadn: case SPV_CL_vstoren: case SPV_CL_select: case SPV_CL_bitselect:
    case SPV_CL_shuffle: case SPV_CL_shuffle2:
        return;
    default:
        if (e < SPV_CL_s_abs && (ext_supported(e) || ext_stores(e)))
            return;
    }
    UNSUPPORTED("OpenCL.std %s (%u) on half (16-bit float) values is not supported by "
                "levelzero-sim", cl_name(e), e);
}

/* vloadn, vstoren, vload_half, vstore_half: pointer arithmetic, then a
 * checked load or store (halves converted, rte). */
static void ext_vload_store(loader *L, fnctx *c, uint32_t e)
{
    uint32_t at = c->at, d = c->d;
    int store = e == SPV_CL_vstoren || e == SPV_CL_vstore_half;
    uint32_t data = store ? word(L, at, 5) : 0;
    uint32_t off = word(L, at, store ? 6 : 5), ptr = word(L, at, store ? 7 : 6);
    ty *pt = type_of(L, value_type(L, ptr));
    if (pt->kind != T_PTR)
        MALFORMED("vload/vstore of a non-pointer");
    uint32_t elem = e >= SPV_CL_vload_half ? 2u : (uint32_t)type_of(L, pt->elem)->size;
    uint32_t vn = e == SPV_CL_vloadn ? word(L, at, 7) : store ? comps(L, value_type(L, data)) : 1;
    uint32_t t = spvl_new_slots(L, 1);
    spvl_emit(L, X_PTRADD, 1, (uint8_t)scalar(L, value_type(L, off))->width, t,
              spvl_slot(L, ptr), spvl_slot(L, off), elem * vn, 0);
    if (e == SPV_CL_vloadn)
        spvl_emit(L, X_LOAD, (uint8_t)vn, (uint8_t)elem, d, t, 0, 0, 1);
    else if (e == SPV_CL_vstoren)
        spvl_emit(L, X_STORE, (uint8_t)vn, (uint8_t)elem, 0, t, spvl_slot(L, data), 0, 1);
    else if (e == SPV_CL_vload_half)
        spvl_emit(L, X_LOADH, 1, (uint8_t)scalar(L, c->rt)->width, d, t, 0, 0, 0);
    else
        spvl_emit(L, X_STOREH, 1, (uint8_t)scalar(L, value_type(L, data))->width, 0, t,
                  spvl_slot(L, data), 0, 0);
}

/* bitselect, select: bitwise ops and selects. */
static void ext_select(loader *L, fnctx *c, uint32_t e)
{
    uint32_t at = c->at, d = c->d;
    uint32_t x = word(L, at, 5), y = word(L, at, 6), cond = word(L, at, 7);
    uint32_t sx = spvl_slot(L, x), sy = spvl_slot(L, y), sc = spvl_slot(L, cond);
    uint8_t cw = (uint8_t)scalar(L, value_type(L, cond))->width;
    int cvec = is_vec(L, cond);
    uint32_t t = spvl_new_slots(L, 1);
    uint32_t shift = e == SPV_CL_select && cvec ? spvl_const_slot(L, cw - 1u) : SPV_NONE;
    for (uint32_t k = 0; k < c->n; k++) {
        uint32_t ck = sc + (cvec ? k : 0);
        if (e == SPV_CL_bitselect) { /* x ^ ((x ^ y) & c) */
            spvl_emit(L, X_XOR, 1, 64, t, sx + k, sy + k, 0, 0);
            spvl_emit(L, X_AND, 1, 64, t, t, ck, 0, 0);
            spvl_emit(L, X_XOR, 1, 64, d + k, sx + k, t, 0, 0);
        } else if (cvec) { /* vectors test the sign bit */
            spvl_emit(L, X_SHRL, 1, cw, t, ck, shift, 0, 0);
            spvl_emit(L, X_SELECT, 1, 0, d + k, sy + k, sx + k, 0, t);
        } else {
            spvl_emit(L, X_SELECT, 1, 0, d + k, sy + k, sx + k, 0, ck);
        }
    }
}

/* shuffle(x, mask), shuffle2(x, y, mask): each result lane picks a lane of x
 * (or of x then y) by its mask lane, taken modulo the lanes it picks from
 * (OpenCL C: only the low bits count).  x and y are copied side by side so
 * one dynamic extract picks from both. */
static void ext_shuffle(loader *L, fnctx *c, uint32_t e)
{
    uint32_t x = word(L, c->at, 5), two = e == SPV_CL_shuffle2;
    uint32_t mask = word(L, c->at, 6 + two), xn = comps(L, value_type(L, x));
    uint32_t from = spvl_slot(L, x), m = spvl_slot(L, mask), total = xn << two;
    uint8_t mw = (uint8_t)scalar(L, value_type(L, mask))->width;
    if (two) {
        from = spvl_new_slots(L, total);
        spvl_emit(L, X_MOV, (uint8_t)xn, 0, from, spvl_slot(L, x), 0, 0, 0);
        spvl_emit(L, X_MOV, (uint8_t)xn, 0, from + xn, spvl_slot(L, word(L, c->at, 6)), 0, 0, 0);
    }
    uint32_t low = spvl_const_slot(L, total - 1u), t = spvl_new_slots(L, 1);
    for (uint32_t k = 0; k < c->n; k++) {
        spvl_emit(L, X_AND, 1, mw, t, m + k, low, 0, 0);
        spvl_emit(L, X_VEXTRACT, (uint8_t)total, mw, c->d + k, from, t, 0, 0);
    }
}

/* frexp, modf, fract, sincos (x, ptr) and remquo (x, y, ptr), lgamma_r (x,
 * ptr): one X_EXTOUT per component, its result to the result's slots and
 * what it stores to new ones, then one checked X_STORE of those through the
 * pointer (private, local, global or generic: a host address like any
 * other).  What is stored is OpenCL.std's type for the function, whatever
 * the pointer's pointee type says (llvm-spirv types pointers by their uses):
 * a 32-bit int per component for frexp, remquo and lgamma_r, a value of the
 * result's width for modf, fract and sincos. */
static void ext_out(loader *L, fnctx *c, uint32_t e)
{
    uint32_t two = e == SPV_CL_remquo;
    if (c->cnt - 5 != 2 + two)
        MALFORMED("OpenCL.std %s (%u) takes %u operands", cl_name(e), e, 2 + two);
    uint32_t x = word(L, c->at, 5), y = two ? word(L, c->at, 6) : SPV_NONE;
    uint32_t ptr = word(L, c->at, 6 + two);
    if (type_of(L, value_type(L, ptr))->kind != T_PTR)
        MALFORMED("OpenCL.std %s (%u): its last operand is not a pointer", cl_name(e), e);
    ty *rs = scalar(L, c->rt);
    if (rs->kind != T_FLOAT)
        MALFORMED("OpenCL.std %s (%u) of a non-float type", cl_name(e), e);
    uint8_t w = (uint8_t)rs->width;
    int int_out = e == SPV_CL_frexp || e == SPV_CL_remquo || e == SPV_CL_lgamma_r;
    uint32_t sx = spvl_slot(L, x), sy = two ? spvl_slot(L, y) : SPV_NONE;
    int xv = is_vec(L, x), yv = two && is_vec(L, y);
    uint32_t o = spvl_new_slots(L, c->n);
    for (uint32_t k = 0; k < c->n; k++)
        spvl_emit(L, X_EXTOUT, 1, w, c->d + k, sx + (xv ? k : 0),
                  sy == SPV_NONE ? sy : sy + (yv ? k : 0), e, o + k);
    spvl_emit(L, X_STORE, (uint8_t)c->n, (uint8_t)(int_out ? 4 : w / 8), 0, spvl_slot(L, ptr), o,
              0, 0);
}

/* The rest: component-wise, one X_EXT per component (a, b, e: operands;
 * c: the instruction; w: the width it computes in). */
static void ext_map(loader *L, fnctx *c, uint32_t e)
{
    uint32_t nargs = c->cnt - 5;
    uint32_t ops[3] = {SPV_NONE, SPV_NONE, SPV_NONE};
    int vec[3] = {0, 0, 0};
    if (nargs > 3)
        UNSUPPORTED("OpenCL.std %s (%u) with %u operands", cl_name(e), e, nargs);
    uint8_t w = 0;
    for (uint32_t i = 0; i < nargs; i++) {
        uint32_t o = L->w[c->at + 5 + i];
        ty *ot = type_of(L, value_type(L, o));
        if (ot->kind == T_PTR)
            UNSUPPORTED("OpenCL.std %s (%u) takes a pointer", cl_name(e), e);
        ops[i] = spvl_slot(L, o);
        vec[i] = ot->kind == T_VEC;
        if (i == 0)
            w = (uint8_t)scalar(L, value_type(L, o))->width;
    }
    if (!w)
        w = (uint8_t)scalar(L, c->rt)->width;
    ty *rs = scalar(L, c->rt);
    if (rs->kind == T_INT && e >= SPV_CL_s_abs)
        w = (uint8_t)rs->width;
    for (uint32_t k = 0; k < c->n; k++)
        spvl_emit(L, X_EXT, 1, w, c->d + k,
                  ops[0] == SPV_NONE ? ops[0] : ops[0] + (vec[0] ? k : 0),
                  ops[1] == SPV_NONE ? ops[1] : ops[1] + (vec[1] ? k : 0), e,
                  ops[2] == SPV_NONE ? ops[2] : ops[2] + (vec[2] ? k : 0));
}

void spvl_c_extinst(loader *L, fnctx *c)
{
    if (word(L, c->at, 3) != L->opencl_set)
        UNSUPPORTED("extended instruction set %u is not OpenCL.std", word(L, c->at, 3));
    uint32_t e = word(L, c->at, 4);
    if (e == SPV_CL_printf)
        UNSUPPORTED("printf is not supported");
    if (e == SPV_CL_vloadn || e == SPV_CL_vstoren || e == SPV_CL_vload_half || e == SPV_CL_vstore_half)
        ext_vload_store(L, c, e);
    else if (e == SPV_CL_bitselect || e == SPV_CL_select)
        ext_select(L, c, e);
    else if (e == SPV_CL_shuffle || e == SPV_CL_shuffle2)
        ext_shuffle(L, c, e);
    else if (ext_stores(e))
        ext_out(L, c, e);
    else if (!ext_supported(e))
        UNSUPPORTED("OpenCL.std %s (%u) is not supported", cl_name(e), e);
    else
        ext_map(L, c, e);
}

void spvl_c_barrier(loader *L, fnctx *c)
{
    uint64_t s = spvl_const_value(L, word(L, c->at, 1), "a barrier's execution scope");
    if (s == SPV_Scope_Workgroup)
        spvl_emit(L, X_BARRIER, 1, 0, 0, 0, 0, 0, 0);
    else if (s == SPV_Scope_Subgroup) /* a sub-group barrier: a collective that computes nothing */
        spvl_emit(L, X_COLL, 1, 0, SPV_NONE, SPV_NONE, SPV_NONE, C_ELECT, C_NON_UNIFORM | 0x400u);
    else
        UNSUPPORTED("barriers need Workgroup or Subgroup execution scope");
}

/* ------------------------------------------------------------ collectives */

static uint32_t group_scope(loader *L, uint32_t scope_id)
{
    uint64_t s = spvl_const_value(L, scope_id, "the execution scope of a group operation");
    if (s == SPV_Scope_Subgroup)
        return 0;
    if (s == SPV_Scope_Workgroup)
        return C_SCOPE_WORKGROUP;
    UNSUPPORTED("group operations need Subgroup or Workgroup scope (got scope %llu)",
                (unsigned long long)s);
}


/* What every collective starts with: its result slot, the scalar-only check,
 * and its scope flags (the Intel shuffles have no scope operand). */
static uint32_t group_begin(loader *L, fnctx *c, int scoped, uint32_t *flags)
{
    uint32_t rt = word(L, c->at, 1), rid = word(L, c->at, 2);
    uint32_t d = spvl_slot(L, rid);
    int intel = c->info->fn == F_INTELSHUFFLE || c->info->fn == F_INTELSHUFFLEREL;
    if (comps(L, rt) != 1 && c->info->code != C_BALLOT && !intel)
        UNSUPPORTED("vector operands of group operations are not supported");
    *flags = scoped ? group_scope(L, word(L, c->at, 3)) : 0;
    if (c->info->flags & OPF_NU) {
        *flags |= C_NON_UNIFORM;
        if (*flags & C_SCOPE_WORKGROUP)
            UNSUPPORTED("non-uniform group operations need Subgroup scope");
    }
    return d;
}

static void group_emit(loader *L, fnctx *c, uint32_t d, uint32_t a, uint32_t b, uint32_t bw,
                       uint32_t flags)
{
    uint32_t w = scalar(L, word(L, c->at, 1))->width;
    spvl_emit(L, X_COLL, (uint8_t)bw, (uint8_t)w, d, a, b, c->info->code, flags);
}

/* Reductions and scans: OpGroupIAdd ... OpGroupSMax and the non-uniform
 * arithmetic, bitwise and logical ones. */
void spvl_c_groupop(loader *L, fnctx *c)
{
    uint32_t flags;
    uint32_t d = group_begin(L, c, 1, &flags);
    uint32_t gop = word(L, c->at, 4);
    if ((c->info->flags & OPF_NU) && op_count(L, c->at) > 6)
        UNSUPPORTED("clustered sub-group reductions are not supported");
    uint32_t a = spvl_slot(L, word(L, c->at, 5));
    if (gop > SPV_GroupOperation_ExclusiveScan)
        UNSUPPORTED("group operation %u is not supported (Reduce, InclusiveScan and "
                    "ExclusiveScan are)", gop);
    group_emit(L, c, d, a, SPV_NONE, 1, flags | gop);
}

/* One value: all, any, broadcast-first, ballot. */
void spvl_c_groupvalue(loader *L, fnctx *c)
{
    uint32_t flags;
    uint32_t d = group_begin(L, c, 1, &flags);
    if (c->info->code == C_BALLOT && comps(L, word(L, c->at, 1)) != 4)
        MALFORMED("ballot result must be a 4-component vector");
    group_emit(L, c, d, spvl_slot(L, word(L, c->at, 4)), SPV_NONE, 1, flags);
}

/* A value and a work-item: broadcasts and shuffles.  OpGroupBroadcast may
 * name the work-item by its (vector) local id. */
void spvl_c_grouppair(loader *L, fnctx *c)
{
    uint32_t flags;
    uint32_t d = group_begin(L, c, 1, &flags);
    uint32_t a = spvl_slot(L, word(L, c->at, 4));
    uint32_t lid = word(L, c->at, 5);
    uint32_t b = spvl_slot(L, lid);
    uint32_t bw = c->info->flags & OPF_NU ? 1 : comps(L, value_type(L, lid));
    group_emit(L, c, d, a, b, bw, flags);
}

void spvl_c_groupelect(loader *L, fnctx *c)
{
    uint32_t flags;
    uint32_t d = group_begin(L, c, 1, &flags);
    group_emit(L, c, d, SPV_NONE, SPV_NONE, 1, flags);
}

/* Intel sub-group shuffles (always sub-group scope, no scope operand).  A
 * vector (SPV_INTEL_subgroups: Data a scalar or vector) shuffles each of its
 * components by the one index, so X_COLL's n is its components. */
void spvl_c_intelshuffle(loader *L, fnctx *c)
{
    uint32_t flags;
    uint32_t d = group_begin(L, c, 0, &flags);
    uint32_t a = spvl_slot(L, word(L, c->at, 3));
    group_emit(L, c, d, a, spvl_slot(L, word(L, c->at, 4)), comps(L, word(L, c->at, 1)), flags);
}

/* The Intel shuffles up and down: the second data operand and the delta go
 * into aux. */
void spvl_c_intelshufflerel(loader *L, fnctx *c)
{
    uint32_t flags;
    uint32_t d = group_begin(L, c, 0, &flags);
    uint32_t a = spvl_slot(L, word(L, c->at, 3));
    uint32_t b = spvl_aux_push(L, spvl_slot(L, word(L, c->at, 4)));
    spvl_aux_push(L, spvl_slot(L, word(L, c->at, 5)));
    group_emit(L, c, d, a, b, comps(L, word(L, c->at, 1)), flags);
}
