/* SPIR-V linker: one or more modules into one program, before the loader.
 *
 * SPIR-V linkage (capability Linkage): a function or variable decorated
 * LinkageAttributes "name" Import in one module is the definition decorated
 * "name" Export in another.  Each module's ids are renumbered past the
 * previous modules' (where the ids are in an instruction comes from the
 * grammar: spv_operands.h), an import's uses become uses of its export, and
 * the modules' sections are merged in the layout SPIR-V requires:
 * capabilities, extensions and extended instruction sets once each, one
 * memory model, every entry point, debug names, annotations, each module's
 * types, constants and variables in its order, then the functions.
 *
 * Refused, naming the symbol: an import no module exports that the program
 * uses (an import nothing uses is dead, and left out), two exports of one
 * name, and an import whose kind or type is not its export's (types compare
 * by structure, as each module has its own ids, and pointers by storage
 * class: spv_link_ids.c).  Before linking, each module's
 * specialization constants (SpecId) take the values the caller gives. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spv_grammar.h"
#include "spv_link.h"
#include "spv_operands.h"

enum { S_CAP, S_EXT, S_SET, S_MODEL, S_ENTRY, S_MODE, S_DEBUG, S_NAME, S_PROCESSED, S_ANNOT,
       S_GLOBAL, S_COUNT };

/* The section of the logical layout a module-scope instruction belongs to. */
static int section_of(unsigned op)
{
    switch (op) {
    case SPV_OpCapability: return S_CAP;
    case SPV_OpExtension: return S_EXT;
    case SPV_OpExtInstImport: return S_SET;
    case SPV_OpMemoryModel: return S_MODEL;
    case SPV_OpEntryPoint: return S_ENTRY;
    case SPV_OpExecutionMode: case SPV_OpExecutionModeId: return S_MODE;
    case SPV_OpString: case SPV_OpSourceExtension: case SPV_OpSource:
    case SPV_OpSourceContinued: return S_DEBUG;
    case SPV_OpName: case SPV_OpMemberName: return S_NAME;
    case SPV_OpModuleProcessed: return S_PROCESSED;
    case SPV_OpDecorate: case SPV_OpMemberDecorate: case SPV_OpDecorationGroup:
    case SPV_OpGroupDecorate: case SPV_OpGroupMemberDecorate: case SPV_OpDecorateId:
    case SPV_OpDecorateString: case SPV_OpMemberDecorateString: return S_ANNOT;
    default: return S_GLOBAL;
    }
}

/* ------------------------------------------------------- reading modules */

typedef struct defctx {
    uint32_t pos, type;
    int counts_uses;
} defctx;

/* Records definitions, result types and uses. */
static void note_id(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, char role, void *vctx)
{
    defctx *d = vctx;
    uint32_t v = ins[i];
    if (v == 0 || v >= M->bound)
        MALFORMED("id %u is outside the module's bound %u", v, M->bound);
    if (role == 'T') {
        d->type = v;
    } else if (role == 'R') {
        if (M->def[v])
            MALFORMED("id %u is defined twice", v);
        M->def[v] = d->pos;
        M->type[v] = d->type;
    } else if (d->counts_uses && M->uses[v] < UINT32_MAX) {
        M->uses[v]++;
    }
}

/* Names, decorations and entry points refer to ids without using them. */
static int refers_only(unsigned op)
{
    switch (op) {
    case SPV_OpName: case SPV_OpMemberName: case SPV_OpDecorate: case SPV_OpMemberDecorate:
    case SPV_OpGroupDecorate: case SPV_OpGroupMemberDecorate: case SPV_OpDecorateId:
    case SPV_OpDecorateString: case SPV_OpMemberDecorateString: case SPV_OpExecutionMode:
    case SPV_OpExecutionModeId:
        return 1;
    default:
        return 0;
    }
}

static void add_symbol(linker *K, lkmod *M, uint32_t at)
{
    const uint32_t *ins = &M->w[at];
    uint32_t end = lk_string_end(K, ins, 3);
    if (end >= count(ins))
        MALFORMED("LinkageAttributes without a linkage type");
    uint32_t linkage = ins[end];
    if (linkage != SPV_LinkageType_Export && linkage != SPV_LinkageType_Import)
        UNSUPPORTED("linkage type %u of %s is not supported", linkage, lk_string_at(K, ins, 3));
    K->syms = lk_grow(K, K->syms, &K->capsyms, K->nsyms + 1, sizeof *K->syms);
    K->syms[K->nsyms++] = (lksym){lk_string_at(K, ins, 3), K->cur_mod, ins[1], linkage, at};
}

