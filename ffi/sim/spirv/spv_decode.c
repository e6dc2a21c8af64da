/* SPIR-V loader: failing with a message, and the module's types and
 * constants. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spv_load.h"

void spvl_fail(loader *L, spv_load_status st, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (L->err && L->errlen) {
        if (L->pos && L->pos < L->nw) {
            char buf[32];
            unsigned op = L->w[L->pos] & 0xFFFFu;
            snprintf(L->err, L->errlen, "%s (%s at word %u)", msg, spv_opname(op, buf, sizeof buf),
                     L->pos);
        } else {
            snprintf(L->err, L->errlen, "%s", msg);
        }
    }
    L->status = st;
    longjmp(L->fail, 1);
}

void *spvl_grow(loader *L, void *p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    uint32_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, (size_t)c * elem);
    if (!q)
        spvl_fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    *cap = c;
    return q;
}

const char *spvl_string_at(loader *L, uint32_t pos, uint32_t first, uint32_t *next)
{
    uint32_t count = op_count(L, pos);
    const char *s = (const char *)&L->w[pos + first];
    size_t maxlen = (size_t)(count - first) * 4;
    size_t len = strnlen(s, maxlen);
    if (len == maxlen)
        MALFORMED("string operand is not terminated");
    if (next)
        *next = first + (uint32_t)(len / 4 + 1);
    return s;
}

/* ---------------------------------------------------------------- types */

static void layout_struct(loader *L, uint32_t tid)
{
    ty *y = &L->types[tid];
    uint32_t pos = y->pos;
    uint64_t off = 0, align = 1;
    y->offsets = calloc(y->n ? y->n : 1, sizeof *y->offsets);
    if (!y->offsets)
        spvl_fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    for (uint32_t i = 0; i < y->n; i++) {
        ty *m = type_of(L, L->w[pos + 2 + i]);
        if (!m->size)
            UNSUPPORTED("struct member %u has no size", i);
        uint64_t a = y->packed ? 1 : m->align;
        off = (off + a - 1) / a * a;
        y->offsets[i] = off;
        off += m->size;
        if (a > align)
            align = a;
    }
    y->align = align;
    y->size = (off + align - 1) / align * align;
}

void spvl_define_type(loader *L, uint32_t pos, unsigned op)
{
    uint32_t rid = word(L, pos, 1);
    idrec *r = id(L, rid);
    r->kind = K_TYPE;
    r->pos = pos;
    ty *y = &L->types[rid];
    memset(y, 0, sizeof *y);
    y->pos = pos;
    y->packed = r->packed;
    switch (op) {
    case SPV_OpTypeVoid: y->kind = T_VOID; break;
    case SPV_OpTypeBool: y->kind = T_BOOL; y->width = 1; break;
    case SPV_OpTypeInt:
        y->kind = T_INT;
        y->width = word(L, pos, 2);
        if (y->width != 8 && y->width != 16 && y->width != 32 && y->width != 64)
            UNSUPPORTED("%u-bit integers are not supported", y->width);
        y->size = y->align = y->width / 8;
        break;
    case SPV_OpTypeFloat:
        y->kind = T_FLOAT;
        y->width = word(L, pos, 2);
        /* half only as the pointee of vload_half/vstore_half pointers: values
         * of it need the Float16 capability, which is refused. */
        if (y->width != 16 && y->width != 32 && y->width != 64)
            UNSUPPORTED("%u-bit floats are not supported", y->width);
        y->size = y->align = y->width / 8;
        break;
    case SPV_OpTypeVector: {
        y->kind = T_VEC;
        y->elem = word(L, pos, 2);
        y->n = word(L, pos, 3);
        ty *e = type_of(L, y->elem);
        if (e->kind != T_INT && e->kind != T_FLOAT && e->kind != T_BOOL)
            UNSUPPORTED("vectors of this element type are not supported");
        if (y->n < 2 || y->n > 16)
            MALFORMED("vector of %u components", y->n);
        y->size = y->align = (y->n == 3 ? 4 : y->n) * e->size;
        break;
    }
    case SPV_OpTypeArray: {
        y->kind = T_ARRAY;
        y->elem = word(L, pos, 2);
        idrec *len = id(L, word(L, pos, 3));
        if (len->kind != K_CONST)
            UNSUPPORTED("array lengths must be constants");
        y->n = (uint32_t)L->cvals[len->cidx];
        ty *e = type_of(L, y->elem);
        y->size = (uint64_t)y->n * e->size;
        y->align = e->align ? e->align : 1;
        break;
    }
    case SPV_OpTypeStruct:
        y->kind = T_STRUCT;
        y->n = op_count(L, pos) - 2;
        layout_struct(L, rid);
        break;
    case SPV_OpTypeOpaque: y->kind = T_OPAQUE; break;
    case SPV_OpTypePointer:
        y->kind = T_PTR;
        y->storage = word(L, pos, 2);
        y->elem = word(L, pos, 3);
        y->size = y->align = 8;
        break;
    case SPV_OpTypeFunction: y->kind = T_FUNC; break;
    case SPV_OpTypeEvent: y->kind = T_OPAQUE; break; /* events: only as the unused result of async copies */
    default:
        UNSUPPORTED("this type is not supported (images, samplers, pipes, queues and matrices "
                    "are outside the OpenCL subset the sim runs)");
    }
}

