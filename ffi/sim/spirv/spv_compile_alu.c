/* SPIR-V loader: compile handlers for values: copies, bitcasts, conversions,
 * integer, float and logical arithmetic, comparisons, and vectors.  Each
 * row's X_* op comes from spv_opcodes.def (its code column). */
#include "spv_load.h"

/* Each float operation at each width: its f16, f32 and f64 X_* ops. */
static const uint16_t k_float_ops[][3] = {
    {X_FADD16, X_FADD32, X_FADD64}, {X_FSUB16, X_FSUB32, X_FSUB64},
    {X_FMUL16, X_FMUL32, X_FMUL64}, {X_FDIV16, X_FDIV32, X_FDIV64},
    {X_FREM16, X_FREM32, X_FREM64}, {X_FMOD16, X_FMOD32, X_FMOD64},
    {X_FNEG16, X_FNEG32, X_FNEG64},
};

uint16_t spvl_float_op(loader *L, uint16_t x32, uint32_t width)
{
    uint32_t col = width == 16 ? 0 : width == 32 ? 1 : width == 64 ? 2 : 3;
    if (col == 3)
        UNSUPPORTED("%u-bit float arithmetic is not supported", width);
    for (size_t i = 0; i < sizeof k_float_ops / sizeof k_float_ops[0]; i++)
        if (k_float_ops[i][1] == x32)
            return k_float_ops[i][col];
    UNSUPPORTED("internal: no float operation for code %u", x32);
}

void spvl_c_copy(loader *L, fnctx *c) /* copies and address-space casts */
{
    if (id(L, word(L, c->at, 3))->builtin) {
        spvl_builtin_cast(L, c);
        return;
    }
    spvl_emit(L, X_MOV, (uint8_t)c->n, 0, c->d, spvl_slot(L, word(L, c->at, 3)), 0, 0, 0);
}

/* A bitcast between vectors of other lane counts (the same bytes): the lanes
 * are laid out lowest first, as in memory.  A wider result lane gathers the
 * narrower source lanes (each masked to its width), a narrower one is its
 * source lane shifted down and truncated. */
static void bitcast_lanes(loader *L, fnctx *c, uint32_t s0, uint32_t sn, uint32_t ssz,
                          uint32_t dsz)
{
    uint32_t d = c->d, n = c->n, t = spvl_new_slots(L, 1);
    if (sn * ssz != n * dsz)
        MALFORMED("a bitcast between values of different sizes");
    if (dsz > ssz) {
        uint32_t per = dsz / ssz;
        for (uint32_t k = 0; k < n; k++)
            for (uint32_t i = 0; i < per; i++) {
                spvl_emit(L, X_UCONV, 1, (uint8_t)(ssz * 8), i ? t : d + k, s0 + k * per + i, 0, 64, 0);
                if (!i)
                    continue;
                spvl_emit(L, X_SHL, 1, 64, t, t, spvl_const_slot(L, i * ssz * 8), 0, 0);
                spvl_emit(L, X_OR, 1, 64, d + k, d + k, t, 0, 0);
            }
        return;
    }
    uint32_t per = ssz / dsz;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t from = s0 + k / per, shift = (k % per) * dsz * 8;
        if (shift) {
            spvl_emit(L, X_SHRL, 1, 64, t, from, spvl_const_slot(L, shift), 0, 0);
            from = t;
        }
        spvl_emit(L, X_UCONV, 1, (uint8_t)(dsz * 8), d + k, from, 0, 64, 0);
    }
}

void spvl_c_bitcast(loader *L, fnctx *c)
{
    uint32_t src = word(L, c->at, 3), d = c->d, n = c->n;
    if (id(L, src)->builtin) {
        spvl_builtin_cast(L, c);
        return;
    }
    uint32_t st = value_type(L, src);
    ty *a = scalar(L, c->rt), *b = scalar(L, st);
    if (comps(L, st) != n || a->size != b->size) {
        bitcast_lanes(L, c, spvl_slot(L, src), comps(L, st), b->size, a->size);
        return;
    }
    spvl_emit(L, X_MOV, (uint8_t)n, 0, d, spvl_slot(L, src), 0, 0, 0);
}

void spvl_c_convert(loader *L, fnctx *c)
{
    uint32_t rt = word(L, c->at, 1), rid = word(L, c->at, 2), src = word(L, c->at, 3);
    uint32_t n = comps(L, rt);
    uint32_t d = spvl_slot(L, rid), a = spvl_slot(L, src);
    ty *dt = scalar(L, rt), *st = scalar(L, value_type(L, src));
    uint8_t dw = (uint8_t)dt->width, sw = (uint8_t)(st->width);
    uint16_t x = (uint16_t)c->info->code;
    uint32_t e = 0;
    const idrec *r = c->r;
    switch (x) {
    case X_FTOU: case X_FTOS: e = r->round | (uint32_t)r->sat << 8; break;
    case X_UCONV: case X_SCONV:
        /* 1: clamps to the destination's range; 2: and changes signedness */
        e = c->op == SPV_OpSatConvertSToU || c->op == SPV_OpSatConvertUToS ? 2 : r->sat;
        if (c->op == SPV_OpConvertPtrToU)
            sw = 64;
        if (c->op == SPV_OpConvertUToPtr)
            dw = 64;
        break;
    default: /* X_STOF, X_UTOF, X_FCONV: 1 + FPRoundingMode, or 0 (rte) */
        if (r->round > 1 + SPV_FPRoundingMode_RTN)
            UNSUPPORTED("FPRoundingMode %u", r->round - 1u);
        e = r->round;
    }
    for (uint32_t k = 0; k < n; k++)
        spvl_emit(L, x, 1, dw, d + k, a + k, 0, sw, e);
}

