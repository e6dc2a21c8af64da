/* SPIR-V loader: decodes a module, checks that it stays inside the subset
 * the interpreter runs, and compiles each function into the register form of
 * spv_internal.h.  Anything outside the subset is refused here, at module
 * creation, with the instruction's name and word offset: a kernel never runs
 * with a construct the executor would get wrong. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spv_internal.h"
#include "spv_names.h"

#define SPV_MAGIC 0x07230203u

enum { K_NONE, K_TYPE, K_CONST, K_VAR, K_FUNC, K_VALUE, K_LABEL, K_EXTSET, K_UNDEF, K_OTHER };
enum { T_VOID = 1, T_BOOL, T_INT, T_FLOAT, T_VEC, T_PTR, T_ARRAY, T_STRUCT, T_FUNC, T_OPAQUE };
enum { SC_UNIFORM_CONSTANT = 0, SC_INPUT = 1, SC_WORKGROUP = 4, SC_CROSS = 5, SC_FUNCTION = 7, SC_GENERIC = 8 };

typedef struct ty {
    uint8_t kind;
    uint8_t packed;
    uint32_t width;   /* bits: int, float */
    uint32_t n;       /* vector components, array length, struct members */
    uint32_t elem;    /* element/pointee type id */
    uint32_t storage; /* pointers */
    uint64_t size, align;
    uint32_t pos;     /* defining instruction (struct members, function params) */
    uint64_t *offsets; /* struct member offsets */
} ty;

typedef struct idrec {
    uint8_t kind;
    uint8_t builtin; /* 1 + B_* for builtin variables */
    uint8_t sat, round; /* decorations: SaturatedConversion, FPRoundingMode + 1 */
    uint8_t storage;
    uint8_t packed; /* CPacked (structs) */
    uint8_t promoted; /* a Function variable kept in slots (see promote_variables) */
    uint32_t type;
    uint32_t cidx;   /* constants: index into cvals; vars: offset; funcs: index; labels: pc */
    uint32_t pos;
    uint32_t slot, slot_fn;
} idrec;

typedef struct loader {
    const uint32_t *w;
    uint32_t nw;
    uint32_t bound;
    idrec *ids;
    ty *types;
    uint64_t *cvals;
    uint32_t ncvals, capcvals;
    spv_program *p;
    uint32_t capcode, cappool, capaux, capfix;
    uint32_t cur_fn; /* index + 1 while compiling */
    uint32_t nslots;
    int pass2; /* slots made now are part of the frame template */
    uint32_t pos; /* instruction being handled, for messages */
    uint32_t opencl_set;
    uint64_t globals_bytes;
    uint32_t *func_begin; /* word positions of OpFunction, per function */
    uint32_t nfuncs;
    spv_load_status status;
    char *err;
    size_t errlen;
    jmp_buf fail;
} loader;

__attribute__((noreturn, format(printf, 3, 4))) static void fail(loader *L, spv_load_status st,
                                                                 const char *fmt, ...)
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

#define MALFORMED(...) fail(L, SPV_LOAD_MALFORMED, __VA_ARGS__)
#define UNSUPPORTED(...) fail(L, SPV_LOAD_UNSUPPORTED, __VA_ARGS__)

static void *grow(loader *L, void *p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    uint32_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, (size_t)c * elem);
    if (!q)
        fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    *cap = c;
    return q;
}

/* ------------------------------------------------------------- decoding */

static uint32_t word(loader *L, uint32_t pos, uint32_t i)
{
    uint32_t count = L->w[pos] >> 16;
    if (i >= count)
        MALFORMED("instruction is missing operand %u", i);
    return L->w[pos + i];
}

static uint32_t op_count(loader *L, uint32_t pos) { return L->w[pos] >> 16; }

static idrec *id(loader *L, uint32_t v)
{
    if (v == 0 || v >= L->bound)
        MALFORMED("id %u is outside the module's bound %u", v, L->bound);
    return &L->ids[v];
}

static ty *type_of(loader *L, uint32_t t)
{
    idrec *r = id(L, t);
    if (r->kind != K_TYPE)
        MALFORMED("id %u is not a type", t);
    return &L->types[t];
}

/* Components of a value of type t (vectors: one slot each). */
static uint32_t comps(loader *L, uint32_t t)
{
    ty *y = type_of(L, t);
    switch (y->kind) {
    case T_BOOL: case T_INT: case T_FLOAT: case T_PTR: return 1;
    case T_VEC: return y->n;
    case T_VOID: return 0;
    default:
        UNSUPPORTED("values of aggregate type (id %u) are not supported; only scalars, vectors "
                    "and pointers", t);
    }
}

/* The scalar type of t (t itself, or a vector's element). */
static ty *scalar(loader *L, uint32_t t)
{
    ty *y = type_of(L, t);
    return y->kind == T_VEC ? type_of(L, y->elem) : y;
}

static const char *string_at(loader *L, uint32_t pos, uint32_t first, uint32_t *next)
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
        fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
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

static void define_type(loader *L, uint32_t pos, unsigned op)
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
    case 19: y->kind = T_VOID; break;
    case 20: y->kind = T_BOOL; y->width = 1; break;
    case 21:
        y->kind = T_INT;
        y->width = word(L, pos, 2);
        if (y->width != 8 && y->width != 16 && y->width != 32 && y->width != 64)
            UNSUPPORTED("%u-bit integers are not supported", y->width);
        y->size = y->align = y->width / 8;
        break;
    case 22:
        y->kind = T_FLOAT;
        y->width = word(L, pos, 2);
        /* half only as the pointee of vload_half/vstore_half pointers: values
         * of it need the Float16 capability, which is refused. */
        if (y->width != 16 && y->width != 32 && y->width != 64)
            UNSUPPORTED("%u-bit floats are not supported", y->width);
        y->size = y->align = y->width / 8;
        break;
    case 23: {
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
    case 28: {
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
    case 30:
        y->kind = T_STRUCT;
        y->n = op_count(L, pos) - 2;
        layout_struct(L, rid);
        break;
    case 31: y->kind = T_OPAQUE; break;
    case 32:
        y->kind = T_PTR;
        y->storage = word(L, pos, 2);
        y->elem = word(L, pos, 3);
        y->size = y->align = 8;
        break;
    case 33: y->kind = T_FUNC; break;
    case 34: y->kind = T_OPAQUE; break; /* events: only as the unused result of async copies */
    default:
        UNSUPPORTED("this type is not supported (images, samplers, pipes, queues and matrices "
                    "are outside the OpenCL subset the sim runs)");
    }
}

/* ------------------------------------------------------------ constants */

static uint32_t push_cvals(loader *L, uint32_t n)
{
    L->cvals = grow(L, L->cvals, &L->capcvals, L->ncvals + n, sizeof *L->cvals);
    uint32_t at = L->ncvals;
    memset(&L->cvals[at], 0, n * sizeof *L->cvals);
    L->ncvals += n;
    return at;
}

static uint64_t width_mask(uint32_t w) { return w >= 64 ? ~0ull : (1ull << w) - 1; }