/* A decoration's target (operand 1) is decorated; LinkageAttributes makes
 * a symbol, BuiltIn a built-in. */
static void note_decoration(linker *K, lkmod *M, uint32_t at)
{
    const uint32_t *ins = &M->w[at];
    M->flags[ins[1]] |= LK_DECORATED;
    if (opcode(ins) != SPV_OpDecorate || count(ins) < 3)
        return;
    if (ins[2] == SPV_Decoration_LinkageAttributes)
        add_symbol(K, M, at);
    if (ins[2] == SPV_Decoration_BuiltIn)
        M->flags[ins[1]] |= LK_BUILTIN;
}

static void check_header(linker *K, lkmod *M)
{
    const uint32_t *w = M->w;
    if (M->nw < 5 || w[0] != SPV_MAGIC_NUMBER)
        MALFORMED("not a SPIR-V module (bad magic number)");
    if (w[1] > 0x00010600u || w[1] < 0x00010000u)
        UNSUPPORTED("SPIR-V version %u.%u is not supported (1.0 to 1.6 are)",
                    (w[1] >> 16) & 0xFF, (w[1] >> 8) & 0xFF);
    M->bound = w[3];
    if (M->bound == 0 || M->bound > LK_MAX_BOUND)
        MALFORMED("id bound %u is not sensible", M->bound);
}

static void scan_module(linker *K, lkmod *M)
{
    check_header(K, M);
    M->def = lk_calloc(K, M->bound, sizeof *M->def);
    M->type = lk_calloc(K, M->bound, sizeof *M->type);
    M->map = lk_calloc(K, M->bound, sizeof *M->map);
    M->uses = lk_calloc(K, M->bound, sizeof *M->uses);
    M->flags = lk_calloc(K, M->bound, 1);
    M->first_fn = M->nw;
    for (uint32_t at = 5, cnt; at < M->nw; at += cnt) {
        K->pos = at;
        cnt = count(&M->w[at]);
        if (cnt == 0 || at + cnt > M->nw)
            MALFORMED("truncated instruction");
        unsigned op = opcode(&M->w[at]);
        if (op == SPV_OpFunction && M->first_fn == M->nw)
            M->first_fn = at;
        defctx d = {at, 0, !refers_only(op)};
        lk_walk(K, M, &M->w[at], note_id, &d);
        if (section_of(op) == S_ANNOT && op != SPV_OpDecorationGroup)
            note_decoration(K, M, at);
        if (op == SPV_OpTypeForwardPointer)
            M->flags[M->w[at + 1]] |= LK_FORWARD;
    }
    K->pos = 0;
    for (uint32_t v = 1; v < M->bound; v++)
        M->map[v] = M->base + v;
}

/* ----------------------------------------------- specialization constants */

/* The bytes of a constant of type t (bool: 1) and its words. */
static uint32_t spec_bytes(linker *K, lkmod *M, uint32_t t, uint32_t *words, int *is_signed)
{
    const uint32_t *y = lk_def_of(K, M, t);
    unsigned op = opcode(y);
    *is_signed = op == SPV_OpTypeInt && count(y) > 3 && y[3];
    if ((op != SPV_OpTypeInt && op != SPV_OpTypeFloat) || count(y) < 3 || y[2] % 8 ||
        y[2] == 0 || y[2] > 64)
        UNSUPPORTED("specialization constants of this type are not supported");
    *words = y[2] > 32 ? 2 : 1;
    return y[2] / 8;
}

/* Writes value (of the constant's size) into OpSpecConstant at `at`;
 * narrower than 32 bits, sign-extended for signed integers (as SPIR-V
 * literals are). */
static void set_spec_value(linker *K, lkmod *M, uint32_t at, const void *value)
{
    uint32_t *ins = &M->w[at], words;
    int is_signed;
    uint32_t bytes = spec_bytes(K, M, ins[1], &words, &is_signed);
    if (count(ins) != 3 + words)
        MALFORMED("OpSpecConstant's value has %u words, its type %u", count(ins) - 3, words);
    uint64_t v = 0;
    memcpy(&v, value, bytes);
    if (bytes < 4 && is_signed && (v >> (bytes * 8 - 1)) & 1)
        v |= ~0ull << (bytes * 8);
    ins[3] = (uint32_t)v;
    if (words == 2)
        ins[4] = (uint32_t)(v >> 32);
}