void spvl_c_iunary(loader *L, fnctx *c) /* SNegate, Not, LogicalNot */
{
    uint8_t w = (uint8_t)scalar(L, c->rt)->width;
    spvl_emit_map(L, (uint16_t)c->info->code, c->n, w, c->d, spvl_slot(L, word(L, c->at, 3)),
                  SPV_NONE, 0, SPV_NONE, 1, 0, 0);
}

void spvl_c_funary(loader *L, fnctx *c)
{
    uint8_t w = (uint8_t)scalar(L, c->rt)->width;
    spvl_emit_map(L, spvl_float_op(L, (uint16_t)c->info->code, w), c->n, w, c->d,
                  spvl_slot(L, word(L, c->at, 3)), SPV_NONE, 0, SPV_NONE, 1, 0, 0);
}

/* A component-wise operation of two operands, either of which may be a
 * scalar used for every component (OpVectorTimesScalar). */
static void binary(loader *L, fnctx *c, uint16_t x, uint8_t w, uint32_t cc)
{
    uint32_t a = word(L, c->at, 3), b = word(L, c->at, 4);
    spvl_emit_map(L, x, c->n, w, c->d, spvl_slot(L, a), spvl_slot(L, b), cc, SPV_NONE,
                  is_vec(L, a), is_vec(L, b), 0);
}

void spvl_c_ibinary(loader *L, fnctx *c)
{
    uint16_t x = (uint16_t)c->info->code;
    ty *s = scalar(L, c->rt);
    if (s->kind == T_BOOL) /* OpenCL's bitwise ops on booleans */
        x = x == X_AND ? X_LAND : x == X_OR ? X_LOR : x == X_XOR ? X_LNE : x;
    binary(L, c, x, (uint8_t)s->width, 0);
}

void spvl_c_fbinary(loader *L, fnctx *c)
{
    uint8_t w = (uint8_t)scalar(L, c->rt)->width;
    binary(L, c, spvl_float_op(L, (uint16_t)c->info->code, w), w, 0);
}

/* Integer and logical comparisons; float ones keep their opcode as the predicate. */
void spvl_c_compare(loader *L, fnctx *c)
{
    uint8_t w = (uint8_t)scalar(L, value_type(L, word(L, c->at, 3)))->width;
    binary(L, c, (uint16_t)c->info->code, w, 0);
}

void spvl_c_fcompare(loader *L, fnctx *c)
{
    uint8_t w = (uint8_t)scalar(L, value_type(L, word(L, c->at, 3)))->width;
    binary(L, c, X_FCMP, w, c->op);
}

void spvl_c_fclass(loader *L, fnctx *c)
{
    uint32_t a = word(L, c->at, 3);
    uint8_t w = (uint8_t)scalar(L, value_type(L, a))->width;
    spvl_emit_map(L, X_FCLASS, c->n, w, c->d, spvl_slot(L, a), SPV_NONE, c->op, SPV_NONE, 1, 0, 0);
}

/* OpBitCount, OpBitReverse: as OpenCL.std popcount and a private code. */
void spvl_c_bits(loader *L, fnctx *c)
{
    uint32_t a = word(L, c->at, 3);
    uint8_t w = (uint8_t)scalar(L, value_type(L, a))->width;
    spvl_emit_map(L, X_EXT, c->n, w, c->d, spvl_slot(L, a), SPV_NONE, c->info->code, SPV_NONE, 1,
                  0, 0);
}

void spvl_c_dot(loader *L, fnctx *c) /* a0*b0 + a1*b1 + ... in order */
{
    uint32_t a = word(L, c->at, 3), b = word(L, c->at, 4), d = c->d;
    uint32_t an = comps(L, value_type(L, a));
    uint8_t w = (uint8_t)scalar(L, c->rt)->width;
    uint32_t sa = spvl_slot(L, a), sb = spvl_slot(L, b), t = spvl_new_slots(L, 1);
    spvl_emit(L, spvl_float_op(L, X_FMUL32, w), 1, w, d, sa, sb, 0, 0);
    for (uint32_t k = 1; k < an; k++) {
        spvl_emit(L, spvl_float_op(L, X_FMUL32, w), 1, w, t, sa + k, sb + k, 0, 0);
        spvl_emit(L, spvl_float_op(L, X_FADD32, w), 1, w, d, d, t, 0, 0);
    }
}

