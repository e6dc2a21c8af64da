/* SPIR-V loader: compile handlers for memory: variables, loads and stores
 * (moves for promoted variables), copies, access chains and atomics. */
#include "spv_load.h"

/* The address `off` bytes past the one in slot `base`. */
static uint32_t addr_at(loader *L, uint32_t base, uint64_t off)
{
    if (!off)
        return base;
    uint32_t t = spvl_new_slots(L, 1);
    spvl_emit(L, X_ADDI, 1, 0, t, base, 0, 0, (uint32_t)off);
    return t;
}

/* Zeroes `size` bytes at `off` past the address in slot `base`. */
static void zero_bytes(loader *L, uint32_t base, uint64_t off, uint64_t size)
{
    uint32_t zero = spvl_const_slot(L, 0);
    for (uint32_t w = 8; w; w /= 2)
        for (; size >= w; size -= w, off += w)
            spvl_emit(L, X_STORE, 1, (uint8_t)w, 0, addr_at(L, base, off), zero, 0, 0);
}

/* Stores constant `cid` at `off` past the address in slot `base`: one store
 * per scalar or vector leaf of an OpConstantComposite, zeros for an
 * OpConstantNull, nothing for an OpUndef (as spvl_write_const lays them out). */
static void store_const(loader *L, uint32_t base, uint64_t off, uint32_t cid)
{
    idrec *c = id(L, cid);
    if (c->kind == K_UNDEF)
        return;
    if (c->kind != K_CONST)
        UNSUPPORTED("variable initializers must be constants");
    unsigned op = L->w[c->pos] & 0xFFFFu;
    ty *y = type_of(L, c->type);
    if (op == SPV_OpConstantNull) {
        zero_bytes(L, base, off, y->size);
        return;
    }
    if (y->kind == T_ARRAY || y->kind == T_STRUCT) {
        if (op != SPV_OpConstantComposite)
            UNSUPPORTED("aggregate initializers must be OpConstantComposite or OpConstantNull");
        for (uint32_t i = 3; i < op_count(L, c->pos); i++) {
            uint32_t k = i - 3;
            uint64_t at = y->kind == T_ARRAY ? k * type_of(L, y->elem)->size : y->offsets[k];
            store_const(L, base, off + at, L->w[c->pos + i]);
        }
        return;
    }
    ty *s = scalar(L, c->type);
    if (s->kind == T_BOOL)
        UNSUPPORTED("booleans cannot be stored in memory");
    spvl_emit(L, X_STORE, (uint8_t)comps(L, c->type), (uint8_t)s->size, 0, addr_at(L, base, off),
              spvl_slot(L, cid), 0, 0);
}

static int is_aggregate(loader *L, uint32_t t)
{
    ty *y = type_of(L, t);
    return y->kind == T_ARRAY || y->kind == T_STRUCT;
}

void spvl_c_variable(loader *L, fnctx *c)
{
    uint32_t at = c->at, d = c->d;
    spv_func *f = c->f;
    ty *pt = type_of(L, c->rt);
    if (c->r->promoted) {
        if (c->cnt > 4) { /* initializer */
            uint32_t init = word(L, at, 4);
            spvl_emit(L, X_MOV, (uint8_t)comps(L, pt->elem), 0, d, spvl_slot(L, init), 0, 0, 0);
        }
        return;
    }
    if (word(L, at, 3) != SC_FUNCTION)
        UNSUPPORTED("function-scope variables must have Function storage");
    ty *vt = type_of(L, pt->elem);
    uint64_t align = vt->align ? vt->align : 8;
    if (align < 8)
        align = 8;
    uint64_t off = (f->priv_bytes + align - 1) / align * align;
    if (off + vt->size > (1u << 24))
        UNSUPPORTED("private memory of a function exceeds 16 MiB");
    f->priv_bytes = (uint32_t)(off + vt->size);
    spvl_add_fixup(L, d, 0, off);
    if (c->cnt > 4) /* run each time the declaration is reached */
        store_const(L, d, 0, word(L, at, 4));
}

/* What an access's Aligned memory operand (the mask at word mask_at; the
 * Aligned literal is the first after it) lowers its element's alignment to,
 * or 0 where it does not (spv_ins c). */
