/* SPIR-V linker: where the ids are in an instruction, and whether the types
 * of two modules are the same.  Each instruction's operands come from the
 * grammar (spv_operands.h, gen_spv_operands.py): ids, literal words and
 * strings, masks whose set bits take parameters, OpSwitch's literals as wide
 * as its selector, and an extended instruction's operands by its set's
 * grammar (OpenCL.std; other sets are refused, as the loader does). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spv_grammar.h"
#include "spv_link.h"
#include "spv_operands.h"

void lk_fail(linker *K, spv_load_status st, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (K->err && K->errlen) {
        if (K->n > 1 && K->pos)
            snprintf(K->err, K->errlen, "%s (module %u, word %u)", msg, K->cur_mod, K->pos);
        else if (K->pos)
            snprintf(K->err, K->errlen, "%s (word %u)", msg, K->pos);
        else
            snprintf(K->err, K->errlen, "%s", msg);
    }
    K->status = st;
    longjmp(K->fail, 1);
}

void *lk_grow(linker *K, void *p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    uint32_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, (size_t)c * elem);
    if (!q)
        lk_fail(K, SPV_LOAD_NO_MEMORY, "out of host memory");
    *cap = c;
    return q;
}

void *lk_calloc(linker *K, size_t n, size_t elem)
{
    void *p = calloc(n ? n : 1, elem);
    if (!p)
        lk_fail(K, SPV_LOAD_NO_MEMORY, "out of host memory");
    return p;
}

static const spv_operands_row *row_of(unsigned op)
{
    size_t lo = 0, hi = sizeof spv_core_operands / sizeof spv_core_operands[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (spv_core_operands[mid].op == op)
            return &spv_core_operands[mid];
        if (spv_core_operands[mid].op < op)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}


uint32_t lk_string_end(linker *K, const uint32_t *ins, uint32_t first)
{
    uint32_t cnt = count(ins);
    for (uint32_t i = first; i < cnt; i++) {
        uint32_t w = ins[i];
        if (!(w & 0xFFu) || !(w & 0xFF00u) || !(w & 0xFF0000u) || !(w & 0xFF000000u))
            return i + 1;
    }
    MALFORMED("string operand is not terminated");
}

const char *lk_string_at(linker *K, const uint32_t *ins, uint32_t first)
{
    lk_string_end(K, ins, first);
    return (const char *)&ins[first];
}

const uint32_t *lk_def_of(linker *K, lkmod *M, uint32_t v)
{
    if (v == 0 || v >= M->bound || !M->def[v])
        MALFORMED("id %u is not defined", v);
    return &M->w[M->def[v]];
}

/* ------------------------------------------------------ the operand walk */

static uint32_t walk_operand(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, char c,
                             lk_id_fn *fn, void *ctx);

static uint32_t need(linker *K, const uint32_t *ins, uint32_t i, uint32_t n)
{
    if (i + n > count(ins))
        MALFORMED("instruction is missing operands");
    return i + n;
}

/* OpSwitch's literals are as wide as its selector (operand 1). */
static uint32_t switch_literal_words(linker *K, lkmod *M, const uint32_t *ins)
{
    const uint32_t *t = lk_def_of(K, M, M->type[ins[1]]);
    if (opcode(t) != SPV_OpTypeInt || count(t) < 3)
        MALFORMED("OpSwitch's selector is not an integer");
    return t[2] > 32 ? 2 : 1;
}

/* A mask operand (MemoryAccess, ImageOperands, LoopControl): each set bit,
 * lowest first, is followed by its parameters. */
static uint32_t walk_mask(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, char c, lk_id_fn *fn,
                          void *ctx)
{
    uint32_t mask = ins[i++];
    for (uint32_t bit = 0; bit < 32; bit++) {
        if (!(mask & (1u << bit)))
            continue;
        const spv_mask_row *r = NULL;
        for (size_t k = 0; k < sizeof spv_mask_params / sizeof spv_mask_params[0]; k++)
            if (spv_mask_params[k].mask == c && spv_mask_params[k].bit == bit)
                r = &spv_mask_params[k];
        if (!r)
            UNSUPPORTED("bit %u of a mask operand is not in the SPIR-V grammar", bit);
        for (const char *p = r->params; *p; p++)
            i = walk_operand(K, M, ins, i, *p, fn, ctx);
    }
    return i;
}

static void walk_layout(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, const char *layout,
                        lk_id_fn *fn, void *ctx);

/* OpExtInst's operands, by its set's grammar (OpenCL.std only). */
static uint32_t walk_extinst(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, lk_id_fn *fn,
                             void *ctx)
{
    const uint32_t *set = lk_def_of(K, M, ins[3]);
    if (opcode(set) != SPV_OpExtInstImport)
        MALFORMED("OpExtInst's set is not an OpExtInstImport");
    const char *name = lk_string_at(K, set, 2);
    if (strcmp(name, "OpenCL.std"))
        UNSUPPORTED("extended instruction set %s is not supported", name);
    uint32_t inst = ins[4];
    if (inst >= sizeof spv_cl_operands / sizeof spv_cl_operands[0] || !spv_cl_operands[inst])
        UNSUPPORTED("OpenCL.std instruction %u is not in its grammar", inst);
    walk_layout(K, M, ins, i, spv_cl_operands[inst], fn, ctx);
    return count(ins);
}