/* The id decorated SpecId spec in module M. */
static uint32_t spec_target(linker *K, lkmod *M, uint32_t spec)
{
    for (uint32_t at = 5; at < M->first_fn; at += count(&M->w[at])) {
        const uint32_t *ins = &M->w[at];
        if (opcode(ins) == SPV_OpDecorate && count(ins) >= 4 && ins[2] == SPV_Decoration_SpecId &&
            ins[3] == spec)
            return ins[1];
    }
    LINK_FAIL("specialization constant %u is not in the module (no SpecId %u)", spec, spec);
}

/* Gives the module's specialization constants the caller's values: an
 * OpSpecConstant its value (as many bytes as its type), an
 * OpSpecConstantTrue or False the truth of a byte. */
static void specialize(linker *K, lkmod *M, const spv_input *in)
{
    if (in->nconst && (!in->const_ids || !in->const_values))
        MALFORMED("specialization constants without ids or values");
    for (uint32_t k = 0; k < in->nconst; k++) {
        uint32_t v = spec_target(K, M, in->const_ids[k]);
        if (!in->const_values[k])
            MALFORMED("specialization constant %u has no value", in->const_ids[k]);
        uint32_t at = M->def[v];
        if (!at)
            MALFORMED("SpecId %u decorates an undefined id", in->const_ids[k]);
        K->pos = at;
        uint32_t *ins = &M->w[at];
        if (opcode(ins) == SPV_OpSpecConstant) {
            set_spec_value(K, M, at, in->const_values[k]);
        } else if (opcode(ins) == SPV_OpSpecConstantTrue || opcode(ins) == SPV_OpSpecConstantFalse) {
            uint8_t b;
            memcpy(&b, in->const_values[k], 1);
            ins[0] = (ins[0] & 0xFFFF0000u) | (b ? SPV_OpSpecConstantTrue : SPV_OpSpecConstantFalse);
        } else {
            UNSUPPORTED("SpecId %u decorates an instruction that is not a scalar specialization "
                        "constant", in->const_ids[k]);
        }
    }
    K->pos = 0;
}

/* ----------------------------------------------------------- the symbols */

static int by_name(const void *x, const void *y)
{
    const lksym *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    if (c)
        return c;
    if (a->linkage != b->linkage) /* exports first */
        return a->linkage == SPV_LinkageType_Export ? -1 : 1;
    return a->mod < b->mod ? -1 : a->mod > b->mod;
}

/* What must match between an import and its export: a function's function
 * type, a variable's type (its pointee) and storage class (*storage). */
static uint32_t linked_type(linker *K, lkmod *M, const lksym *s, int *is_function,
                            uint32_t *storage)
{
    const uint32_t *d = lk_def_of(K, M, s->id);
    *is_function = opcode(d) == SPV_OpFunction;
    *storage = 0;
    if (*is_function && count(d) >= 5)
        return d[4];
    if (opcode(d) == SPV_OpVariable && count(d) >= 4) {
        const uint32_t *p = lk_def_of(K, M, d[1]);
        if (opcode(p) != SPV_OpTypePointer || count(p) != 4)
            MALFORMED("variable %s is not of a pointer type", s->name);
        *storage = d[3];
        return p[3];
    }
    MALFORMED("%s is decorated LinkageAttributes but is no function or variable", s->name);
}

/* Whether the function at `at` has a body (a label before its end). */
static int has_body(lkmod *M, uint32_t at)
{
    for (at += count(&M->w[at]); at < M->nw; at += count(&M->w[at])) {
        unsigned op = opcode(&M->w[at]);
        if (op == SPV_OpLabel)
            return 1;
        if (op == SPV_OpFunctionEnd)
            return 0;
    }
    return 0;
}

/* The import leaves the program: its declaration, parameters, names and
 * decorations. */
static void drop_import(lkmod *M, uint32_t v)
{
    M->flags[v] |= LK_DROPPED;
    uint32_t at = M->def[v];
    if (opcode(&M->w[at]) != SPV_OpFunction)
        return;
    for (at += count(&M->w[at]); at < M->nw && opcode(&M->w[at]) == SPV_OpFunctionParameter;
         at += count(&M->w[at]))
        M->flags[M->w[at + 2]] |= LK_DROPPED;
}