/* ------------------------------------------------------------ constants */

static uint32_t push_cvals(loader *L, uint32_t n)
{
    L->cvals = spvl_grow(L, L->cvals, &L->capcvals, L->ncvals + n, sizeof *L->cvals);
    uint32_t at = L->ncvals;
    memset(&L->cvals[at], 0, n * sizeof *L->cvals);
    L->ncvals += n;
    return at;
}


uint32_t spvl_aggregate_slots(loader *L, uint32_t t)
{
    ty *y = type_of(L, t);
    uint64_t n = 0;
    if (y->kind == T_ARRAY) {
        uint32_t e = spvl_aggregate_slots(L, y->elem);
        n = e == SPV_NONE ? UINT64_MAX : (uint64_t)e * y->n;
    } else if (y->kind == T_STRUCT) {
        for (uint32_t k = 0; k < y->n && n <= SPV_MAX_AGGREGATE_SLOTS; k++) {
            uint32_t m = spvl_aggregate_slots(L, member_type(L, y, k));
            n = m == SPV_NONE ? UINT64_MAX : n + m;
        }
    } else {
        n = y->kind == T_VEC ? y->n : y->kind == T_VOID ? 0 : 1;
    }
    return n > SPV_MAX_AGGREGATE_SLOTS ? SPV_NONE : (uint32_t)n;
}

void spvl_define_constant(loader *L, uint32_t pos, unsigned op)
{
    uint32_t rt = word(L, pos, 1), rid = word(L, pos, 2);
    idrec *r = id(L, rid);
    r->kind = K_CONST;
    r->type = rt;
    r->pos = pos;
    ty *y = type_of(L, rt);
    uint32_t n = spvl_aggregate_slots(L, rt);
    if (n == SPV_NONE) {
        /* A large aggregate only initializes variables (write_const). */
        r->cidx = SPV_NONE;
        return;
    }
    r->cidx = push_cvals(L, n ? n : 1);
    uint64_t *v = &L->cvals[r->cidx];
    switch (op) {
    case SPV_OpConstantTrue: case SPV_OpSpecConstantTrue: v[0] = 1; break;
    case SPV_OpConstantFalse: case SPV_OpSpecConstantFalse: v[0] = 0; break;
    case SPV_OpConstant: case SPV_OpSpecConstant:
        if (y->kind != T_INT && y->kind != T_FLOAT)
            MALFORMED("OpConstant of a non-scalar type");
        v[0] = word(L, pos, 3);
        if (y->width == 64)
            v[0] |= (uint64_t)word(L, pos, 4) << 32;
        v[0] &= sim_mask(y->width);
        break;
    case SPV_OpConstantNull: break; /* null: zeros */
    case SPV_OpConstantComposite: case SPV_OpSpecConstantComposite: {
        uint32_t k = 0;
        for (uint32_t i = 3; i < op_count(L, pos); i++) {
            idrec *c = id(L, L->w[pos + i]);
            if (c->kind != K_CONST && c->kind != K_UNDEF)
                MALFORMED("constant composite of a non-constant");
            uint32_t cn = c->kind == K_UNDEF ? comps(L, c->type) : comps(L, c->type);
            for (uint32_t j = 0; j < cn && k < n; j++, k++)
                L->cvals[r->cidx + k] = c->kind == K_UNDEF ? 0 : L->cvals[c->cidx + j];
        }
        break;
    }
    default:
        UNSUPPORTED("this constant instruction is not supported");
    }
}

void spvl_write_const(loader *L, uint32_t cid, uint8_t *dst)
{
    idrec *c = id(L, cid);
    if (c->kind == K_UNDEF)
        return;
    if (c->kind != K_CONST)
        UNSUPPORTED("variable initializers must be constants");
    unsigned op = L->w[c->pos] & 0xFFFFu;
    ty *y = type_of(L, c->type);
    if (op == SPV_OpConstantNull)
        return; /* null */
    if (y->kind == T_ARRAY || y->kind == T_STRUCT) {
        if (op != SPV_OpConstantComposite)
            UNSUPPORTED("aggregate initializers must be OpConstantComposite or OpConstantNull");
        for (uint32_t i = 3; i < op_count(L, c->pos); i++) {
            uint32_t k = i - 3;
            uint64_t off = y->kind == T_ARRAY ? k * type_of(L, y->elem)->size : y->offsets[k];
            spvl_write_const(L, L->w[c->pos + i], dst + off);
        }
        return;
    }
    ty *s = scalar(L, c->type);
    if (s->kind == T_BOOL)
        UNSUPPORTED("booleans cannot be stored in memory");
    uint32_t n = comps(L, c->type);
    for (uint32_t i = 0; i < n; i++)
        memcpy(dst + i * s->size, &L->cvals[c->cidx + i], s->size);
}
