/* SPIR-V loader: Function variables kept in slots instead of private memory
 * (see spvl_promote_variables). */
#include <stdlib.h>

#include "spv_load.h"

int spvl_has_result(unsigned op)
{
    const spv_opinfo *info = spv_opinfo_of(op);
    return !info || !(info->flags & OPF_NR);
}

/* Counts, for every id, the operand words of the function equal to it.  A
 * literal that happens to equal an id counts too: that only makes the
 * analyses below more careful. */
static void count_uses(loader *L, uint32_t body, uint32_t *uses)
{
    for (uint32_t at = body; at < L->nw && (L->w[at] & 0xFFFFu) != SPV_OpFunctionEnd; at += op_count(L, at)) {
        unsigned op = L->w[at] & 0xFFFFu;
        uint32_t cnt = op_count(L, at);
        for (uint32_t i = 1; i < cnt; i++) {
            if (op == SPV_OpLabel || (spvl_has_result(op) && (i == 1 || i == 2)))
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
        if (!(spvl_has_result(op) && i == 2) && L->w[at + i] == v)
            return 1;
    return 0;
}

static int is_load_of(loader *L, uint32_t at, uint32_t var)
{
    return opcode_at(L, at) == SPV_OpLoad && L->w[at + 3] == var;
}

static int is_store_to(loader *L, uint32_t at, uint32_t var)
{
    return opcode_at(L, at) == SPV_OpStore && L->w[at + 1] == var;
}

/* Single-instruction scalar results that may be written straight into a
 * promoted variable's slot. */
static int forwardable(unsigned op)
{
    const spv_opinfo *info = spv_opinfo_of(op);
    return info && (info->flags & OPF_FWD);
}

/* clang -O0 keeps every local in a Function variable and goes through memory
 * for each use.  A scalar variable whose address is only ever loaded from and
 * stored to can live in slots instead: its loads and stores become moves, and
 * most moves disappear: a load whose value is used only in its own block
 * before the next store reads the variable's slot directly, and a value
 * computed only to be stored is computed into the slot. */
void spvl_promote_variables(loader *L, uint32_t body)
{
    uint32_t *uses = calloc(L->bound, sizeof *uses);
    uint32_t *loadof = calloc(L->bound, sizeof *loadof);
    if (!uses || !loadof) {
        free(uses);
        free(loadof);
        spvl_fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    }
    count_uses(L, body, uses);
    for (uint32_t at = body; at < L->nw && (L->w[at] & 0xFFFFu) != SPV_OpFunctionEnd; at += op_count(L, at)) {
        unsigned op = L->w[at] & 0xFFFFu;
        if (op == SPV_OpLabel || !spvl_has_result(op))
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
    for (uint32_t at = body; at < L->nw && (L->w[at] & 0xFFFFu) != SPV_OpFunctionEnd; at += op_count(L, at)) {
        if ((L->w[at] & 0xFFFFu) != SPV_OpVariable || op_count(L, at) != 4)
            continue;
        uint32_t var = L->w[at + 2];
        ty *pt = type_of(L, L->w[at + 1]);
        ty *vt = type_of(L, pt->elem);
        if (vt->kind != T_INT && vt->kind != T_FLOAT && vt->kind != T_PTR && vt->kind != T_VEC)
            continue;
        uint32_t direct = 0;
        int ok = 1;
        for (uint32_t u = body; ok && u < L->nw && (L->w[u] & 0xFFFFu) != SPV_OpFunctionEnd; u += op_count(L, u)) {
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
    for (uint32_t at = body; at < L->nw && (L->w[at] & 0xFFFFu) != SPV_OpFunctionEnd; at += op_count(L, at)) {
        unsigned op = L->w[at] & 0xFFFFu;
        if (op == SPV_OpLabel) {
            block_start = at;
            id(L, L->w[at + 1])->kind = K_LABEL;
            continue;
        }
        if (!spvl_has_result(op))
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
        uint32_t n = t->kind == T_ARRAY || t->kind == T_STRUCT ? comps(L, rt) : t->kind == T_VEC ? t->n : 1;
        if (op == SPV_OpVariable && r->promoted) {
            r->slot = spvl_new_slots(L, comps(L, t->elem));
            continue;
        }
        r->slot = spvl_new_slots(L, n);
        if (op == SPV_OpLoad && id(L, L->w[at + 3])->promoted) {
            /* A load of a promoted variable: read its slot directly if every
             * use follows in this block, before the next store to it. */
            uint32_t var = L->w[at + 3];
            loadof[rid] = var;
            uint32_t seen = 0;
            int stored = 0, ok = 1;
            for (uint32_t u = at + op_count(L, at); u < L->nw; u += op_count(L, u)) {
                unsigned uop = L->w[u] & 0xFFFFu;
                if (uop == SPV_OpLabel || uop == SPV_OpFunctionEnd || seen == uses[rid])
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
    for (uint32_t at = body; at < L->nw && (L->w[at] & 0xFFFFu) != SPV_OpFunctionEnd; at += op_count(L, at)) {
        unsigned op = L->w[at] & 0xFFFFu;
        if (op == SPV_OpLabel)
            block_start = at;
        if (op != SPV_OpStore || !id(L, L->w[at + 1])->promoted)
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