static void bind_import(linker *K, const lksym *imp, const lksym *exp)
{
    lkmod *I = &K->m[imp->mod], *E = &K->m[exp->mod];
    int fi, fe;
    uint32_t si, se;
    uint32_t ti = linked_type(K, I, imp, &fi, &si), te = linked_type(K, E, exp, &fe, &se);
    K->pos = imp->pos;
    K->cur_mod = imp->mod;
    if (fi != fe)
        LINK_FAIL("%s is imported as a %s and exported as a %s", imp->name,
                  fi ? "function" : "variable", fe ? "function" : "variable");
    if (fi && has_body(I, I->def[imp->id]))
        MALFORMED("imported function %s has a body", imp->name);
    if (fe && !has_body(E, E->def[exp->id]))
        MALFORMED("exported function %s has no body", exp->name);
    if (si != se || !lk_same_def(K, I, ti, E, te))
        LINK_FAIL("%s is imported with another type than it is exported with (by module %u)",
                  imp->name, exp->mod);
    drop_import(I, imp->id);
    I->map[imp->id] = E->map[exp->id];
}

/* Binds each import of one name (syms[0..n), exports first) to its export. */
static void resolve_name(linker *K, const lksym *s, uint32_t n)
{
    uint32_t exports = 0;
    while (exports < n && s[exports].linkage == SPV_LinkageType_Export)
        exports++;
    if (exports > 1) {
        K->pos = s[1].pos;
        K->cur_mod = s[1].mod;
        LINK_FAIL("%s is exported twice (by modules %u and %u)", s[0].name, s[0].mod, s[1].mod);
    }
    for (uint32_t i = exports; i < n; i++) {
        lkmod *M = &K->m[s[i].mod];
        if (exports) {
            bind_import(K, &s[i], &s[0]);
        } else if (M->uses[s[i].id]) {
            K->pos = s[i].pos;
            K->cur_mod = s[i].mod;
            LINK_FAIL("%s is imported, and no module exports it", s[i].name);
        } else {
            drop_import(M, s[i].id); /* declared, never used */
        }
    }
}

static void resolve_symbols(linker *K)
{
    /* A built-in variable is the device's, whatever its linkage says. */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < K->nsyms; i++)
        if (!(K->m[K->syms[i].mod].flags[K->syms[i].id] & LK_BUILTIN))
            K->syms[kept++] = K->syms[i];
    K->nsyms = kept;
    if (K->nsyms)
        qsort(K->syms, K->nsyms, sizeof *K->syms, by_name);
    for (uint32_t i = 0, j; i < K->nsyms; i = j) {
        for (j = i + 1; j < K->nsyms && !strcmp(K->syms[i].name, K->syms[j].name); j++)
            ;
        resolve_name(K, &K->syms[i], j - i);
    }
    K->pos = 0;
}

/* ----------------------------------------------------------- the program */

static void renumber(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, char role, void *ctx)
{
    (void)K, (void)role;
    ((uint32_t *)ctx)[i] = M->map[ins[i]];
}

static void emit(linker *K, lkmod *M, const uint32_t *ins)
{
    uint32_t cnt = count(ins);
    K->out = lk_grow(K, K->out, &K->capout, K->nout + cnt, sizeof *K->out);
    uint32_t *o = &K->out[K->nout];
    memcpy(o, ins, (size_t)cnt * 4);
    lk_walk(K, M, ins, renumber, o);
    K->nout += cnt;
}

static void take_result(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, char role, void *ctx)
{
    (void)K, (void)M;
    if (role == 'R')
        *(uint32_t *)ctx = ins[i];
}

static uint32_t result_of(linker *K, lkmod *M, const uint32_t *ins)
{
    uint32_t r = 0;
    lk_walk(K, M, ins, take_result, &r);
    return r;
}

/* An instruction of the same opcode and string (at word `first`) already
 * written: an extension, a kernel's name. */
static const uint32_t *written(linker *K, const uint32_t *ins, uint32_t first)
{
    const char *s = lk_string_at(K, ins, first);
    for (uint32_t k = 0; k < K->nmarks; k++) {
        const uint32_t *o = &K->out[K->marks[k]];
        if (opcode(o) == opcode(ins) && !strcmp(lk_string_at(K, o, first), s))
            return o;
    }
    return NULL;
}