static void define_constant(loader *L, uint32_t pos, unsigned op)
{
    uint32_t rt = word(L, pos, 1), rid = word(L, pos, 2);
    idrec *r = id(L, rid);
    r->kind = K_CONST;
    r->type = rt;
    r->pos = pos;
    ty *y = type_of(L, rt);
    if (y->kind == T_ARRAY || y->kind == T_STRUCT) {
        /* Aggregates only initialize variables (written by write_const). */
        r->cidx = SPV_NONE;
        return;
    }
    uint32_t n = comps(L, rt);
    r->cidx = push_cvals(L, n ? n : 1);
    uint64_t *v = &L->cvals[r->cidx];
    switch (op) {
    case 41: case 48: v[0] = 1; break;
    case 42: case 49: v[0] = 0; break;
    case 43: case 50:
        if (y->kind != T_INT && y->kind != T_FLOAT)
            MALFORMED("OpConstant of a non-scalar type");
        v[0] = word(L, pos, 3);
        if (y->width == 64)
            v[0] |= (uint64_t)word(L, pos, 4) << 32;
        v[0] &= width_mask(y->width);
        break;
    case 46: break; /* null: zeros */
    case 44: case 51: {
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

/* Writes constant c of type t at dst (variable initializers). */
static void write_const(loader *L, uint32_t cid, uint8_t *dst)
{
    idrec *c = id(L, cid);
    if (c->kind == K_UNDEF)
        return;
    if (c->kind != K_CONST)
        UNSUPPORTED("variable initializers must be constants");
    unsigned op = L->w[c->pos] & 0xFFFFu;
    ty *y = type_of(L, c->type);
    if (op == 46)
        return; /* null */
    if (y->kind == T_ARRAY || y->kind == T_STRUCT) {
        if (op != 44)
            UNSUPPORTED("aggregate initializers must be OpConstantComposite or OpConstantNull");
        for (uint32_t i = 3; i < op_count(L, c->pos); i++) {
            uint32_t k = i - 3;
            uint64_t off = y->kind == T_ARRAY ? k * type_of(L, y->elem)->size : y->offsets[k];
            write_const(L, L->w[c->pos + i], dst + off);
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

/* --------------------------------------------------------- emitting code */

static spv_ins *emit(loader *L, uint16_t op, uint8_t n, uint8_t w, uint32_t d, uint32_t a,
                     uint32_t b, uint32_t c, uint32_t e)
{
    spv_program *p = L->p;
    p->code = grow(L, p->code, &L->capcode, p->ncode + 1, sizeof *p->code);
    spv_ins *i = &p->code[p->ncode++];
    *i = (spv_ins){op, n, w, d, a, b, c, e};
    return i;
}

static uint32_t aux_push(loader *L, uint32_t v)
{
    spv_program *p = L->p;
    p->aux = grow(L, p->aux, &L->capaux, p->naux + 1, sizeof *p->aux);
    p->aux[p->naux] = v;
    return p->naux++;
}

static void add_fixup(loader *L, uint32_t slot, uint32_t kind, uint64_t off)
{
    spv_program *p = L->p;
    p->fixups = grow(L, p->fixups, &L->capfix, p->nfixups + 1, sizeof *p->fixups);
    p->fixups[p->nfixups++] = (spv_fixup){slot, kind, off};
    p->funcs[L->cur_fn - 1].nfix++;
}

/* Slots made while compiling the body (constants, variable addresses, phi
 * temporaries) extend the frame's template, which is copied in whole when a
 * frame is made: constants get their value, the rest zero. */
static uint32_t pool_slot(loader *L, uint64_t v)
{
    spv_program *p = L->p;
    p->pool = grow(L, p->pool, &L->cappool, p->npool + 1, sizeof *p->pool);
    p->pool[p->npool++] = v;
    p->funcs[L->cur_fn - 1].nconst++;
    return L->nslots++;
}

static uint32_t new_slots(loader *L, uint32_t n)
{
    if (n == 0)
        n = 1;
    if (L->pass2) {
        uint32_t s = pool_slot(L, 0);
        for (uint32_t i = 1; i < n; i++)
            pool_slot(L, 0);
        return s;
    }
    uint32_t s = L->nslots;
    L->nslots += n;
    return s;
}

/* A constant slot in the current function, filled from the template. */
static uint32_t const_slot(loader *L, uint64_t v) { return pool_slot(L, v); }

/* The slot holding the value of id v in the current function. */
static uint32_t slot(loader *L, uint32_t v)
{
    idrec *r = id(L, v);
    if (r->slot_fn == L->cur_fn)
        return r->slot;
    switch (r->kind) {
    case K_CONST:
    case K_UNDEF: {
        uint32_t n = comps(L, r->type);
        uint32_t s = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t k = const_slot(L, r->kind == K_UNDEF ? 0 : L->cvals[r->cidx + i]);
            if (i == 0)
                s = k;
        }
        r->slot = s;
        break;
    }
    case K_VAR:
        if (r->storage == SC_WORKGROUP) {
            r->slot = new_slots(L, 1);
            add_fixup(L, r->slot, 1, r->cidx);
        } else if (r->storage == SC_CROSS || r->storage == SC_UNIFORM_CONSTANT) {
            r->slot = const_slot(L, (uint64_t)(uintptr_t)(L->p->globals + r->cidx));
        } else {
            UNSUPPORTED("built-in variable %u is used other than by OpLoad", v);
        }
        break;
    case K_FUNC:
        UNSUPPORTED("function pointers are not supported");
    default:
        MALFORMED("id %u is used before it is defined", v);
    }
    r->slot_fn = L->cur_fn;
    return r->slot;
}

/* The constant value of id v (scopes, struct indices); must be a constant. */
static uint64_t const_value(loader *L, uint32_t v, const char *what)
{
    idrec *r = id(L, v);
    if (r->kind != K_CONST || r->cidx == SPV_NONE)
        UNSUPPORTED("%s must be a constant", what);
    return L->cvals[r->cidx];
}

/* ------------------------------------------------------------- compiling */

typedef struct pending {
    uint32_t at;    /* instruction index, or aux index when in_aux */
    uint8_t field;  /* 0 a, 1 b, 2 c */
    uint8_t in_aux;
    uint32_t from, to; /* labels */
} pending;

typedef struct fnstate {
    pending *pend;
    uint32_t npend, cappend;
} fnstate;

static void branch_to(loader *L, fnstate *fs, uint32_t at, uint8_t field, uint8_t in_aux,
                      uint32_t from, uint32_t to)
{
    idrec *t = id(L, to);
    if (t->kind != K_LABEL)
        MALFORMED("branch target %u is not a label", to);
    fs->pend = grow(L, fs->pend, &fs->cappend, fs->npend + 1, sizeof *fs->pend);
    fs->pend[fs->npend++] = (pending){at, field, in_aux, from, to};
}

static unsigned float_op(unsigned base32, uint32_t width) { return width == 64 ? base32 + 7 : base32; }

/* Emits a component-wise operation over n components. */
static void emit_map(loader *L, uint16_t xop, uint32_t n, uint8_t w, uint32_t d, uint32_t a,
                     uint32_t b, uint32_t c, uint32_t e, int a_vec, int b_vec, int e_vec)
{
    for (uint32_t k = 0; k < n; k++)
        emit(L, xop, 1, w, d + k, a == SPV_NONE ? a : a + (a_vec ? k : 0),
             b == SPV_NONE ? b : b + (b_vec ? k : 0), c, e == SPV_NONE ? e : e + (e_vec ? k : 0));
}

static int is_vec(loader *L, uint32_t v) { return type_of(L, id(L, v)->type)->kind == T_VEC; }

static uint32_t value_type(loader *L, uint32_t v) { return id(L, v)->type; }

static uint8_t builtin_of(unsigned b)
{
    switch (b) {
    case 24: return 1 + B_NUM_GROUPS;
    case 25: return 1 + B_GROUP_SIZE;
    case 26: return 1 + B_GROUP_ID;
    case 27: return 1 + B_LOCAL_ID;
    case 28: return 1 + B_GLOBAL_ID;
    case 29: return 1 + B_LOCAL_INDEX;
    case 30: return 1 + B_WORK_DIM;
    case 31: return 1 + B_GLOBAL_SIZE;
    case 32: return 1 + B_ENQUEUED_GROUP_SIZE;
    case 33: return 1 + B_GLOBAL_OFFSET;
    case 34: return 1 + B_GLOBAL_LINEAR_ID;
    case 36: return 1 + B_SUBGROUP_SIZE;
    case 37: return 1 + B_SUBGROUP_MAX_SIZE;
    case 38: return 1 + B_NUM_SUBGROUPS;
    case 39: return 1 + B_NUM_SUBGROUPS; /* enqueued: no non-uniform groups */
    case 40: return 1 + B_SUBGROUP_ID;
    case 41: return 1 + B_SUBGROUP_LOCAL_ID;
    default: return 0;
    }
}

/* OpenCL.std instructions the interpreter implements (X_EXT c). */
static int ext_supported(uint32_t e)
{
    static const unsigned ok[] = {
        0, 1, 3, 4, 6, 7, 8, 11, 12, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
        28, 29, 32, 37, 38, 39, 40, 42, 48, 49, 50, 51, 53, 55, 56, 57, 59, 61, 62, 63, 66,
        67, 69, 70, 71, 72, 73, 75, 76, 77, 78, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90,
        91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 103, 141, 142, 143, 144, 145, 146,
        147, 148, 149, 150, 151, 152, 153, 156, 157, 158, 159, 160, 161, 162, 163, 166,
        167, 168, 169, 170, 201, 202, 203, 204,
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (ok[i] == e)
            return 1;
    return 0;
}

static uint32_t group_scope(loader *L, uint32_t scope_id)
{
    uint64_t s = const_value(L, scope_id, "the execution scope of a group operation");
    if (s == 3)
        return 0;
    if (s == 2)
        return C_SCOPE_WORKGROUP;
    UNSUPPORTED("group operations need Subgroup or Workgroup scope (got scope %llu)",
                (unsigned long long)s);
}

static void compile_group(loader *L, uint32_t pos, unsigned op)
{
    uint32_t rt = word(L, pos, 1), rid = word(L, pos, 2);
    uint32_t d = slot(L, rid);
    if (comps(L, rt) != 1 && op != 339)
        UNSUPPORTED("vector operands of group operations are not supported");
    uint32_t flags = op >= 5571 ? 0 : group_scope(L, word(L, pos, 3));
    uint32_t kind = 0, a = SPV_NONE, b = SPV_NONE, gop = 0, bw = 1;
    ty *s = scalar(L, rt);
    uint32_t w = s->width;
    if (op >= 264 && op <= 271) { /* OpGroupIAdd ... OpGroupSMax */
        static const uint32_t kinds[] = {C_IADD, C_FADD, C_FMIN, C_UMIN, C_SMIN, C_FMAX, C_UMAX, C_SMAX};
        kind = kinds[op - 264];
        gop = word(L, pos, 4);
        a = slot(L, word(L, pos, 5));
    } else if (op == 261 || op == 262) {
        kind = op == 261 ? C_ALL : C_ANY;
        a = slot(L, word(L, pos, 4));
    } else if (op == 263) {
        kind = C_BROADCAST;
        a = slot(L, word(L, pos, 4));
        uint32_t lid = word(L, pos, 5);
        b = slot(L, lid);
        bw = comps(L, value_type(L, lid));
        w = s->width;
    } else if (op >= 333 && op <= 364) {
        flags |= C_NON_UNIFORM;
        if (flags & C_SCOPE_WORKGROUP)
            UNSUPPORTED("non-uniform group operations need Subgroup scope");
        switch (op) {
        case 333: kind = C_ELECT; break;
        case 334: kind = C_ALL; a = slot(L, word(L, pos, 4)); break;
        case 335: kind = C_ANY; a = slot(L, word(L, pos, 4)); break;
        case 337: kind = C_BROADCAST; a = slot(L, word(L, pos, 4)); b = slot(L, word(L, pos, 5)); break;
        case 338: kind = C_BROADCAST_FIRST; a = slot(L, word(L, pos, 4)); break;
        case 339:
            if (comps(L, rt) != 4)
                MALFORMED("ballot result must be a 4-component vector");
            kind = C_BALLOT;
            a = slot(L, word(L, pos, 4));
            break;
        case 345: kind = C_SHUFFLE; a = slot(L, word(L, pos, 4)); b = slot(L, word(L, pos, 5)); break;
        case 346: kind = C_SHUFFLE_XOR; a = slot(L, word(L, pos, 4)); b = slot(L, word(L, pos, 5)); break;
        case 347: kind = C_SHUFFLE_UP; a = slot(L, word(L, pos, 4)); b = slot(L, word(L, pos, 5)); break;
        case 348: kind = C_SHUFFLE_DOWN; a = slot(L, word(L, pos, 4)); b = slot(L, word(L, pos, 5)); break;
        default: {
            if (op < 349)
                UNSUPPORTED("this sub-group operation is not supported");
            static const uint32_t kinds[] = {C_IADD, C_FADD, C_IMUL, C_FMUL, C_SMIN, C_UMIN, C_FMIN,
                                             C_SMAX, C_UMAX, C_FMAX, C_AND, C_OR, C_XOR, C_LAND,
                                             C_LOR, C_LXOR};
            kind = kinds[op - 349];
            gop = word(L, pos, 4);
            if (op_count(L, pos) > 6)
                UNSUPPORTED("clustered sub-group reductions are not supported");
            a = slot(L, word(L, pos, 5));
        }
        }
    } else {
        /* Intel sub-group shuffles (always sub-group scope, no scope operand). */
        flags = 0;
        switch (op) {
        case 5571: kind = C_SHUFFLE; a = slot(L, word(L, pos, 3)); b = slot(L, word(L, pos, 4)); break;
        case 5574: kind = C_SHUFFLE_XOR; a = slot(L, word(L, pos, 3)); b = slot(L, word(L, pos, 4)); break;
        case 5572: case 5573:
            kind = op == 5572 ? C_INTEL_SHUFFLE_DOWN : C_INTEL_SHUFFLE_UP;
            a = slot(L, word(L, pos, 3));
            /* second data operand and delta: kept in aux */
            b = aux_push(L, slot(L, word(L, pos, 4)));
            aux_push(L, slot(L, word(L, pos, 5)));
            break;
        }
    }
    if (gop > 2)
        UNSUPPORTED("group operation %u is not supported (Reduce, InclusiveScan and "
                    "ExclusiveScan are)", gop);
    if (s->kind == T_FLOAT && s->width == 64 && (kind == C_FADD || kind == C_FMUL ||
                                                  kind == C_FMIN || kind == C_FMAX))
        w = 64;
    emit(L, X_COLL, (uint8_t)bw, (uint8_t)w, d, a, b, kind, flags | gop);
}

static void compile_atomic(loader *L, uint32_t pos, unsigned op)
{
    uint32_t rt = 0, rid = 0, ptr, value = SPV_NONE, cmp = SPV_NONE, kind;
    if (op == 228) { /* store: pointer, scope, semantics, value */
        ptr = word(L, pos, 1);
        value = slot(L, word(L, pos, 4));
        rt = value_type(L, word(L, pos, 4));
        kind = A_STORE;
    } else {
        rt = word(L, pos, 1);
        rid = word(L, pos, 2);
        ptr = word(L, pos, 3);
        switch (op) {
        case 227: kind = A_LOAD; break;
        case 229: kind = A_XCHG; value = slot(L, word(L, pos, 6)); break;
        case 230: case 231:
            kind = A_CMPXCHG;
            value = slot(L, word(L, pos, 7));
            cmp = slot(L, word(L, pos, 8));
            break;
        case 232: kind = A_INC; break;
        case 233: kind = A_DEC; break;
        default: {
            static const uint32_t kinds[] = {A_ADD, A_SUB, A_SMIN, A_UMIN, A_SMAX, A_UMAX, A_AND, A_OR, A_XOR};
            if (op >= 234 && op <= 242)
                kind = kinds[op - 234];
            else if (op == 6035)
                kind = A_FADD;
            else if (op == 5614)
                kind = A_FMIN;
            else
                kind = A_FMAX;
            value = slot(L, word(L, pos, 6));
        }
        }
    }
    ty *s = type_of(L, rt);
    if ((s->kind != T_INT && s->kind != T_FLOAT) || (s->width != 32 && s->width != 64))
        UNSUPPORTED("atomics need a 32- or 64-bit integer or float");
    if (s->kind == T_FLOAT && kind != A_LOAD && kind != A_STORE && kind != A_XCHG &&
        kind != A_FADD && kind != A_FMIN && kind != A_FMAX)
        UNSUPPORTED("this atomic operation needs an integer");
    emit(L, X_ATOMIC, 1, (uint8_t)s->width, rid ? slot(L, rid) : SPV_NONE, slot(L, ptr), value,
         kind, cmp);
}

/* Pointer arithmetic of the access-chain family. */
static void compile_access(loader *L, uint32_t pos, unsigned op)
{
    uint32_t rid = word(L, pos, 2), base = word(L, pos, 3);
    uint32_t d = slot(L, rid);
    ty *bt = type_of(L, value_type(L, base));
    if (bt->kind != T_PTR)
        MALFORMED("access chain base is not a pointer");
    uint32_t cur = bt->elem;
    int64_t off = 0;
    uint32_t src = slot(L, base);
    uint32_t count = op_count(L, pos);
    uint32_t i = 4;
    int first = 1;
    /* OpPtrAccessChain's element operand scales by the pointee's size. */
    int has_element = op == 67 || op == 70;
    for (; i < count; i++) {
        uint32_t idx = L->w[pos + i];
        uint64_t stride;
        uint32_t next;
        if (has_element && i == 4) {
            stride = type_of(L, cur)->size;
            next = cur;
        } else {
            ty *ct = type_of(L, cur);
            if (ct->kind == T_STRUCT) {
                uint64_t m = const_value(L, idx, "a struct member index");
                if (m >= ct->n)
                    MALFORMED("struct member index %llu out of range", (unsigned long long)m);
                off += (int64_t)ct->offsets[m];
                cur = L->w[ct->pos + 2 + m];
                continue;
            }
            if (ct->kind != T_ARRAY && ct->kind != T_VEC)
                MALFORMED("access chain indexes a scalar");
            next = ct->elem;
            stride = type_of(L, next)->size;
        }
        idrec *ir = id(L, idx);
        uint32_t iw = scalar(L, ir->type)->width;
        if (ir->kind == K_CONST) {
            uint64_t v = L->cvals[ir->cidx];
            int64_t sv = iw >= 64 ? (int64_t)v : (int64_t)(v << (64 - iw)) >> (64 - iw);
            off += sv * (int64_t)stride;
        } else {
            if (stride > 0xFFFFFFFFu)
                UNSUPPORTED("array stride too large");
            emit(L, X_PTRADD, 1, (uint8_t)iw, d, first ? src : d, slot(L, idx), (uint32_t)stride, 0);
            first = 0;
        }
        cur = next;
    }
    if (off < INT32_MIN || off > INT32_MAX)
        UNSUPPORTED("constant pointer offset too large");
    if (first || off)
        emit(L, X_ADDI, 1, 0, d, first ? src : d, 0, 0, (uint32_t)(int32_t)off);
}

static void compile_convert(loader *L, uint32_t pos, unsigned op, idrec *r)
{
    uint32_t rt = word(L, pos, 1), rid = word(L, pos, 2), src = word(L, pos, 3);
    uint32_t n = comps(L, rt);
    uint32_t d = slot(L, rid), a = slot(L, src);
    ty *dt = scalar(L, rt), *st = scalar(L, value_type(L, src));
    uint8_t dw = (uint8_t)dt->width, sw = (uint8_t)(st->width);
    uint16_t x;
    uint32_t e = 0;
    switch (op) {
    case 109: x = X_FTOU; e = r->round | (uint32_t)r->sat << 8; break;
    case 110: x = X_FTOS; e = r->round | (uint32_t)r->sat << 8; break;
    case 111: case 112:
        if (r->round > 1)
            UNSUPPORTED("integer-to-float conversions with a rounding mode other than rte");
        x = op == 111 ? X_STOF : X_UTOF;
        break;
    case 113: case 117: case 120:
        if (r->sat)
            UNSUPPORTED("saturating integer conversions are not supported");
        x = X_UCONV;
        if (op == 117) sw = 64;
        if (op == 120) dw = 64;
        break;
    case 114:
        if (r->sat)
            UNSUPPORTED("saturating integer conversions are not supported");
        x = X_SCONV;
        break;
    case 115:
        if (r->round > 1)
            UNSUPPORTED("float conversions with a rounding mode other than rte");
        x = X_FCONV;
        break;
    default: UNSUPPORTED("conversion not supported");
    }
    for (uint32_t k = 0; k < n; k++)
        emit(L, x, 1, dw, d + k, a + k, 0, sw, e);
}

static void promote_variables(loader *L, uint32_t body);

static void compile_function(loader *L, uint32_t fidx)
{
    spv_program *p = L->p;
    spv_func *f = &p->funcs[fidx];
    L->cur_fn = fidx + 1;
    L->nslots = 0;
    uint32_t pos = L->func_begin[fidx];
    f->code = p->ncode;
    f->templ = p->npool;
    f->fix = p->nfixups;
    f->ret_n = comps(L, word(L, pos, 1));
    fnstate fs = {0};

    /* Pass 1: a slot for every result (parameters first, in order). */
    uint32_t q = pos + op_count(L, pos);
    uint32_t body = 0;
    for (uint32_t at = q; at < L->nw; at += op_count(L, at)) {
        unsigned op = L->w[at] & 0xFFFFu;
        if (op != 55) {
            body = at;
            break;
        }
        uint32_t rid = word(L, at, 2);
        idrec *r = id(L, rid);
        r->kind = K_VALUE;
        r->type = word(L, at, 1);
        r->slot = new_slots(L, comps(L, r->type));
        r->slot_fn = L->cur_fn;
        f->nparams++;
    }
    if (!body || (L->w[body] & 0xFFFFu) == 56)
        MALFORMED("function without a body");
    promote_variables(L, body);
    f->param_slot = p->naux;
    {
        uint32_t at = q;
        for (uint32_t i = 0; i < f->nparams; i++, at += op_count(L, at))
            aux_push(L, comps(L, word(L, at, 1)));
    }
    f->const_base = L->nslots;
    L->pass2 = 1;

    /* Pass 2: code. */
    uint32_t cur_label = 0;
    for (uint32_t at = body; at && at < L->nw; at += op_count(L, at)) {
        L->pos = at;
        unsigned op = L->w[at] & 0xFFFFu;
        if (op == 56)
            break;
        uint32_t cnt = op_count(L, at);
        idrec *r = NULL;
        uint32_t rt = 0, d = 0, n = 0;
        if (cnt >= 3 && id(L, L->w[at + 2])->slot_fn == L->cur_fn &&
            id(L, L->w[at + 2])->pos == at) {
            rt = L->w[at + 1];
            r = id(L, L->w[at + 2]);
            d = r->slot;
            ty *t = type_of(L, rt);
            n = (t->kind == T_VEC) ? t->n : 1;
        }
        switch (op) {
        case 0: case 8: case 317: case 246: case 247: case 256: case 257: case 225:
            break; /* no-ops: debug info, structured-control hints, lifetimes, fences */
        case 248:
            cur_label = word(L, at, 1);
            id(L, cur_label)->cidx = p->ncode;
            break;
        case 245: break; /* OpPhi: copies are made on the incoming edges */
        case 59: { /* OpVariable */
            ty *pt = type_of(L, rt);
            if (r->promoted) {
                if (cnt > 4) { /* initializer */
                    uint32_t init = word(L, at, 4);
                    emit(L, X_MOV, (uint8_t)comps(L, pt->elem), 0, d, slot(L, init), 0, 0, 0);
                }
                break;
            }
            if (word(L, at, 3) != SC_FUNCTION)
                UNSUPPORTED("function-scope variables must have Function storage");
            ty *vt = type_of(L, pt->elem);
            uint64_t align = vt->align ? vt->align : 8;
            if (align < 8) align = 8;
            uint64_t off = (f->priv_bytes + align - 1) / align * align;
            if (off + vt->size > (1u << 24))
                UNSUPPORTED("private memory of a function exceeds 16 MiB");
            f->priv_bytes = (uint32_t)(off + vt->size);
            add_fixup(L, d, 0, off);
            if (cnt > 4) {
                uint32_t init = word(L, at, 4);
                ty *it = type_of(L, value_type(L, init));
                if (it->kind == T_ARRAY || it->kind == T_STRUCT)
                    UNSUPPORTED("aggregate initializers of function variables are not supported");
                emit(L, X_STORE, (uint8_t)comps(L, value_type(L, init)), (uint8_t)scalar(L, value_type(L, init))->size, 0, d, slot(L, init), 0, 0);
            }
            break;
        }
        case 61: { /* OpLoad */
            uint32_t ptr = word(L, at, 3);
            idrec *pr = id(L, ptr);
            ty *s = scalar(L, rt);
            if (pr->kind == K_VAR && pr->builtin) {
                emit(L, X_BUILTIN, (uint8_t)n, (uint8_t)s->width, d, 0, 0, pr->builtin - 1u, 0);
                break;
            }
            if (s->kind == T_BOOL)
                UNSUPPORTED("booleans cannot be loaded from memory");
            if (pr->promoted) {
                if (pr->slot != d)
                    emit(L, X_MOV, (uint8_t)n, 0, d, pr->slot, 0, 0, 0);
                break;
            }
            emit(L, X_LOAD, (uint8_t)n, (uint8_t)s->size, d, slot(L, ptr), 0, 0, 0);
            break;
        }
        case 62: { /* OpStore */
            uint32_t ptr = word(L, at, 1), obj = word(L, at, 2);
            uint32_t ot = value_type(L, obj);
            ty *s = scalar(L, ot);
            if (s->kind == T_BOOL)
                UNSUPPORTED("booleans cannot be stored to memory");
            idrec *pr = id(L, ptr);
            if (pr->promoted) {
                uint32_t from = slot(L, obj);
                if (from != pr->slot)
                    emit(L, X_MOV, (uint8_t)comps(L, ot), 0, pr->slot, from, 0, 0, 0);
                break;
            }
            emit(L, X_STORE, (uint8_t)comps(L, ot), (uint8_t)s->size, 0, slot(L, ptr), slot(L, obj), 0, 0);
            break;
        }
        case 63: { /* OpCopyMemory */
            uint32_t dst = word(L, at, 1), src = word(L, at, 2);
            ty *pt = type_of(L, value_type(L, dst));
            uint64_t size = type_of(L, pt->elem)->size;
            emit(L, X_MEMCPY, 1, 0, 0, slot(L, dst), slot(L, src), SPV_NONE, (uint32_t)size);
            break;
        }
        case 64: { /* OpCopyMemorySized */
            uint32_t dst = word(L, at, 1), src = word(L, at, 2), sz = word(L, at, 3);
            emit(L, X_MEMCPY, 1, (uint8_t)scalar(L, value_type(L, sz))->width, 0, slot(L, dst),
                 slot(L, src), slot(L, sz), 0);
            break;
        }
        case 65: case 66: case 67: case 70:
            compile_access(L, at, op);
            break;
        case 83: case 121: case 122: case 123: /* copies and address-space casts */
            emit(L, X_MOV, (uint8_t)n, 0, d, slot(L, word(L, at, 3)), 0, 0, 0);
            break;
        case 124: { /* OpBitcast */
            uint32_t src = word(L, at, 3);
            uint32_t st = value_type(L, src);
            ty *a = scalar(L, rt), *b = scalar(L, st);
            if (comps(L, st) != n || a->size != b->size) {
                if (n == 1 && comps(L, st) * b->size == a->size && a->size == 8 && b->size == 4) {
                    /* two 32-bit lanes into one 64-bit value */
                    uint32_t s0 = slot(L, src);
                    uint32_t sh = const_slot(L, 32);
                    emit(L, X_SHL, 1, 64, d, s0 + 1, sh, 0, 0);
                    emit(L, X_OR, 1, 64, d, d, s0, 0, 0);
                    break;
                }
                if (comps(L, st) == 1 && n * a->size == b->size && b->size == 8 && a->size == 4) {
                    uint32_t s0 = slot(L, src);
                    uint32_t sh = const_slot(L, 32);
                    emit(L, X_UCONV, 1, 32, d, s0, 0, 64, 0);
                    emit(L, X_SHRL, 1, 64, d + 1, s0, sh, 0, 0);
                    break;
                }
                UNSUPPORTED("bitcasts that regroup vector lanes are not supported");
            }
            emit(L, X_MOV, (uint8_t)n, 0, d, slot(L, src), 0, 0, 0);
            break;
        }
        case 109: case 110: case 111: case 112: case 113: case 114: case 115: case 117: case 120:
            compile_convert(L, at, op, r);
            break;
        case 126: case 200: case 168: { /* SNegate, Not, LogicalNot */
            uint32_t src = word(L, at, 3);
            uint8_t w = (uint8_t)scalar(L, rt)->width;
            emit_map(L, op == 126 ? X_SNEG : op == 200 ? X_NOT : X_LNOT, n, w, d, slot(L, src),
                     SPV_NONE, 0, SPV_NONE, 1, 0, 0);
            break;
        }
        case 127: {
            uint8_t w = (uint8_t)scalar(L, rt)->width;
            emit_map(L, (uint16_t)float_op(X_FNEG32, w), n, w, d, slot(L, word(L, at, 3)), SPV_NONE,
                     0, SPV_NONE, 1, 0, 0);
            break;
        }
        case 128: case 130: case 132: case 134: case 135: case 137: case 138: case 139:
        case 194: case 195: case 196: case 197: case 198: case 199: {
            uint16_t x;
            switch (op) {
            case 128: x = X_IADD; break;
            case 130: x = X_ISUB; break;
            case 132: x = X_IMUL; break;
            case 134: x = X_UDIV; break;
            case 135: x = X_SDIV; break;
            case 137: x = X_UMOD; break;
            case 138: x = X_SREM; break;
            case 139: x = X_SMOD; break;
            case 194: x = X_SHRL; break;
            case 195: x = X_SHRA; break;
            case 196: x = X_SHL; break;
            case 197: x = X_OR; break;
            case 198: x = X_XOR; break;
            default: x = X_AND; break;
            }
            uint32_t a = word(L, at, 3), b = word(L, at, 4);
            ty *s = scalar(L, rt);
            if (s->kind == T_BOOL) /* OpenCL's bitwise ops on booleans */
                x = x == X_AND ? X_LAND : x == X_OR ? X_LOR : x == X_XOR ? X_LNE : x;
            emit_map(L, x, n, (uint8_t)s->width, d, slot(L, a), slot(L, b), 0, SPV_NONE,
                     is_vec(L, a), is_vec(L, b), 0);
            break;
        }
        case 129: case 131: case 133: case 136: case 140: case 141: case 142: {
            uint16_t base = op == 129 ? X_FADD32 : op == 131 ? X_FSUB32 : op == 133 || op == 142 ? X_FMUL32
                          : op == 136 ? X_FDIV32 : op == 140 ? X_FREM32 : X_FMOD32;
            uint32_t a = word(L, at, 3), b = word(L, at, 4);
            uint8_t w = (uint8_t)scalar(L, rt)->width;
            emit_map(L, (uint16_t)float_op(base, w), n, w, d, slot(L, a), slot(L, b), 0, SPV_NONE,
                     is_vec(L, a), is_vec(L, b), 0);
            break;
        }
        case 164: case 165: case 166: case 167:
        case 170: case 171: case 172: case 173: case 174: case 175: case 176: case 177: case 178:
        case 179: {
            static const uint16_t xs[] = {X_IEQ, X_INE, X_UGT, X_SGT, X_UGE, X_SGE, X_ULT, X_SLT, X_ULE, X_SLE};
            uint16_t x = op == 164 ? X_LEQ : op == 165 ? X_LNE : op == 166 ? X_LOR
                       : op == 167 ? X_LAND : xs[op - 170];
            uint32_t a = word(L, at, 3), b = word(L, at, 4);
            uint8_t w = (uint8_t)scalar(L, value_type(L, a))->width;
            emit_map(L, x, n, w, d, slot(L, a), slot(L, b), 0, SPV_NONE, is_vec(L, a), is_vec(L, b), 0);
            break;
        }
        case 161: case 162: case 163:
        case 180: case 181: case 182: case 183: case 184: case 185: case 186: case 187: case 188:
        case 189: case 190: case 191: {
            uint32_t a = word(L, at, 3), b = word(L, at, 4);
            uint8_t w = (uint8_t)scalar(L, value_type(L, a))->width;
            emit_map(L, X_FCMP, n, w, d, slot(L, a), slot(L, b), op, SPV_NONE, is_vec(L, a), is_vec(L, b), 0);
            break;
        }
        case 156: case 157: case 158: case 159: case 160: {
            uint32_t a = word(L, at, 3);
            uint8_t w = (uint8_t)scalar(L, value_type(L, a))->width;
            emit_map(L, X_FCLASS, n, w, d, slot(L, a), SPV_NONE, op, SPV_NONE, 1, 0, 0);
            break;
        }
        case 205: case 204: { /* OpBitCount, OpBitReverse: as OpenCL.std popcount and a private code */
            uint32_t a = word(L, at, 3);
            uint8_t w = (uint8_t)scalar(L, value_type(L, a))->width;
            emit_map(L, X_EXT, n, w, d, slot(L, a), SPV_NONE, op == 205 ? 166u : SPV_EXT_BITREVERSE,
                     SPV_NONE, 1, 0, 0);
            break;
        }
        case 148: { /* OpDot: a0*b0 + a1*b1 + ... in order */
            uint32_t a = word(L, at, 3), b = word(L, at, 4);
            uint32_t an = comps(L, value_type(L, a));
            uint8_t w = (uint8_t)scalar(L, rt)->width;
            uint32_t sa = slot(L, a), sb = slot(L, b), t = new_slots(L, 1);
            emit(L, (uint16_t)float_op(X_FMUL32, w), 1, w, d, sa, sb, 0, 0);
            for (uint32_t k = 1; k < an; k++) {
                emit(L, (uint16_t)float_op(X_FMUL32, w), 1, w, t, sa + k, sb + k, 0, 0);
                emit(L, (uint16_t)float_op(X_FADD32, w), 1, w, d, d, t, 0, 0);
            }
            break;
        }
        case 154: case 155: { /* Any, All */
            uint32_t a = word(L, at, 3);
            uint32_t an = comps(L, value_type(L, a)), s = slot(L, a);
            emit(L, X_MOV, 1, 0, d, s, 0, 0, 0);
            for (uint32_t k = 1; k < an; k++)
                emit(L, op == 154 ? X_LOR : X_LAND, 1, 1, d, d, s + k, 0, 0);
            break;
        }
        case 169: { /* OpSelect */
            uint32_t c = word(L, at, 3), a = word(L, at, 4), b = word(L, at, 5);
            emit_map(L, X_SELECT, n, 0, d, slot(L, a), slot(L, b), 0, slot(L, c), 1, 1, is_vec(L, c));
            break;
        }
        case 77: { /* OpVectorExtractDynamic */
            uint32_t v = word(L, at, 3), i = word(L, at, 4);
            emit(L, X_VEXTRACT, (uint8_t)comps(L, value_type(L, v)),
                 (uint8_t)scalar(L, value_type(L, i))->width, d, slot(L, v), slot(L, i), 0, 0);
            break;
        }
        case 78: { /* OpVectorInsertDynamic */
            uint32_t v = word(L, at, 3), c = word(L, at, 4), i = word(L, at, 5);
            emit(L, X_MOV, (uint8_t)n, 0, d, slot(L, v), 0, 0, 0);
            emit(L, X_VINSERT, (uint8_t)n, (uint8_t)scalar(L, value_type(L, i))->width, d,
                 slot(L, c), slot(L, i), 0, 0);
            break;
        }
        case 79: { /* OpVectorShuffle */
            uint32_t v1 = word(L, at, 3), v2 = word(L, at, 4);
            uint32_t n1 = comps(L, value_type(L, v1));
            uint32_t s1 = slot(L, v1), s2 = slot(L, v2);
            for (uint32_t k = 0; k < n; k++) {
                uint32_t sel = word(L, at, 5 + k);
                if (sel == 0xFFFFFFFFu)
                    continue;
                emit(L, X_MOV, 1, 0, d + k, sel < n1 ? s1 + sel : s2 + sel - n1, 0, 0, 0);
            }
            break;
        }
        case 80: { /* OpCompositeConstruct */
            if (type_of(L, rt)->kind != T_VEC)
                UNSUPPORTED("only vectors can be constructed");
            uint32_t k = 0;
            for (uint32_t i = 3; i < cnt; i++) {
                uint32_t c = L->w[at + i];
                uint32_t cn = comps(L, value_type(L, c));
                emit(L, X_MOV, (uint8_t)cn, 0, d + k, slot(L, c), 0, 0, 0);
                k += cn;
            }
            break;
        }
        case 81: { /* OpCompositeExtract */
            uint32_t c = word(L, at, 3);
            if (type_of(L, value_type(L, c))->kind != T_VEC || cnt != 5)
                UNSUPPORTED("only vector components can be extracted");
            emit(L, X_MOV, 1, 0, d, slot(L, c) + word(L, at, 4), 0, 0, 0);
            break;
        }
        case 82: { /* OpCompositeInsert */
            uint32_t obj = word(L, at, 3), c = word(L, at, 4);
            if (type_of(L, rt)->kind != T_VEC || cnt != 6)
                UNSUPPORTED("only vector components can be inserted");
            emit(L, X_MOV, (uint8_t)n, 0, d, slot(L, c), 0, 0, 0);
            emit(L, X_MOV, 1, 0, d + word(L, at, 5), slot(L, obj), 0, 0, 0);
            break;
        }
        case 12: { /* OpExtInst */
            if (word(L, at, 3) != L->opencl_set)
                UNSUPPORTED("extended instruction set %u is not OpenCL.std", word(L, at, 3));
            uint32_t e = word(L, at, 4);
            if (e == 184)
                UNSUPPORTED("printf is not supported");
            if (e == 171 || e == 172 || e == 173 || e == 175) {
                /* vloadn, vstoren, vload_half, vstore_half: pointer arithmetic,
                 * then a checked load or store (halves converted, rte). */
                int store = e == 172 || e == 175;
                uint32_t data = store ? word(L, at, 5) : 0;
                uint32_t off = word(L, at, store ? 6 : 5), ptr = word(L, at, store ? 7 : 6);
                ty *pt = type_of(L, value_type(L, ptr));
                if (pt->kind != T_PTR)
                    MALFORMED("vload/vstore of a non-pointer");
                uint32_t elem = e >= 173 ? 2u : (uint32_t)type_of(L, pt->elem)->size;
                uint32_t vn = e == 171 ? word(L, at, 7) : store ? comps(L, value_type(L, data)) : 1;
                uint32_t t = new_slots(L, 1);
                emit(L, X_PTRADD, 1, (uint8_t)scalar(L, value_type(L, off))->width, t, slot(L, ptr),
                     slot(L, off), elem * vn, 0);
                if (e == 171)
                    emit(L, X_LOAD, (uint8_t)vn, (uint8_t)elem, d, t, 0, 0, 0);
                else if (e == 172)
                    emit(L, X_STORE, (uint8_t)vn, (uint8_t)elem, 0, t, slot(L, data), 0, 0);
                else if (e == 173)
                    emit(L, X_LOADH, 1, (uint8_t)scalar(L, rt)->width, d, t, 0, 0, 0);
                else
                    emit(L, X_STOREH, 1, (uint8_t)scalar(L, value_type(L, data))->width, 0, t,
                         slot(L, data), 0, 0);
                break;
            }
            if (e == 186 || e == 187) { /* bitselect, select: bitwise ops and selects */
                uint32_t x = word(L, at, 5), y = word(L, at, 6), c = word(L, at, 7);
                uint32_t sx = slot(L, x), sy = slot(L, y), sc = slot(L, c);
                uint8_t cw = (uint8_t)scalar(L, value_type(L, c))->width;
                int cvec = is_vec(L, c);
                uint32_t t = new_slots(L, 1);
                uint32_t shift = e == 187 && cvec ? const_slot(L, cw - 1u) : SPV_NONE;
                for (uint32_t k = 0; k < n; k++) {
                    uint32_t ck = sc + (cvec ? k : 0);
                    if (e == 186) { /* x ^ ((x ^ y) & c) */
                        emit(L, X_XOR, 1, 64, t, sx + k, sy + k, 0, 0);
                        emit(L, X_AND, 1, 64, t, t, ck, 0, 0);
                        emit(L, X_XOR, 1, 64, d + k, sx + k, t, 0, 0);
                    } else if (cvec) { /* vectors test the sign bit */
                        emit(L, X_SHRL, 1, cw, t, ck, shift, 0, 0);
                        emit(L, X_SELECT, 1, 0, d + k, sy + k, sx + k, 0, t);
                    } else {
                        emit(L, X_SELECT, 1, 0, d + k, sy + k, sx + k, 0, ck);
                    }
                }
                break;
            }
            if (!ext_supported(e))
                UNSUPPORTED("OpenCL.std instruction %u is not supported", e);
            uint32_t nargs = cnt - 5;
            uint32_t ops[3] = {SPV_NONE, SPV_NONE, SPV_NONE};
            int vec[3] = {0, 0, 0};
            if (nargs > 3)
                UNSUPPORTED("OpenCL.std instruction %u with %u operands", e, nargs);
            uint8_t w = 0;
            for (uint32_t i = 0; i < nargs; i++) {
                uint32_t o = L->w[at + 5 + i];
                ty *ot = type_of(L, value_type(L, o));
                if (ot->kind == T_PTR)
                    UNSUPPORTED("OpenCL.std instruction %u takes a pointer", e);
                ops[i] = slot(L, o);
                vec[i] = ot->kind == T_VEC;
                if (i == 0)
                    w = (uint8_t)scalar(L, value_type(L, o))->width;
            }
            if (!w)
                w = (uint8_t)scalar(L, rt)->width;
            ty *rs = scalar(L, rt);
            if (rs->kind == T_INT && e >= 141)
                w = (uint8_t)rs->width;
            /* X_EXT: a, b, e = operands; c = instruction; w = width (negative flag for
             * float result in the high bit is not needed: the instruction says). */
            for (uint32_t k = 0; k < n; k++)
                emit(L, X_EXT, 1, w, d + k, ops[0] == SPV_NONE ? ops[0] : ops[0] + (vec[0] ? k : 0),
                     ops[1] == SPV_NONE ? ops[1] : ops[1] + (vec[1] ? k : 0), e,
                     ops[2] == SPV_NONE ? ops[2] : ops[2] + (vec[2] ? k : 0));
            break;
        }
        case 57: { /* OpFunctionCall */
            uint32_t callee = word(L, at, 3);
            idrec *cr = id(L, callee);
            if (cr->kind != K_FUNC)
                MALFORMED("call of a non-function");
            if (cr->cidx == SPV_NONE)
                UNSUPPORTED("call of function %u, which the module imports but does not define",
                            callee);
            uint32_t list = p->naux;
            for (uint32_t i = 4; i < cnt; i++) {
                uint32_t arg = L->w[at + i];
                aux_push(L, slot(L, arg));
                aux_push(L, comps(L, value_type(L, arg)));
            }
            emit(L, X_CALL, (uint8_t)(cnt - 4), 0, r ? d : SPV_NONE, cr->cidx, list, 0, 0);
            break;
        }
        case 224: { /* OpControlBarrier */
            uint64_t s = const_value(L, word(L, at, 1), "a barrier's execution scope");
            if (s == 2)
                emit(L, X_BARRIER, 1, 0, 0, 0, 0, 0, 0);
            else if (s == 3)
                emit(L, X_COLL, 1, 0, SPV_NONE, SPV_NONE, SPV_NONE, C_ELECT, C_NON_UNIFORM | 0x400u);
            else
                UNSUPPORTED("barriers need Workgroup or Subgroup execution scope");
            break;
        }
        case 227: case 228: case 229: case 230: case 231: case 232: case 233: case 234: case 235:
        case 236: case 237: case 238: case 239: case 240: case 241: case 242: case 5614:
        case 5615: case 6035:
            compile_atomic(L, at, op);
            break;
        case 261: case 262: case 263: case 264: case 265: case 266: case 267: case 268: case 269:
        case 270: case 271: case 333: case 334: case 335: case 337: case 338: case 339: case 345:
        case 346: case 347: case 348: case 349: case 350: case 351: case 352: case 353: case 354:
        case 355: case 356: case 357: case 358: case 359: case 360: case 361: case 362: case 363:
        case 364: case 5571: case 5572: case 5573: case 5574:
            compile_group(L, at, op);
            break;
        case 249: { /* OpBranch */
            spv_ins *i = emit(L, X_JMP, 1, 0, 0, 0, 0, 0, 0);
            branch_to(L, &fs, (uint32_t)(i - p->code), 0, 0, cur_label, word(L, at, 1));
            break;
        }
        case 250: { /* OpBranchConditional */
            spv_ins *i = emit(L, X_BR, 1, 0, 0, slot(L, word(L, at, 1)), 0, 0, 0);
            uint32_t ix = (uint32_t)(i - p->code);
            branch_to(L, &fs, ix, 1, 0, cur_label, word(L, at, 2));
            branch_to(L, &fs, ix, 2, 0, cur_label, word(L, at, 3));
            break;
        }
        case 251: { /* OpSwitch: aux = count, default pc, then (lo, hi, pc) per case */
            uint32_t sel = word(L, at, 1);
            uint32_t sw = scalar(L, value_type(L, sel))->width;
            uint32_t lit = sw == 64 ? 2 : 1;
            uint32_t ncase = (cnt - 3) / (lit + 1);
            uint32_t list = aux_push(L, ncase);
            uint32_t def = aux_push(L, 0);
            branch_to(L, &fs, def, 0, 1, cur_label, word(L, at, 2));
            for (uint32_t k = 0; k < ncase; k++) {
                uint32_t base = 3 + k * (lit + 1);
                /* Literals of narrow types may come sign-extended: keep the
                 * selector's width, as the selector is kept. */
                uint64_t v = word(L, at, base) | (lit == 2 ? (uint64_t)word(L, at, base + 1) << 32 : 0);
                v &= width_mask(sw);
                aux_push(L, (uint32_t)v);
                aux_push(L, (uint32_t)(v >> 32));
                uint32_t tgt = aux_push(L, 0);
                branch_to(L, &fs, tgt, 0, 1, cur_label, word(L, at, base + lit));
            }
            emit(L, X_SWITCH, 1, (uint8_t)sw, 0, slot(L, sel), list, 0, 0);
            break;
        }
        case 253:
            emit(L, X_RET, 0, 0, 0, SPV_NONE, 0, 0, 0);
            break;
        case 254: {
            uint32_t v = word(L, at, 1);
            emit(L, X_RET, (uint8_t)comps(L, value_type(L, v)), 0, 0, slot(L, v), 0, 0, 0);
            break;
        }
        case 255:
            emit(L, X_UNREACHABLE, 1, 0, 0, 0, 0, 0, 0);
            break;
        case 1: /* OpUndef inside a function: zero */
            for (uint32_t k = 0; k < n; k++)
                emit(L, X_MOV, 1, 0, d + k, const_slot(L, 0), 0, 0, 0);
            break;
        default: {
            char buf[32];
            UNSUPPORTED("SPIR-V instruction %s is not supported by levelzero-sim",
                        spv_opname(op, buf, sizeof buf));
        }
        }
    }

    /* Edges into blocks with phis get a stub of parallel copies. */
    for (uint32_t k = 0; k < fs.npend; k++) {
        pending *pe = &fs.pend[k];
        idrec *t = id(L, pe->to);
        uint32_t target = t->cidx;
        uint32_t lpos = t->pos;
        /* The label's position: find it (labels are recorded at compile time). */
        (void)lpos;
        uint32_t dest = target;
        /* Collect the phis that follow the target label. */
        uint32_t at = 0;
        for (uint32_t s = body; s < L->nw; s += op_count(L, s)) {
            unsigned op = L->w[s] & 0xFFFFu;
            if (op == 56)
                break;
            if (op == 248 && L->w[s + 1] == pe->to) {
                at = s + op_count(L, s);
                break;
            }
        }
        if (!at)
            MALFORMED("branch to label %u outside the function", pe->to);
        uint32_t nphi = 0;
        for (uint32_t s = at; (L->w[s] & 0xFFFFu) == 245; s += op_count(L, s))
            nphi++;
        if (nphi) {
            uint32_t *srcs = calloc(2 * nphi, sizeof *srcs);
            if (!srcs)
                fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
            uint32_t s = at;
            for (uint32_t i = 0; i < nphi; i++, s += op_count(L, s)) {
                L->pos = s;
                uint32_t src = SPV_NONE;
                for (uint32_t j = 3; j + 1 < op_count(L, s); j += 2)
                    if (L->w[s + j + 1] == pe->from)
                        src = L->w[s + j];
                if (src == SPV_NONE) {
                    free(srcs);
                    MALFORMED("phi has no value for predecessor %u", pe->from);
                }
                srcs[i] = slot(L, src);
                /* Parallel copy: through temporaries when there are several. */
                srcs[nphi + i] = nphi > 1 ? new_slots(L, comps(L, L->w[s + 1])) : SPV_NONE;
            }
            dest = p->ncode;
            s = at;
            for (uint32_t i = 0; i < nphi; i++, s += op_count(L, s)) {
                uint8_t cn = (uint8_t)comps(L, L->w[s + 1]);
                uint32_t to = nphi > 1 ? srcs[nphi + i] : id(L, L->w[s + 2])->slot;
                emit(L, X_MOV, cn, 0, to, srcs[i], 0, 0, 0);
            }
            s = at;
            for (uint32_t i = 0; nphi > 1 && i < nphi; i++, s += op_count(L, s)) {
                uint8_t cn = (uint8_t)comps(L, L->w[s + 1]);
                emit(L, X_MOV, cn, 0, id(L, L->w[s + 2])->slot, srcs[nphi + i], 0, 0, 0);
            }
            free(srcs);
            emit(L, X_JMP, 1, 0, 0, target, 0, 0, 0);
        }
        if (pe->in_aux) {
            p->aux[pe->at] = dest;
        } else {
            spv_ins *i = &p->code[pe->at];
            if (pe->field == 0) i->a = dest;
            else if (pe->field == 1) i->b = dest;
            else i->c = dest;
        }
    }
    free(fs.pend);
    f->nslots = L->nslots;
    L->cur_fn = 0;
    L->pass2 = 0;
}

/* ------------------------------------------------ promoting variables */

/* Instructions without a result id (the rest have a result type and id). */
static int has_result(unsigned op)
{
    switch (op) {
    case 0: case 8: case 62: case 63: case 64: case 71: case 224: case 225: case 228: case 246:
    case 247: case 248: case 249: case 250: case 251: case 253: case 254: case 255: case 256:
    case 257: case 317:
        return 0;
    default:
        return 1;
    }
}

/* Counts, for every id, the operand words of the function equal to it.  A
 * literal that happens to equal an id counts too: that only makes the
 * analyses below more careful. */
static void count_uses(loader *L, uint32_t body, uint32_t *uses)
{
    for (uint32_t at = body; at < L->nw && (L->w[at] & 0xFFFFu) != 56; at += op_count(L, at)) {
        unsigned op = L->w[at] & 0xFFFFu;
        uint32_t cnt = op_count(L, at);
        for (uint32_t i = 1; i < cnt; i++) {
            if (op == 248 || (has_result(op) && (i == 1 || i == 2)))
                continue; /* result type and id, or a label's own id */
            uint32_t v = L->w[at + i];
            if (v < L->bound)
                uses[v]++;
        }
    }
}

static int mentions(loader *L, uint32_t at, uint32_t v)
{
    unsigned op = L->w[at] & 0xFFFFu;
    for (uint32_t i = 1; i < op_count(L, at); i++)
        if (!(has_result(op) && i == 2) && L->w[at + i] == v)
            return 1;
    return 0;
}

static int is_load_of(loader *L, uint32_t at, uint32_t var)
{
    return (L->w[at] & 0xFFFFu) == 61 && L->w[at + 3] == var;
}

static int is_store_to(loader *L, uint32_t at, uint32_t var)
{
    return (L->w[at] & 0xFFFFu) == 62 && L->w[at + 1] == var;
}

/* Single-instruction scalar results that may be written straight into a
 * promoted variable's slot. */
static int forwardable(unsigned op)
{
    return (op >= 109 && op <= 115) || (op >= 126 && op <= 141) || (op >= 164 && op <= 199) ||
           op == 12 || op == 61 || op == 169;
}

/* clang -O0 keeps every local in a Function variable and goes through memory
 * for each use.  A scalar variable whose address is only ever loaded from and
 * stored to can live in slots instead: its loads and stores become moves, and
 * most moves disappear: a load whose value is used only in its own block
 * before the next store reads the variable's slot directly, and a value
 * computed only to be stored is computed into the slot. */
static void promote_variables(loader *L, uint32_t body)
{
    uint32_t *uses = calloc(L->bound, sizeof *uses);
    uint32_t *loadof = calloc(L->bound, sizeof *loadof);
    if (!uses || !loadof) {
        free(uses);
        free(loadof);
        fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    }
    count_uses(L, body, uses);
    for (uint32_t at = body; at < L->nw && (L->w[at] & 0xFFFFu) != 56; at += op_count(L, at)) {
        unsigned op = L->w[at] & 0xFFFFu;
        if (op == 248 || !has_result(op))
            continue;
        if (op_count(L, at) < 3)
            MALFORMED("instruction too short");
        idrec *r = id(L, L->w[at + 2]);
        r->kind = K_VALUE;
        r->type = L->w[at + 1];
        r->pos = at;
    }
    /* Candidates: Function variables of slot-able type, used only as the
     * pointer of OpLoad and OpStore of that same type. */
    for (uint32_t at = body; at < L->nw && (L->w[at] & 0xFFFFu) != 56; at += op_count(L, at)) {
        if ((L->w[at] & 0xFFFFu) != 59 || op_count(L, at) != 4)
            continue;
        uint32_t var = L->w[at + 2];
        ty *pt = type_of(L, L->w[at + 1]);
        ty *vt = type_of(L, pt->elem);
        if (vt->kind != T_INT && vt->kind != T_FLOAT && vt->kind != T_PTR && vt->kind != T_VEC)
            continue;
        uint32_t direct = 0;
        int ok = 1;
        for (uint32_t u = body; ok && u < L->nw && (L->w[u] & 0xFFFFu) != 56; u += op_count(L, u)) {
            if (is_load_of(L, u, var) && L->w[u + 1] == pt->elem)
                direct++;
            else if (is_store_to(L, u, var) && L->w[u + 2] != var &&
                     value_type(L, L->w[u + 2]) == pt->elem)
                direct++;
        }
        ok = direct == uses[var];
        if (ok)
            id(L, var)->promoted = 1;
    }
    /* Slots: promoted variables first, then every result. */
    uint32_t block_start = body;
    for (uint32_t at = body; at < L->nw && (L->w[at] & 0xFFFFu) != 56; at += op_count(L, at)) {
        unsigned op = L->w[at] & 0xFFFFu;
        if (op == 248) {
            block_start = at;
            id(L, L->w[at + 1])->kind = K_LABEL;
            continue;
        }
        if (!has_result(op))
            continue;
        if (op_count(L, at) < 3)
            MALFORMED("instruction too short");
        uint32_t rt = L->w[at + 1], rid = L->w[at + 2];
        idrec *r = id(L, rid);
        r->kind = K_VALUE;
        r->type = rt;
        r->pos = at;
        r->slot_fn = L->cur_fn;
        ty *t = type_of(L, rt);
        uint32_t n = t->kind == T_VEC ? t->n : 1;
        if (op == 59 && r->promoted) {
            r->slot = new_slots(L, comps(L, t->elem));
            continue;
        }
        r->slot = new_slots(L, n);
        if (op == 61 && id(L, L->w[at + 3])->promoted) {
            /* A load of a promoted variable: read its slot directly if every
             * use follows in this block, before the next store to it. */
            uint32_t var = L->w[at + 3];
            loadof[rid] = var;
            uint32_t seen = 0;
            int stored = 0, ok = 1;
            for (uint32_t u = at + op_count(L, at); u < L->nw; u += op_count(L, u)) {
                unsigned uop = L->w[u] & 0xFFFFu;
                if (uop == 248 || uop == 56 || seen == uses[rid])
                    break;
                if (mentions(L, u, rid)) {
                    if (stored) {
                        ok = 0;
                        break;
                    }
                    seen++;
                }
                if (is_store_to(L, u, var))
                    stored = 1;
            }
            if (ok && seen == uses[rid])
                r->slot = id(L, var)->slot;
        }
        (void)block_start;
    }
    /* Stores: a value computed in the same block and used only by the store
     * is computed into the variable's slot, when nothing in between reads
     * the variable. */
    block_start = body;
    for (uint32_t at = body; at < L->nw && (L->w[at] & 0xFFFFu) != 56; at += op_count(L, at)) {
        unsigned op = L->w[at] & 0xFFFFu;
        if (op == 248)
            block_start = at;
        if (op != 62 || !id(L, L->w[at + 1])->promoted)
            continue;
        uint32_t var = L->w[at + 1], val = L->w[at + 2];
        idrec *vr = id(L, val);
        if (vr->kind != K_VALUE || vr->slot_fn != L->cur_fn || vr->pos < block_start ||
            vr->pos >= at || uses[val] != 1 || comps(L, vr->type) != 1 ||
            !forwardable(L->w[vr->pos] & 0xFFFFu) || vr->slot == id(L, var)->slot)
            continue;
        int ok = 1;
        for (uint32_t u = vr->pos + op_count(L, vr->pos); ok && u < at; u += op_count(L, u)) {
            if (is_load_of(L, u, var) || mentions(L, u, var))
                ok = 0;
            for (uint32_t i = 1; ok && i < op_count(L, u); i++) {
                uint32_t w = L->w[u + i];
                if (w < L->bound && loadof[w] == var)
                    ok = 0;
            }
        }
        if (ok)
            vr->slot = id(L, var)->slot;
    }
    free(uses);
    free(loadof);
}

/* Deepest frame stack under function i; refuses recursion. */
static void stack_needs(loader *L, uint32_t i)
{
    spv_program *p = L->p;
    spv_func *f = &p->funcs[i];
    if (f->done)
        return;
    if (f->visiting)
        UNSUPPORTED("recursion is not supported (OpenCL forbids it)");
    f->visiting = 1;
    uint64_t slots = 0, priv = 0;
    uint32_t depth = 0;
    uint32_t end = i + 1 < p->nfuncs ? p->funcs[i + 1].code : p->ncode;
    for (uint32_t pc = f->code; pc < end; pc++) {
        if (p->code[pc].op != X_CALL)
            continue;
        uint32_t c = p->code[pc].a;
        stack_needs(L, c);
        spv_func *g = &p->funcs[c];
        if (g->max_slots > slots) slots = g->max_slots;
        if (g->max_priv > priv) priv = g->max_priv;
        if (g->max_depth > depth) depth = g->max_depth;
    }
    f->max_slots = f->nslots + slots;
    f->max_priv = ((f->priv_bytes + 15u) & ~15ull) + priv;
    f->max_depth = depth + 1;
    f->visiting = 0;
    f->done = 1;
}

static const char *capability_name(uint32_t c)
{
    switch (c) {
    case 0: return "Matrix";
    case 1: return "Shader";
    case 7: return "Float16";
    case 8: return "Vector16";
    case 13: return "ImageBasic";
    case 14: return "ImageReadWrite";
    case 15: return "ImageMipmap";
    case 17: return "Pipes";
    case 19: return "DeviceEnqueue";
    case 20: return "LiteralSampler";
    case 21: return "AtomicStorage";
    case 44: return "SampledBuffer";
    case 45: return "ImageBuffer";
    case 57: return "SubgroupDispatch";
    case 58: return "NamedBarrier";
    case 59: return "PipeStorage";
    default: return "?";
    }
}

static int capability_ok(uint32_t c)
{
    switch (c) {
    case 4:  /* Addresses */
    case 5:  /* Linkage */
    case 6:  /* Kernel */
    case 8:  /* Vector16 */
    case 9:  /* Float16Buffer: half storage, converted explicitly */
    case 10: /* Float64 */
    case 11: /* Int64 */
    case 12: /* Int64Atomics */
    case 18: /* Groups */
    case 22: /* Int16 */
    case 38: /* GenericPointer */
    case 39: /* Int8 */
    case 61: /* GroupNonUniform */
    case 62: /* GroupNonUniformVote */
    case 63: /* GroupNonUniformArithmetic */
    case 64: /* GroupNonUniformBallot */
    case 65: /* GroupNonUniformShuffle */
    case 66: /* GroupNonUniformShuffleRelative */
    case 5568: /* SubgroupShuffleINTEL */
    case 6033: /* AtomicFloat32AddEXT */
    case 6034: /* AtomicFloat64AddEXT */
    case 5612: /* AtomicFloat32MinMaxEXT */
    case 5613: /* AtomicFloat64MinMaxEXT */
        return 1;
    default:
        return 0;
    }
}

static int extension_ok(const char *s)
{
    static const char *ok[] = {
        "SPV_KHR_no_integer_wrap_decoration", "SPV_INTEL_subgroups",
        "SPV_EXT_shader_atomic_float_add", "SPV_EXT_shader_atomic_float_min_max",
        "SPV_KHR_expect_assume",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(s, ok[i]))
            return 1;
    return 0;
}

static void load_module(loader *L)
{
    const uint32_t *w = L->w;
    if (L->nw < 5 || w[0] != SPV_MAGIC)
        MALFORMED("not a SPIR-V module (bad magic number)");
    if (w[1] > 0x00010600u || w[1] < 0x00010000u)
        UNSUPPORTED("SPIR-V version %u.%u is not supported (1.0 to 1.6 are)", (w[1] >> 16) & 0xFF,
                    (w[1] >> 8) & 0xFF);
    L->bound = w[3];
    if (L->bound == 0 || L->bound > (1u << 22))
        MALFORMED("id bound %u is not sensible", L->bound);
    L->ids = calloc(L->bound, sizeof *L->ids);
    L->types = calloc(L->bound, sizeof *L->types);
    if (!L->ids || !L->types)
        fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    spv_program *p = L->p;

    /* Pass A: module-level declarations, and where functions start. */
    uint32_t capfb = 0;
    int in_fn = 0, memory_model = 0;
    uint32_t nentries = 0, capentries = 0;
    uint32_t *entries = NULL; /* positions of OpEntryPoint */
    for (uint32_t at = 5; at < L->nw;) {
        L->pos = at;
        uint32_t cnt = w[at] >> 16;
        unsigned op = w[at] & 0xFFFFu;
        if (cnt == 0 || at + cnt > L->nw)
            MALFORMED("truncated instruction");
        if (in_fn) {
            if (op == 56)
                in_fn = 0;
            at += cnt;
            continue;
        }
        switch (op) {
        case 17:
            if (!capability_ok(word(L, at, 1)))
                UNSUPPORTED("capability %s (%u) is not supported by levelzero-sim",
                            capability_name(word(L, at, 1)), word(L, at, 1));
            break;
        case 10: {
            const char *s = string_at(L, at, 1, NULL);
            if (!extension_ok(s))
                UNSUPPORTED("extension %s is not supported", s);
            break;
        }
        case 11: {
            const char *s = string_at(L, at, 2, NULL);
            if (strcmp(s, "OpenCL.std"))
                UNSUPPORTED("extended instruction set %s is not supported", s);
            id(L, word(L, at, 1))->kind = K_EXTSET;
            L->opencl_set = word(L, at, 1);
            break;
        }
        case 14:
            if (word(L, at, 1) != 2 || word(L, at, 2) != 2)
                UNSUPPORTED("only the Physical64 addressing and OpenCL memory models are supported");
            memory_model = 1;
            break;
        case 15:
            if (word(L, at, 1) != 6)
                UNSUPPORTED("only Kernel entry points are supported");
            entries = grow(L, entries, &capentries, nentries + 1, sizeof *entries);
            entries[nentries++] = at;
            break;
        case 16: case 331: {
            uint32_t mode = word(L, at, 2);
            /* ContractionOff, LocalSize, LocalSizeHint, VecTypeHint, SubgroupSize, SubgroupsPerWorkgroup */
            if (mode == 31 || mode == 17 || mode == 18 || mode == 30)
                break;
            if (mode == 35 && word(L, at, 3) == SPV_SUBGROUP_SIZE)
                break;
            UNSUPPORTED("execution mode %u is not supported", mode);
        }
        case 71: case 332: {
            uint32_t target = word(L, at, 1), dec = word(L, at, 2);
            idrec *r = id(L, target);
            if (dec == 11) {
                r->builtin = builtin_of(word(L, at, 3));
                if (!r->builtin)
                    UNSUPPORTED("built-in %u is not supported", word(L, at, 3));
            } else if (dec == 28) {
                r->sat = 1;
            } else if (dec == 39) {
                r->round = (uint8_t)(word(L, at, 3) + 1);
            } else if (dec == 5) {
                r->packed = 1; /* CPacked */
            }
            break;
        }
        case 0: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 72: case 73:
        case 74: case 75: case 317: case 330:
            break;
        case 19: case 20: case 21: case 22: case 23: case 24: case 25: case 26: case 27: case 28:
        case 29: case 30: case 31: case 32: case 33: case 34: case 35: case 36: case 37: case 38:
        case 39:
            define_type(L, at, op);
            break;
        case 41: case 42: case 43: case 44: case 46: case 48: case 49: case 50: case 51:
            define_constant(L, at, op);
            break;
        case 1: {
            idrec *r = id(L, word(L, at, 2));
            r->kind = K_UNDEF;
            r->type = word(L, at, 1);
            break;
        }
        case 59: {
            uint32_t rt = word(L, at, 1), rid = word(L, at, 2), sc = word(L, at, 3);
            idrec *r = id(L, rid);
            r->kind = K_VAR;
            r->type = rt;
            r->pos = at;
            r->storage = (uint8_t)sc;
            ty *vt = type_of(L, type_of(L, rt)->elem);
            if (sc == SC_INPUT) {
                if (!r->builtin)
                    UNSUPPORTED("Input variables must be supported built-ins");
                break;
            }
            uint64_t align = vt->align ? vt->align : 8;
            if (sc == SC_WORKGROUP) {
                uint64_t off = (p->local_bytes + align - 1) / align * align;
                if (off + vt->size > SPV_MAX_LOCAL_BYTES)
                    UNSUPPORTED("__local variables need more than %u bytes", SPV_MAX_LOCAL_BYTES);
                r->cidx = (uint32_t)off;
                p->local_bytes = (uint32_t)(off + vt->size);
            } else if (sc == SC_CROSS || sc == SC_UNIFORM_CONSTANT) {
                uint64_t off = (L->globals_bytes + align - 1) / align * align;
                if (off + vt->size > (1u << 28))
                    UNSUPPORTED("program-scope variables too large");
                r->cidx = (uint32_t)off;
                L->globals_bytes = off + vt->size;
            } else {
                UNSUPPORTED("module variables with storage class %u are not supported", sc);
            }
            break;
        }
        case 54: {
            in_fn = 1;
            uint32_t rid = word(L, at, 2);
            idrec *r = id(L, rid);
            r->kind = K_FUNC;
            r->type = word(L, at, 1);
            r->pos = at;
            /* A declaration (no body) is an import. */
            uint32_t next = at + cnt;
            while (next < L->nw && (w[next] & 0xFFFFu) == 55)
                next += w[next] >> 16;
            if (next < L->nw && (w[next] & 0xFFFFu) == 56) {
                r->cidx = SPV_NONE;
            } else {
                L->func_begin = grow(L, L->func_begin, &capfb, L->nfuncs + 1, sizeof *L->func_begin);
                r->cidx = L->nfuncs;
                L->func_begin[L->nfuncs++] = at;
            }
            break;
        }
        default: {
            char buf[32];
            UNSUPPORTED("SPIR-V instruction %s is not supported at module scope",
                        spv_opname(op, buf, sizeof buf));
        }
        }
        at += cnt;
    }
    L->pos = 0;
    if (!memory_model)
        MALFORMED("no OpMemoryModel");

    /* Program-scope variables and their initializers. */
    p->globals_size = L->globals_bytes;
    p->globals = calloc(1, L->globals_bytes ? L->globals_bytes : 1);
    if (!p->globals)
        fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    for (uint32_t v = 1; v < L->bound; v++) {
        idrec *r = &L->ids[v];
        if (r->kind == K_VAR && (r->storage == SC_CROSS || r->storage == SC_UNIFORM_CONSTANT) &&
            op_count(L, r->pos) > 4) {
            L->pos = r->pos;
            write_const(L, L->w[r->pos + 4], p->globals + r->cidx);
        }
    }

    p->funcs = calloc(L->nfuncs ? L->nfuncs : 1, sizeof *p->funcs);
    if (!p->funcs)
        fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    p->nfuncs = L->nfuncs;
    for (uint32_t i = 0; i < L->nfuncs; i++) {
        p->funcs[i].id = L->w[L->func_begin[i] + 2];
        compile_function(L, i);
    }
    for (uint32_t i = 0; i < L->nfuncs; i++)
        stack_needs(L, i);

    p->kernels = calloc(nentries ? nentries : 1, sizeof *p->kernels);
    if (!p->kernels)
        fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    for (uint32_t k = 0; k < nentries; k++) {
        uint32_t at = entries[k];
        L->pos = at;
        idrec *fr = id(L, word(L, at, 2));
        if (fr->kind != K_FUNC || fr->cidx == SPV_NONE)
            MALFORMED("entry point is not a defined function");
        spv_kernel *kn = &p->kernels[p->nkernels];
        kn->prog = p;
        kn->func = fr->cidx;
        kn->name = strdup(string_at(L, at, 3, NULL));
        if (!kn->name)
            fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
        p->nkernels++;
        spv_func *f = &p->funcs[fr->cidx];
        if (f->nparams > AR_KERNEL_MAX_PARAMS)
            UNSUPPORTED("kernel %s has %u parameters (at most %u)", kn->name, f->nparams,
                        AR_KERNEL_MAX_PARAMS);
        kn->info.abi_version = AR_HOST_ABI_VERSION;
        kn->info.num_params = f->nparams;
        uint32_t ppos = L->func_begin[fr->cidx];
        ppos += op_count(L, ppos);
        for (uint32_t i = 0; i < f->nparams; i++, ppos += op_count(L, ppos)) {
            uint32_t pt = word(L, ppos, 1);
            ty *t = type_of(L, pt);
            if (t->kind == T_PTR && t->storage == SC_WORKGROUP)
                UNSUPPORTED("kernel %s: __local pointer arguments are not supported (declare "
                            "the __local array inside the kernel)", kn->name);
            if (t->kind == T_BOOL || t->kind == T_ARRAY || t->kind == T_STRUCT)
                UNSUPPORTED("kernel %s: argument %u has a type that cannot be passed", kn->name, i);
            ty *s = scalar(L, pt);
            uint32_t cn = comps(L, pt);
            kn->param_n[i] = (uint8_t)cn;
            kn->param_bytes[i] = (uint8_t)s->size;
            kn->info.param_sizes[i] = (uint32_t)(t->kind == T_VEC ? t->size : s->size);
        }
        for (uint32_t j = 0; j < k; j++)
            if (!strcmp(p->kernels[j].name, kn->name))
                MALFORMED("two entry points named %s", kn->name);
    }
    free(entries);
    if (!p->nkernels)
        UNSUPPORTED("the module has no kernels");
}

spv_program *spv_program_load(const void *bytes, size_t size, spv_load_status *status, char *err,
                              size_t errlen)
{
    loader L;
    memset(&L, 0, sizeof L);
    L.err = err;
    L.errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
    L.p = calloc(1, sizeof *L.p);
    if (!L.p) {
        *status = SPV_LOAD_NO_MEMORY;
        return NULL;
    }
    if (setjmp(L.fail)) {
        *status = L.status;
        spv_program_free(L.p);
        for (uint32_t i = 0; L.types && i < L.bound; i++)
            free(L.types[i].offsets);
        free(L.ids);
        free(L.types);
        free(L.cvals);
        free(L.func_begin);
        free((void *)L.w);
        return NULL;
    }
    if (size % 4 || size < 20)
        fail(&L, SPV_LOAD_MALFORMED, "a SPIR-V module is a whole number of 32-bit words (got %zu bytes)", size);
    uint32_t *words = malloc(size);
    if (!words)
        fail(&L, SPV_LOAD_NO_MEMORY, "out of host memory");
    memcpy(words, bytes, size);
    L.w = words;
    L.nw = (uint32_t)(size / 4);
    load_module(&L);
    for (uint32_t i = 0; i < L.bound; i++)
        free(L.types[i].offsets);
    free(L.ids);
    free(L.types);
    free(L.cvals);
    free(L.func_begin);
    free(words);
    L.w = NULL;
    *status = SPV_LOAD_OK;
    return L.p;
}

void spv_program_free(void *program)
{
    spv_program *p = program;
    if (!p)
        return;
    for (uint32_t i = 0; i < p->nkernels; i++)
        free(p->kernels[i].name);
    free(p->kernels);
    free(p->code);
    free(p->pool);
    free(p->aux);
    free(p->fixups);
    free(p->funcs);
    free(p->globals);
    free(p);
}

size_t spv_kernel_count(const spv_program *p) { return p->nkernels; }
const char *spv_kernel_name(const spv_program *p, size_t i) { return p->kernels[i].name; }
const ar_kernel_info *spv_kernel_info(const spv_program *p, size_t i) { return &p->kernels[i].info; }
void *spv_kernel_ctx(spv_program *p, size_t i) { return &p->kernels[i]; }