static uint32_t walk_operand(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, char c,
                             lk_id_fn *fn, void *ctx)
{
    uint32_t cnt = count(ins);
    switch (c) {
    case 'T': case 'R': case 'I':
        need(K, ins, i, 1);
        fn(K, M, ins, i, c, ctx);
        return i + 1;
    case 'W': return need(K, ins, i, 1);
    case 'S': return lk_string_end(K, ins, i);
    case 'N': return cnt;
    case 'A':
        for (; i < cnt; i++)
            fn(K, M, ins, i, 'I', ctx);
        return cnt;
    case 'P':
        need(K, ins, i, 2);
        fn(K, M, ins, i, 'I', ctx);
        fn(K, M, ins, i + 1, 'I', ctx);
        return i + 2;
    case 'Q':
        need(K, ins, i, 2);
        fn(K, M, ins, i, 'I', ctx);
        return i + 2;
    case 'L': {
        uint32_t lit = switch_literal_words(K, M, ins);
        need(K, ins, i, lit + 1);
        fn(K, M, ins, i + lit, 'I', ctx);
        return i + lit + 1;
    }
    case 'M': case 'G': case 'O':
        need(K, ins, i, 1);
        return walk_mask(K, M, ins, i, c, fn, ctx);
    case 'E': return walk_extinst(K, M, ins, i, fn, ctx);
    default: MALFORMED("operand letter %c", c);
    }
}

static void walk_layout(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, const char *layout,
                        lk_id_fn *fn, void *ctx)
{
    uint32_t cnt = count(ins);
    for (const char *p = layout; *p; p++) {
        char c = *p, q = (p[1] == '?' || p[1] == '*') ? *++p : 0;
        do {
            if (i >= cnt) {
                if (q)
                    break;
                MALFORMED("instruction is missing operands");
            }
            i = walk_operand(K, M, ins, i, c, fn, ctx);
        } while (q == '*');
    }
    if (i != cnt)
        MALFORMED("instruction has %u words, its operands %u", cnt, i);
}

void lk_walk(linker *K, lkmod *M, const uint32_t *ins, lk_id_fn *fn, void *ctx)
{
    const spv_operands_row *row = row_of(opcode(ins));
    if (!row)
        UNSUPPORTED("opcode %u is not in the SPIR-V grammar", opcode(ins));
    if (opcode(ins) == SPV_OpSpecConstantOp)
        UNSUPPORTED("%s is not supported", row->name);
    walk_layout(K, M, ins, 1, row->operands, fn, ctx);
}

/* ----------------------------------------------------------- type checks */

static void mark_id(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, char role, void *ctx)
{
    (void)K, (void)M, (void)ins;
    ((uint8_t *)ctx)[i] = role == 'R' ? 2 : 1;
}

/* Instructions a (of A) and b (of B) say the same: one opcode, the same
 * literals, and ids that say the same, recursively (types and constants).
 * Pointers compare by storage class alone: LLVM's pointers are opaque, and
 * llvm-spirv guesses each module's pointee types from its own uses (a
 * function's double* out-parameter is a ulong* where the function stores
 * the double's bits); a pointer is passed as its address whatever it says. */
static int same_words(linker *K, lkmod *A, const uint32_t *a, lkmod *B, const uint32_t *b)
{
    if (a[0] != b[0])
        return 0;
    if (opcode(a) == SPV_OpTypePointer && count(a) == 4)
        return a[2] == b[2];
    uint32_t cnt = count(a), depth = K->cmp.n - 1;
    K->cmp.marks[depth] = lk_grow(K, K->cmp.marks[depth], &K->cmp.capmarks[depth], cnt, 1);
    uint8_t *is_id = K->cmp.marks[depth];
    memset(is_id, 0, cnt);
    lk_walk(K, A, a, mark_id, is_id);
    for (uint32_t i = 1; i < cnt; i++) {
        if (is_id[i] == 1 && !lk_same_def(K, A, a[i], B, b[i]))
            return 0;
        if (!is_id[i] && a[i] != b[i])
            return 0;
    }
    return 1;
}

/* Id a of A and id b of B define the same type (or constant).  A pair met
 * again while it is compared (a recursive struct, through a forward pointer)
 * is taken as the same, as structural equality of recursive types goes. */
int lk_same_def(linker *K, lkmod *A, uint32_t a, lkmod *B, uint32_t b)
{
    const uint32_t *x = lk_def_of(K, A, a), *y = lk_def_of(K, B, b);
    for (uint32_t i = 0; i < K->cmp.n; i++)
        if (K->cmp.a[i] == x && K->cmp.b[i] == y)
            return 1;
    if (K->cmp.n == LK_MAX_TYPE_DEPTH)
        UNSUPPORTED("types nested deeper than %u levels cannot be linked", LK_MAX_TYPE_DEPTH);
    K->cmp.a[K->cmp.n] = x;
    K->cmp.b[K->cmp.n] = y;
    K->cmp.n++;
    int same = same_words(K, A, x, B, y);
    K->cmp.n--;
    return same;
}