static void mark_written(linker *K)
{
    K->marks = lk_grow(K, K->marks, &K->capmarks, K->nmarks + 1, sizeof *K->marks);
    K->marks[K->nmarks++] = K->nout;
}

static int keep_capability(linker *K, const uint32_t *ins)
{
    for (uint32_t k = 0; k < K->ncaps; k++)
        if (K->caps[k] == ins[1])
            return 0;
    K->caps = lk_grow(K, K->caps, &K->capcaps, K->ncaps + 1, sizeof *K->caps);
    K->caps[K->ncaps++] = ins[1];
    return 1;
}

static int keep_model(linker *K, const uint32_t *ins)
{
    if (!K->model_mod) {
        K->model_mod = K->cur_mod + 1;
        return 1;
    }
    lkmod *F = &K->m[K->model_mod - 1];
    for (uint32_t at = 5; at < F->first_fn; at += count(&F->w[at]))
        if (opcode(&F->w[at]) == SPV_OpMemoryModel && memcmp(&F->w[at], ins, 12))
            LINK_FAIL("the modules have different memory models");
    return 0;
}

/* Decorations and names of what left the program go with it, and so do the
 * linkage decorations: the program is linked. */
static int keep_annotation(linker *K, lkmod *M, const uint32_t *ins)
{
    unsigned op = opcode(ins);
    if (op == SPV_OpDecorationGroup)
        return 1;
    if (op == SPV_OpGroupDecorate || op == SPV_OpGroupMemberDecorate) {
        for (uint32_t i = 2; i < count(ins); i += op == SPV_OpGroupDecorate ? 1 : 2)
            if (ins[i] < M->bound && (M->flags[ins[i]] & LK_DROPPED))
                UNSUPPORTED("a decoration group decorates an imported symbol");
        return 1;
    }
    if (M->flags[ins[1]] & LK_DROPPED)
        return 0;
    return !(op == SPV_OpDecorate && ins[2] == SPV_Decoration_LinkageAttributes);
}

static int keep(linker *K, lkmod *M, const uint32_t *ins, int section)
{
    switch (section) {
    case S_CAP: return keep_capability(K, ins);
    case S_EXT: return !written(K, ins, 1);
    case S_MODEL: return keep_model(K, ins);
    case S_ENTRY:
        if (written(K, ins, 3))
            LINK_FAIL("kernel %s is in two modules", lk_string_at(K, ins, 3));
        return 1;
    case S_NAME: return !(M->flags[ins[1]] & LK_DROPPED);
    case S_ANNOT: return keep_annotation(K, M, ins);
    case S_SET: case S_GLOBAL: return !(M->flags[result_of(K, M, ins)] & LK_DROPPED);
    default: return 1;
    }
}

static void emit_section(linker *K, int section)
{
    for (K->cur_mod = 0; K->cur_mod < K->n; K->cur_mod++) {
        lkmod *M = &K->m[K->cur_mod];
        for (uint32_t at = 5; at < M->first_fn; at += count(&M->w[at])) {
            const uint32_t *ins = &M->w[at];
            K->pos = at;
            if (section_of(opcode(ins)) != section || !keep(K, M, ins, section))
                continue;
            if (section == S_EXT || section == S_ENTRY)
                mark_written(K);
            emit(K, M, ins);
        }
    }
}

/* Every function declaration first (bodies == 0), then every definition. */
static void emit_functions(linker *K, int bodies)
{
    for (K->cur_mod = 0; K->cur_mod < K->n; K->cur_mod++) {
        lkmod *M = &K->m[K->cur_mod];
        for (uint32_t at = M->first_fn, end; at < M->nw; at = end) {
            K->pos = at;
            if (opcode(&M->w[at]) != SPV_OpFunction)
                MALFORMED("an instruction outside a function after the first function");
            for (end = at; end < M->nw && opcode(&M->w[end]) != SPV_OpFunctionEnd;)
                end += count(&M->w[end]);
            if (end == M->nw)
                MALFORMED("a function without OpFunctionEnd");
            end += count(&M->w[end]);
            if (has_body(M, at) != bodies || (M->flags[M->w[at + 2]] & LK_DROPPED))
                continue;
            for (uint32_t p = at; p < end; p += count(&M->w[p]))
                emit(K, M, &M->w[p]);
        }
    }
}

