/* SPIR-V loader: what compiling writes into the program: instructions of the
 * register form, their auxiliary words, frame fixups and slots. */
#include <string.h>

#include "spv_load.h"

spv_ins *spvl_emit(loader *L, uint16_t op, uint8_t n, uint8_t w, uint32_t d, uint32_t a,
                   uint32_t b, uint32_t c, uint32_t e)
{
    spv_program *p = L->p;
    p->code = spvl_grow(L, p->code, &L->capcode, p->ncode + 1, sizeof *p->code);
    spv_ins *i = &p->code[p->ncode++];
    *i = (spv_ins){op, n, w, d, a, b, c, e};
    return i;
}

uint32_t spvl_aux_push(loader *L, uint32_t v)
{
    spv_program *p = L->p;
    p->aux = spvl_grow(L, p->aux, &L->capaux, p->naux + 1, sizeof *p->aux);
    p->aux[p->naux] = v;
    return p->naux++;
}

void spvl_add_fixup(loader *L, uint32_t slot, uint32_t kind, uint64_t off)
{
    spv_program *p = L->p;
    p->fixups = spvl_grow(L, p->fixups, &L->capfix, p->nfixups + 1, sizeof *p->fixups);
    p->fixups[p->nfixups++] = (spv_fixup){slot, kind, off};
    p->funcs[L->cur_fn - 1].nfix++;
}

/* Slots made while compiling the body (constants, variable addresses, phi
 * temporaries) extend the frame's template, which is copied in whole when a
 * frame is made: constants get their value, the rest zero. */
static uint32_t pool_slot(loader *L, uint64_t v)
{
    spv_program *p = L->p;
    p->pool = spvl_grow(L, p->pool, &L->cappool, p->npool + 1, sizeof *p->pool);
    p->pool[p->npool++] = v;
    p->funcs[L->cur_fn - 1].nconst++;
    return L->nslots++;
}

uint32_t spvl_new_slots(loader *L, uint32_t n)
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

uint32_t spvl_const_slot(loader *L, uint64_t v) { return pool_slot(L, v); }

uint32_t spvl_slot(loader *L, uint32_t v)
{
    idrec *r = id(L, v);
    if (r->builtin) /* only loads, access chains and casts follow it */
        spvl_builtin_escapes(L, v);
    if (r->slot_fn == L->cur_fn)
        return r->slot;
    switch (r->kind) {
    case K_CONST:
    case K_UNDEF: {
        if (r->kind == K_CONST && r->cidx == SPV_NONE)
            UNSUPPORTED("constant %u has more than %u components to be a value", v,
                        SPV_MAX_AGGREGATE_SLOTS);
        uint32_t n = comps(L, r->type);
        uint32_t s = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t k = spvl_const_slot(L, r->kind == K_UNDEF ? 0 : L->cvals[r->cidx + i]);
            if (i == 0)
                s = k;
        }
        r->slot = s;
        break;
    }
    case K_VAR:
        if (r->storage == SC_WORKGROUP) {
            r->slot = spvl_new_slots(L, 1);
            spvl_add_fixup(L, r->slot, 1, r->cidx);
        } else if (r->storage == SC_CROSS || r->storage == SC_UNIFORM_CONSTANT) {
            r->slot = spvl_const_slot(L, (uint64_t)(uintptr_t)(L->p->globals + r->cidx));
        } else {
            MALFORMED("variable %u has no memory", v);
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

uint64_t spvl_const_value(loader *L, uint32_t v, const char *what)
{
    idrec *r = id(L, v);
    if (r->kind != K_CONST || r->cidx == SPV_NONE)
        UNSUPPORTED("%s must be a constant", what);
    return L->cvals[r->cidx];
}

void spvl_branch_to(loader *L, fnstate *fs, uint32_t at, uint8_t field, uint8_t in_aux,
                    uint32_t from, uint32_t to)
{
    idrec *t = id(L, to);
    if (t->kind != K_LABEL)
        MALFORMED("branch target %u is not a label", to);
    fs->pend = spvl_grow(L, fs->pend, &fs->cappend, fs->npend + 1, sizeof *fs->pend);
    fs->pend[fs->npend++] = (pending){at, field, in_aux, from, to};
}

void spvl_emit_map(loader *L, uint16_t xop, uint32_t n, uint8_t w, uint32_t d, uint32_t a,
                   uint32_t b, uint32_t c, uint32_t e, int a_vec, int b_vec, int e_vec)
{
    for (uint32_t k = 0; k < n; k++)
        spvl_emit(L, xop, 1, w, d + k, a == SPV_NONE ? a : a + (a_vec ? k : 0),
                  b == SPV_NONE ? b : b + (b_vec ? k : 0), c, e == SPV_NONE ? e : e + (e_vec ? k : 0));
}
