/* SPIR-V loader: builtins read through pointers.
 *
 * A builtin variable has no memory behind it: X_BUILTIN computes its value
 * where it is read.  clang with llvm-spirv loads a builtin whole; LLVM's own
 * SPIR-V back end (SYCL, dpctl's kernels) declares it as a CrossWorkgroup
 * variable and reads one component through OpInBoundsPtrAccessChain, or
 * through a bitcast or an address-space cast of its pointer.  The loader
 * follows such pointers at compile time: each records the builtin (idrec
 * builtin, bname, bvar) and what it points at (bcomp: 0 the whole value, else
 * 1 + a constant component; bindex: the id of a dynamic component), and the
 * OpLoad at the end reads the builtin and picks the component.  Any other
 * use of such a pointer (a store, a call, a phi, a select, a conversion to an
 * integer, an atomic, a copy) reaches spvl_slot, which refuses it by name. */
#include "spv_load.h"

static const char *name_of(const idrec *r)
{
    const char *n = spv_builtin_name(r->bname);
    return n ? n : "(unnamed)";
}

/* The pointee type of pointer id v. */
static uint32_t pointee(loader *L, uint32_t v) { return type_of(L, value_type(L, v))->elem; }

/* Whether types a and b hold the same values (the same kind and width;
 * vectors: also the same length). */
static int same_type(loader *L, uint32_t a, uint32_t b)
{
    ty *x = type_of(L, a), *y = type_of(L, b);
    if (x->kind != y->kind)
        return 0;
    if (x->kind == T_VEC)
        return x->n == y->n && same_type(L, x->elem, y->elem);
    return x->kind == T_INT || x->kind == T_FLOAT ? x->width == y->width : a == b;
}

/* Makes the result of c a pointer into the same builtin as `from`. */
static void derive(loader *L, fnctx *c, const idrec *from, uint8_t comp, uint32_t index)
{
    idrec *r = id(L, word(L, c->at, 2));
    r->builtin = from->builtin;
    r->bname = from->bname;
    r->bvar = from->bvar;
    r->bcomp = comp;
    r->bindex = index;
}

void spvl_builtin_escapes(loader *L, uint32_t v)
{
    const idrec *r = id(L, v);
    char op[32];
    UNSUPPORTED("a pointer to built-in %s used by %s: levelzero-sim reads a built-in only by "
                "OpLoad, through access chains and pointer casts",
                name_of(r), spv_opname(opcode_at(L, L->pos), op, sizeof op));
}

/* OpAccessChain and its kin on a pointer into a builtin: at most an element
 * index of 0 (OpPtrAccessChain) and one component index. */
void spvl_builtin_chain(loader *L, fnctx *c)
{
    uint32_t base = word(L, c->at, 3), i = 4;
    const idrec *b = id(L, base);
    char op[32];
    spv_opname(c->op, op, sizeof op);
    if (c->op == SPV_OpPtrAccessChain || c->op == SPV_OpInBoundsPtrAccessChain) {
        idrec *e = id(L, word(L, c->at, 4));
        if (e->kind != K_CONST || L->cvals[e->cidx] != 0)
            UNSUPPORTED("%s with an element index other than a constant 0 into built-in %s "
                        "(past the variable)", op, name_of(b));
        i = 5;
    }
    if (i == c->cnt) {
        derive(L, c, b, b->bcomp, b->bindex);
        return;
    }
    ty *vt = type_of(L, pointee(L, base));
    if (i + 1 < c->cnt || vt->kind != T_VEC)
        UNSUPPORTED("%s indexes built-in %s deeper than one component", op, name_of(b));
    uint32_t idx = L->w[c->at + i];
    idrec *ir = id(L, idx);
    if (ir->kind != K_CONST) {
        derive(L, c, b, 0, idx);
        return;
    }
    uint64_t k = L->cvals[ir->cidx];
    if (k >= vt->n)
        UNSUPPORTED("%s reads component %llu of built-in %s, which has %u", op,
                    (unsigned long long)k, name_of(b), vt->n);
    derive(L, c, b, (uint8_t)(1 + k), 0);
}

/* OpBitcast, the address-space casts and OpCopyObject of a pointer into a
 * builtin: to a pointer to the same type, or from the whole vector to its
 * first component. */
void spvl_builtin_cast(loader *L, fnctx *c)
{
    uint32_t src = word(L, c->at, 3);
    const idrec *b = id(L, src);
    char op[32];
    spv_opname(c->op, op, sizeof op);
    uint32_t from = pointee(L, src), to = type_of(L, c->rt)->elem;
    if (type_of(L, c->rt)->kind != T_PTR)
        spvl_builtin_escapes(L, src);
    if (c->op == SPV_OpGenericCastToPtrExplicit && word(L, c->at, 4) != id(L, b->bvar)->storage)
        UNSUPPORTED("%s of built-in %s to another storage class", op, name_of(b));
    if (same_type(L, from, to)) {
        derive(L, c, b, b->bcomp, b->bindex);
        return;
    }
    ty *ft = type_of(L, from);
    if (ft->kind == T_VEC && !b->bcomp && !b->bindex && same_type(L, ft->elem, to)) {
        derive(L, c, b, 1, 0);
        return;
    }
    UNSUPPORTED("%s of a pointer to built-in %s to a pointer to another type", op,
                name_of(b));
}

/* OpLoad through a pointer into a builtin: the builtin, then its component. */
void spvl_builtin_load(loader *L, fnctx *c)
{
    uint32_t ptr = word(L, c->at, 3);
    const idrec *p = id(L, ptr);
    ty *vt = type_of(L, pointee(L, p->bvar));
    uint32_t n = vt->kind == T_VEC ? vt->n : 1;
    ty *s = scalar(L, pointee(L, p->bvar));
    if (!same_type(L, c->rt, pointee(L, ptr)))
        UNSUPPORTED("OpLoad of built-in %s as another type", name_of(p));
    if (!p->bcomp && !p->bindex) {
        spvl_emit(L, X_BUILTIN, (uint8_t)n, (uint8_t)s->width, c->d, 0, 0, p->builtin - 1u, 0);
        return;
    }
    uint32_t t = spvl_new_slots(L, n);
    spvl_emit(L, X_BUILTIN, (uint8_t)n, (uint8_t)s->width, t, 0, 0, p->builtin - 1u, 0);
    if (p->bcomp) {
        spvl_emit(L, X_MOV, 1, 0, c->d, t + p->bcomp - 1u, 0, 0, 0);
        return;
    }
    uint32_t iw = scalar(L, value_type(L, p->bindex))->width;
    spvl_emit(L, X_VEXTRACT, (uint8_t)n, (uint8_t)iw, c->d, t, spvl_slot(L, p->bindex), 0, 0);
}