/* One OpExtInstImport per set: the others' ids become the first's. */
static void merge_sets(linker *K)
{
    for (uint32_t i = 0; i < K->n; i++) {
        lkmod *M = &K->m[i];
        for (uint32_t at = 5; at < M->first_fn; at += count(&M->w[at])) {
            if (opcode(&M->w[at]) != SPV_OpExtInstImport)
                continue;
            const char *name = lk_string_at(K, &M->w[at], 2);
            for (uint32_t j = 0; j <= i; j++) {
                lkmod *F = &K->m[j];
                uint32_t stop = j == i ? at : F->first_fn, found = 0;
                for (uint32_t p = 5; p < stop && !found; p += count(&F->w[p]))
                    if (opcode(&F->w[p]) == SPV_OpExtInstImport &&
                        !strcmp(lk_string_at(K, &F->w[p], 2), name))
                        found = F->w[p + 1];
                if (found) {
                    M->flags[M->w[at + 1]] |= LK_DROPPED;
                    M->map[M->w[at + 1]] = F->map[found];
                    break;
                }
            }
        }
    }
}

/* Where the result of a type or constant that modules may share is (1 or
 * 2), or 0: not specialization constants, not forward-declared pointers. */
static uint32_t shared_result(lkmod *M, const uint32_t *ins)
{
    uint32_t at;
    switch (opcode(ins)) {
    case SPV_OpTypeVoid: case SPV_OpTypeBool: case SPV_OpTypeInt: case SPV_OpTypeFloat:
    case SPV_OpTypeVector: case SPV_OpTypeMatrix: case SPV_OpTypeArray:
    case SPV_OpTypeRuntimeArray: case SPV_OpTypeStruct: case SPV_OpTypeOpaque:
    case SPV_OpTypePointer: case SPV_OpTypeFunction: case SPV_OpTypeEvent:
    case SPV_OpTypeDeviceEvent: case SPV_OpTypeReserveId: case SPV_OpTypeQueue:
    case SPV_OpTypeSampler: case SPV_OpTypeImage: case SPV_OpTypeSampledImage:
    case SPV_OpTypePipe:
        at = 1;
        break;
    case SPV_OpConstantTrue: case SPV_OpConstantFalse: case SPV_OpConstant:
    case SPV_OpConstantComposite: case SPV_OpConstantNull: case SPV_OpConstantSampler:
        at = 2;
        break;
    default:
        return 0;
    }
    if (count(ins) <= at || (M->flags[ins[at]] & (LK_DECORATED | LK_FORWARD)))
        return 0;
    return at;
}

static uint32_t hash_words(const uint32_t *w, uint32_t n)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ w[i]) * 16777619u;
    return h;
}

static void rehash(linker *K)
{
    uint32_t size = K->sh.tsize ? K->sh.tsize * 2 : 1024;
    uint32_t *t = lk_calloc(K, size, sizeof *t);
    for (uint32_t k = 0; k < K->sh.n; k++) {
        const uint32_t *w = &K->out[K->sh.pos[k]];
        uint32_t h = hash_words(w, count(w)) & (size - 1);
        while (t[h])
            h = (h + 1) & (size - 1);
        t[h] = k + 1;
    }
    free(K->sh.table);
    K->sh.table = t;
    K->sh.tsize = size;
}

/* The id of a type or constant of an earlier module that says what this
 * one (renumbered, its result zeroed, at the end of out) says, or 0 after
 * keeping it as the first of its kind. */
static uint32_t shared_id(linker *K, uint32_t start, uint32_t id)
{
    if (2 * (K->sh.n + 1) > K->sh.tsize)
        rehash(K);
    const uint32_t *mine = &K->out[start];
    uint32_t cnt = count(mine), mask = K->sh.tsize - 1, h = hash_words(mine, cnt) & mask;
    for (; K->sh.table[h]; h = (h + 1) & mask) {
        uint32_t k = K->sh.table[h] - 1;
        if (!memcmp(&K->out[K->sh.pos[k]], mine, (size_t)cnt * 4))
            return K->sh.id[k];
    }
    uint32_t need = K->sh.n + 1;
    K->sh.pos = lk_grow(K, K->sh.pos, &K->sh.cap, need, sizeof *K->sh.pos);
    K->sh.id = lk_grow(K, K->sh.id, &K->sh.capid, need, sizeof *K->sh.id);
    K->sh.pos[K->sh.n] = start;
    K->sh.id[K->sh.n] = id;
    K->sh.table[h] = ++K->sh.n;
    return 0;
}