static uint32_t aligned_operand(loader *L, const fnctx *c, uint32_t mask_at, uint32_t size)
{
    if (c->cnt <= mask_at + 1 || !(word(L, c->at, mask_at) & SPV_MemoryAccess_Aligned))
        return 0;
    uint32_t a = word(L, c->at, mask_at + 1);
    return a && (a & (a - 1)) == 0 && a < size ? a : 0;
}

/* Loads (X_LOAD) or stores (X_STORE) a value of aggregate type t, from
 * slot `slot` on, at `off` past the address in slot base: one access per
 * scalar or vector leaf, at its offset; returns the slot after the value's. */
static uint32_t move_leaves(loader *L, const fnctx *c, uint16_t xop, uint32_t t, uint32_t base,
                            uint64_t off, uint32_t slot)
{
    ty *y = type_of(L, t);
    if (y->kind == T_STRUCT) {
        for (uint32_t k = 0; k < y->n; k++)
            slot = move_leaves(L, c, xop, member_type(L, y, k), base, off + y->offsets[k], slot);
        return slot;
    }
    if (y->kind == T_ARRAY) {
        uint64_t stride = type_of(L, y->elem)->size;
        for (uint32_t k = 0; k < y->n; k++)
            slot = move_leaves(L, c, xop, y->elem, base, off + k * stride, slot);
        return slot;
    }
    ty *s = scalar(L, t);
    if (s->kind == T_BOOL)
        UNSUPPORTED("booleans cannot be loaded from or stored to memory");
    uint32_t n = comps(L, t), at = addr_at(L, base, off);
    uint32_t align = aligned_operand(L, c, xop == X_LOAD ? 4 : 3, (uint32_t)s->size);
    if (xop == X_LOAD)
        spvl_emit(L, X_LOAD, (uint8_t)n, (uint8_t)s->size, slot, at, 0, align, 0);
    else
        spvl_emit(L, X_STORE, (uint8_t)n, (uint8_t)s->size, 0, at, slot, align, 0);
    return slot + n;
}

void spvl_c_load(loader *L, fnctx *c)
{
    uint32_t ptr = word(L, c->at, 3), d = c->d, n = c->n;
    idrec *pr = id(L, ptr);
    ty *s = scalar(L, c->rt);
    if (pr->builtin) {
        spvl_builtin_load(L, c);
        return;
    }
    if (is_aggregate(L, c->rt)) {
        move_leaves(L, c, X_LOAD, c->rt, spvl_slot(L, ptr), 0, d);
        return;
    }
    if (s->kind == T_BOOL)
        UNSUPPORTED("booleans cannot be loaded from memory");
    if (pr->promoted) {
        if (pr->slot != d)
            spvl_emit(L, X_MOV, (uint8_t)n, 0, d, pr->slot, 0, 0, 0);
        return;
    }
    spvl_emit(L, X_LOAD, (uint8_t)n, (uint8_t)s->size, d, spvl_slot(L, ptr), 0,
              aligned_operand(L, c, 4, s->size), 0);
}

void spvl_c_store(loader *L, fnctx *c)
{
    uint32_t ptr = word(L, c->at, 1), obj = word(L, c->at, 2);
    uint32_t ot = value_type(L, obj);
    if (is_aggregate(L, ot)) {
        if (id(L, ptr)->builtin)
            spvl_builtin_escapes(L, ptr);
        if (id(L, obj)->kind == K_CONST || id(L, obj)->kind == K_UNDEF)
            store_const(L, spvl_slot(L, ptr), 0, obj);
        else
            move_leaves(L, c, X_STORE, ot, spvl_slot(L, ptr), 0, spvl_slot(L, obj));
        return;
    }
    ty *s = scalar(L, ot);
    if (s->kind == T_BOOL)
        UNSUPPORTED("booleans cannot be stored to memory");
    idrec *pr = id(L, ptr);
    if (pr->builtin)
        UNSUPPORTED("OpStore to built-in %s: built-ins are read-only",
                    spv_builtin_name(pr->bname) ? spv_builtin_name(pr->bname) : "(unnamed)");
    if (pr->promoted) {
        uint32_t from = spvl_slot(L, obj);
        if (from != pr->slot)
            spvl_emit(L, X_MOV, (uint8_t)comps(L, ot), 0, pr->slot, from, 0, 0, 0);
        return;
    }
    spvl_emit(L, X_STORE, (uint8_t)comps(L, ot), (uint8_t)s->size, 0, spvl_slot(L, ptr), spvl_slot(L, obj),
              aligned_operand(L, c, 3, s->size), 0);
}