void spvl_c_anyall(loader *L, fnctx *c)
{
    uint32_t a = word(L, c->at, 3);
    uint32_t an = comps(L, value_type(L, a)), s = spvl_slot(L, a);
    spvl_emit(L, X_MOV, 1, 0, c->d, s, 0, 0, 0);
    for (uint32_t k = 1; k < an; k++)
        spvl_emit(L, (uint16_t)c->info->code, 1, 1, c->d, c->d, s + k, 0, 0);
}

void spvl_c_select(loader *L, fnctx *c)
{
    uint32_t cond = word(L, c->at, 3), a = word(L, c->at, 4), b = word(L, c->at, 5);
    spvl_emit_map(L, X_SELECT, c->n, 0, c->d, spvl_slot(L, a), spvl_slot(L, b), 0,
                  spvl_slot(L, cond), 1, 1, is_vec(L, cond));
}

void spvl_c_vextract(loader *L, fnctx *c)
{
    uint32_t v = word(L, c->at, 3), i = word(L, c->at, 4);
    spvl_emit(L, X_VEXTRACT, (uint8_t)comps(L, value_type(L, v)),
              (uint8_t)scalar(L, value_type(L, i))->width, c->d, spvl_slot(L, v), spvl_slot(L, i),
              0, 0);
}

void spvl_c_vinsert(loader *L, fnctx *c)
{
    uint32_t v = word(L, c->at, 3), comp = word(L, c->at, 4), i = word(L, c->at, 5);
    spvl_emit(L, X_MOV, (uint8_t)c->n, 0, c->d, spvl_slot(L, v), 0, 0, 0);
    spvl_emit(L, X_VINSERT, (uint8_t)c->n, (uint8_t)scalar(L, value_type(L, i))->width, c->d,
              spvl_slot(L, comp), spvl_slot(L, i), 0, 0);
}

void spvl_c_vshuffle(loader *L, fnctx *c)
{
    uint32_t v1 = word(L, c->at, 3), v2 = word(L, c->at, 4);
    uint32_t n1 = comps(L, value_type(L, v1));
    uint32_t s1 = spvl_slot(L, v1), s2 = spvl_slot(L, v2);
    for (uint32_t k = 0; k < c->n; k++) {
        uint32_t sel = word(L, c->at, 5 + k);
        if (sel == 0xFFFFFFFFu)
            continue;
        spvl_emit(L, X_MOV, 1, 0, c->d + k, sel < n1 ? s1 + sel : s2 + sel - n1, 0, 0, 0);
    }
}

/* Vectors, structs and arrays alike: the parts' slots one after another
 * (comps: a struct's or array's slots are its leaves', in order). */
void spvl_c_construct(loader *L, fnctx *c)
{
    uint32_t k = 0;
    for (uint32_t i = 3; i < c->cnt; i++) {
        uint32_t part = L->w[c->at + i];
        uint32_t cn = comps(L, value_type(L, part));
        spvl_emit(L, X_MOV, (uint8_t)cn, 0, c->d + k, spvl_slot(L, part), 0, 0, 0);
        k += cn;
    }
}

/* The first slot, within a value of type t, of the part that the literal
 * indexes at words [from, c->cnt) select. */
static uint32_t part_slot(loader *L, const fnctx *c, uint32_t t, uint32_t from)
{
    uint32_t off = 0;
    for (uint32_t i = from; i < c->cnt; i++) {
        uint32_t k = L->w[c->at + i];
        ty *y = type_of(L, t);
        if (y->kind != T_STRUCT && y->kind != T_ARRAY && y->kind != T_VEC)
            MALFORMED("composite index %u into a scalar", k);
        if (k >= y->n)
            MALFORMED("composite index %u out of range (%u)", k, y->n);
        if (y->kind == T_STRUCT) {
            for (uint32_t m = 0; m < k; m++)
                off += comps(L, member_type(L, y, m));
            t = member_type(L, y, k);
        } else {
            t = y->elem;
            off += k * comps(L, t);
        }
    }
    return off;
}

void spvl_c_extract(loader *L, fnctx *c)
{
    uint32_t v = word(L, c->at, 3);
    uint32_t off = part_slot(L, c, value_type(L, v), 4);
    spvl_emit(L, X_MOV, (uint8_t)c->n, 0, c->d, spvl_slot(L, v) + off, 0, 0, 0);
}

void spvl_c_insert(loader *L, fnctx *c)
{
    uint32_t obj = word(L, c->at, 3), v = word(L, c->at, 4);
    uint32_t off = part_slot(L, c, c->rt, 5);
    spvl_emit(L, X_MOV, (uint8_t)c->n, 0, c->d, spvl_slot(L, v), 0, 0, 0);
    spvl_emit(L, X_MOV, (uint8_t)comps(L, value_type(L, obj)), 0, c->d + off, spvl_slot(L, obj),
              0, 0, 0);
}

void spvl_c_undef(loader *L, fnctx *c) /* OpUndef inside a function: zero */
{
    for (uint32_t k = 0; k < c->n; k++)
        spvl_emit(L, X_MOV, 1, 0, c->d + k, spvl_const_slot(L, 0), 0, 0, 0);
}