/* One of each type and constant: a later module's copy of one (the same
 * words, once renumbered) becomes the first's, as SPIR-V wants of types.
 * Decorated ones stay apart. */
static void merge_types(linker *K)
{
    for (K->cur_mod = 0; K->cur_mod < K->n; K->cur_mod++) {
        lkmod *M = &K->m[K->cur_mod];
        for (uint32_t at = 5; at < M->first_fn; at += count(&M->w[at])) {
            const uint32_t *ins = &M->w[at];
            uint32_t r = shared_result(M, ins), start = K->nout;
            if (!r)
                continue;
            K->pos = at;
            emit(K, M, ins);
            K->out[start + r] = 0;
            uint32_t same = shared_id(K, start, M->map[ins[r]]);
            if (same) {
                K->nout = start;
                M->flags[ins[r]] |= LK_DROPPED;
                M->map[ins[r]] = same;
            }
        }
    }
    K->nout = 0; /* the copies were only for comparing */
    K->pos = 0;
}

static void read_module(linker *K, uint32_t i, const spv_input *in, uint32_t *total)
{
    lkmod *M = &K->m[i];
    K->cur_mod = i;
    if (!in->bytes || in->size % 4 || in->size < 20 || in->size / 4 > UINT32_MAX)
        MALFORMED("module %u: a SPIR-V module is a whole number of 32-bit words (got %zu bytes)", i,
                  in->size);
    M->w = malloc(in->size);
    if (!M->w)
        lk_fail(K, SPV_LOAD_NO_MEMORY, "out of host memory");
    memcpy(M->w, in->bytes, in->size);
    M->nw = (uint32_t)(in->size / 4);
    check_header(K, M);
    M->base = *total;
    *total += M->bound - 1;
    if (*total >= LK_MAX_BOUND)
        UNSUPPORTED("the program needs more than %u ids", LK_MAX_BOUND);
    scan_module(K, M);
    specialize(K, M, in);
}

static void write_program(linker *K, uint32_t total)
{
    uint32_t version = 0;
    for (uint32_t i = 0; i < K->n; i++)
        if (K->m[i].w[1] > version)
            version = K->m[i].w[1];
    K->out = lk_grow(K, K->out, &K->capout, 5, sizeof *K->out);
    uint32_t header[5] = {SPV_MAGIC_NUMBER, version, 0, total + 1, 0};
    memcpy(K->out, header, sizeof header);
    K->nout = 5;
    for (int s = 0; s < S_COUNT; s++)
        emit_section(K, s);
    emit_functions(K, 0);
    emit_functions(K, 1);
    K->pos = 0;
}

static void release(linker *K)
{
    for (uint32_t i = 0; K->m && i < K->n; i++) {
        lkmod *M = &K->m[i];
        free(M->w);
        free(M->def);
        free(M->type);
        free(M->map);
        free(M->uses);
        free(M->flags);
    }
    free(K->sh.pos);
    free(K->sh.id);
    free(K->sh.table);
    for (uint32_t d = 0; d < LK_MAX_TYPE_DEPTH; d++)
        free(K->cmp.marks[d]);
    free(K->m);
    free(K->syms);
    free(K->caps);
    free(K->marks);
}

uint32_t *spv_link(const spv_input *in, uint32_t n, size_t *out_bytes, spv_load_status *status,
                   char *err, size_t errlen)
{
    linker K;
    memset(&K, 0, sizeof K);
    K.err = err;
    K.errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
    if (setjmp(K.fail)) {
        release(&K);
        free(K.out);
        *status = K.status;
        return NULL;
    }
    if (n == 0 || !in)
        lk_fail(&K, SPV_LOAD_MALFORMED, "no modules to link");
    K.m = lk_calloc(&K, n, sizeof *K.m);
    K.n = n;
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        read_module(&K, i, &in[i], &total);
    resolve_symbols(&K);
    if (n == 1) {
        /* Nothing to merge: the module's own words (specialized), so that
         * the loader's messages give word offsets into it. */
        K.out = K.m[0].w;
        K.nout = K.m[0].nw;
        K.m[0].w = NULL;
    } else {
        merge_sets(&K);
        merge_types(&K);
        write_program(&K, total);
    }
    release(&K);
    *out_bytes = (size_t)K.nout * 4;
    *status = SPV_LOAD_OK;
    return K.out;
}