void spvl_c_copymemory(loader *L, fnctx *c)
{
    uint32_t dst = word(L, c->at, 1), src = word(L, c->at, 2);
    ty *pt = type_of(L, value_type(L, dst));
    uint64_t size = type_of(L, pt->elem)->size;
    spvl_emit(L, X_MEMCPY, 1, 0, 0, spvl_slot(L, dst), spvl_slot(L, src), SPV_NONE, (uint32_t)size);
}

void spvl_c_copymemorysized(loader *L, fnctx *c)
{
    uint32_t dst = word(L, c->at, 1), src = word(L, c->at, 2), sz = word(L, c->at, 3);
    spvl_emit(L, X_MEMCPY, 1, (uint8_t)scalar(L, value_type(L, sz))->width, 0, spvl_slot(L, dst),
              spvl_slot(L, src), spvl_slot(L, sz), 0);
}

/* Pointer arithmetic of the access-chain family. */
void spvl_c_accesschain(loader *L, fnctx *c)
{
    uint32_t pos = c->at;
    unsigned op = c->op;
    uint32_t rid = word(L, pos, 2), base = word(L, pos, 3);
    if (id(L, base)->builtin) { /* no memory behind it: followed to its loads */
        spvl_builtin_chain(L, c);
        return;
    }
    uint32_t d = spvl_slot(L, rid);
    ty *bt = type_of(L, value_type(L, base));
    if (bt->kind != T_PTR)
        MALFORMED("access chain base is not a pointer");
    uint32_t cur = bt->elem;
    int64_t off = 0;
    uint32_t src = spvl_slot(L, base);
    uint32_t count = op_count(L, pos);
    uint32_t i = 4;
    int first = 1;
    /* OpPtrAccessChain's element operand scales by the pointee's size. */
    int has_element = op == SPV_OpPtrAccessChain || op == SPV_OpInBoundsPtrAccessChain;
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
                uint64_t m = spvl_const_value(L, idx, "a struct member index");
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
            spvl_emit(L, X_PTRADD, 1, (uint8_t)iw, d, first ? src : d, spvl_slot(L, idx), (uint32_t)stride, 0);
            first = 0;
        }
        cur = next;
    }
    if (off < INT32_MIN || off > INT32_MAX)
        UNSUPPORTED("constant pointer offset too large");
    if (first || off)
        spvl_emit(L, X_ADDI, 1, 0, d, first ? src : d, 0, 0, (uint32_t)(int32_t)off);
}

void spvl_c_atomic(loader *L, fnctx *c)
{
    uint32_t pos = c->at, kind = c->info->code;
    uint32_t rt, rid = 0, ptr, value = SPV_NONE, cmp = SPV_NONE;
    if (kind == A_STORE) { /* pointer, scope, semantics, value */
        ptr = word(L, pos, 1);
        value = spvl_slot(L, word(L, pos, 4));
        rt = value_type(L, word(L, pos, 4));
    } else { /* result type and id, pointer, scope, semantics, operands */
        rt = word(L, pos, 1);
        rid = word(L, pos, 2);
        ptr = word(L, pos, 3);
        if (kind == A_CMPXCHG) {
            value = spvl_slot(L, word(L, pos, 7));
            cmp = spvl_slot(L, word(L, pos, 8));
        } else if (kind != A_LOAD && kind != A_INC && kind != A_DEC) {
            value = spvl_slot(L, word(L, pos, 6));
        }
    }
    ty *s = type_of(L, rt);
    if ((s->kind != T_INT && s->kind != T_FLOAT) || (s->width != 32 && s->width != 64))
        UNSUPPORTED("atomics need a 32- or 64-bit integer or float");
    if (s->kind == T_FLOAT && kind != A_LOAD && kind != A_STORE && kind != A_XCHG &&
        kind != A_FADD && kind != A_FMIN && kind != A_FMAX)
        UNSUPPORTED("this atomic operation needs an integer");
    spvl_emit(L, X_ATOMIC, 1, (uint8_t)s->width, rid ? spvl_slot(L, rid) : SPV_NONE, spvl_slot(L, ptr), value,
              kind, cmp);
}

