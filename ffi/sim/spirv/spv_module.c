/* SPIR-V loader: the module.  Checks the header and the module-scope
 * instructions (capabilities, extensions, memory model, entry points,
 * execution modes, decorations, types, constants, variables), lays out the
 * program-scope variables, compiles each function (spv_function.c) and
 * describes each kernel.  Anything outside the subset the interpreter runs is
 * refused here, at module creation, with the instruction's name and word
 * offset: a kernel never runs with a construct the executor would get wrong. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "spv_load.h"

static uint8_t builtin_of(unsigned b)
{
    switch (b) {
    case SPV_BuiltIn_NumWorkgroups: return 1 + B_NUM_GROUPS;
    case SPV_BuiltIn_WorkgroupSize: return 1 + B_GROUP_SIZE;
    case SPV_BuiltIn_WorkgroupId: return 1 + B_GROUP_ID;
    case SPV_BuiltIn_LocalInvocationId: return 1 + B_LOCAL_ID;
    case SPV_BuiltIn_GlobalInvocationId: return 1 + B_GLOBAL_ID;
    case SPV_BuiltIn_LocalInvocationIndex: return 1 + B_LOCAL_INDEX;
    case SPV_BuiltIn_WorkDim: return 1 + B_WORK_DIM;
    case SPV_BuiltIn_GlobalSize: return 1 + B_GLOBAL_SIZE;
    case SPV_BuiltIn_EnqueuedWorkgroupSize: return 1 + B_ENQUEUED_GROUP_SIZE;
    case SPV_BuiltIn_GlobalOffset: return 1 + B_GLOBAL_OFFSET;
    case SPV_BuiltIn_GlobalLinearId: return 1 + B_GLOBAL_LINEAR_ID;
    case SPV_BuiltIn_SubgroupSize: return 1 + B_SUBGROUP_SIZE;
    case SPV_BuiltIn_SubgroupMaxSize: return 1 + B_SUBGROUP_MAX_SIZE;
    case SPV_BuiltIn_NumSubgroups: return 1 + B_NUM_SUBGROUPS;
    /* enqueued: no non-uniform groups */
    case SPV_BuiltIn_NumEnqueuedSubgroups: return 1 + B_NUM_SUBGROUPS;
    case SPV_BuiltIn_SubgroupId: return 1 + B_SUBGROUP_ID;
    case SPV_BuiltIn_SubgroupLocalInvocationId: return 1 + B_SUBGROUP_LOCAL_ID;
    default: return 0;
    }
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

static int capability_ok(uint32_t c)
{
    switch (c) {
    case SPV_Capability_Addresses:
    case SPV_Capability_Linkage:
    case SPV_Capability_Kernel:
    case SPV_Capability_Vector16:
    case SPV_Capability_Float16Buffer: /* half storage, converted explicitly */
    case SPV_Capability_Float16:       /* half arithmetic, rounded as IEEE half */
    case SPV_Capability_Float64:
    case SPV_Capability_Int64:
    case SPV_Capability_Int64Atomics:
    case SPV_Capability_Groups:
    case SPV_Capability_Int16:
    case SPV_Capability_GenericPointer:
    case SPV_Capability_Int8:
    case SPV_Capability_GroupNonUniform:
    case SPV_Capability_GroupNonUniformVote:
    case SPV_Capability_GroupNonUniformArithmetic:
    case SPV_Capability_GroupNonUniformBallot:
    case SPV_Capability_GroupNonUniformShuffle:
    case SPV_Capability_GroupNonUniformShuffleRelative:
    case SPV_Capability_SubgroupShuffleINTEL:
    case SPV_Capability_AtomicFloat32AddEXT:
    case SPV_Capability_AtomicFloat64AddEXT:
    case SPV_Capability_AtomicFloat32MinMaxEXT:
    case SPV_Capability_AtomicFloat64MinMaxEXT:
    /* Hints that are exact to ignore: OpAssumeTrueKHR runs as nothing and
     * OpExpectKHR as its value; aliasing scopes and the INTEL fast-math
     * flags only permit what the sim never does (it computes each operation
     * exactly as written, in order). */
    case SPV_Capability_ExpectAssumeKHR:
    case SPV_Capability_MemoryAccessAliasingINTEL:
    case SPV_Capability_FPFastMathModeINTEL:
    /* Functions the compiler must not optimise (OpFunction's OptNoneINTEL
     * control): the sim optimises nothing, and ignores function controls. */
    case SPV_Capability_OptNoneINTEL:
    /* OpGroupIMulKHR ... OpGroupLogicalXorKHR: the collectives' reductions
     * and scans, at sub-group and work-group scope. */
    case SPV_Capability_GroupUniformArithmeticKHR:
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
        "SPV_KHR_expect_assume", "SPV_INTEL_memory_access_aliasing",
        "SPV_INTEL_fp_fast_math_mode", "SPV_KHR_uniform_group_instructions",
        "SPV_INTEL_optnone",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(s, ok[i]))
            return 1;
    return 0;
}

/* ------------------------------------------------------- module scope */

/* The module-scope pass: where it is, and what it has found. */
typedef struct modctx {
    uint32_t at, cnt;
    int memory_model;
    uint32_t *entries; /* positions of OpEntryPoint */
    uint32_t nentries, capentries;
    uint32_t capfb;
} modctx;

typedef void module_fn(loader *L, modctx *m);

static void m_ignore(loader *L, modctx *m)
{
    (void)L;
    (void)m;
}

static void m_capability(loader *L, modctx *m)
{
    uint32_t cap = word(L, m->at, 1);
    const char *name = spv_capability_name(cap);
    if (!capability_ok(cap))
        UNSUPPORTED("capability %s (%u) is not supported by levelzero-sim", name ? name : "?",
                    cap);
}

static void m_extension(loader *L, modctx *m)
{
    const char *s = spvl_string_at(L, m->at, 1, NULL);
    if (!extension_ok(s))
        UNSUPPORTED("extension %s is not supported", s);
}

static void m_extinstimport(loader *L, modctx *m)
{
    const char *s = spvl_string_at(L, m->at, 2, NULL);
    if (strcmp(s, "OpenCL.std"))
        UNSUPPORTED("extended instruction set %s is not supported", s);
    id(L, word(L, m->at, 1))->kind = K_EXTSET;
    L->opencl_set = word(L, m->at, 1);
}

static void m_memorymodel(loader *L, modctx *m)
{
    if (word(L, m->at, 1) != SPV_AddressingModel_Physical64 ||
        word(L, m->at, 2) != SPV_MemoryModel_OpenCL)
        UNSUPPORTED("only the Physical64 addressing and OpenCL memory models are supported");
    m->memory_model = 1;
}

static void m_entrypoint(loader *L, modctx *m)
{
    if (word(L, m->at, 1) != SPV_ExecutionModel_Kernel)
        UNSUPPORTED("only Kernel entry points are supported");
    m->entries = spvl_grow(L, m->entries, &m->capentries, m->nentries + 1, sizeof *m->entries);
    m->entries[m->nentries++] = m->at;
}

static void m_execmode(loader *L, modctx *m)
{
    uint32_t mode = word(L, m->at, 2);
    if (mode == SPV_ExecutionMode_ContractionOff || mode == SPV_ExecutionMode_LocalSize ||
        mode == SPV_ExecutionMode_LocalSizeHint || mode == SPV_ExecutionMode_VecTypeHint)
        return;
    if (mode == SPV_ExecutionMode_SubgroupSize && word(L, m->at, 3) == SPV_SUBGROUP_SIZE)
        return;
    UNSUPPORTED("execution mode %u is not supported", mode);
}

static void m_decorate(loader *L, modctx *m)
{
    uint32_t target = word(L, m->at, 1), dec = word(L, m->at, 2);
    idrec *r = id(L, target);
    if (dec == SPV_Decoration_BuiltIn) {
        r->builtin = builtin_of(word(L, m->at, 3));
        r->bname = (uint16_t)word(L, m->at, 3);
        r->bvar = target;
        if (!r->builtin)
            UNSUPPORTED("built-in %u is not supported", word(L, m->at, 3));
    } else if (dec == SPV_Decoration_SaturatedConversion) {
        r->sat = 1;
    } else if (dec == SPV_Decoration_FPRoundingMode) {
        r->round = (uint8_t)(word(L, m->at, 3) + 1);
    } else if (dec == SPV_Decoration_CPacked) {
        r->packed = 1;
    } else if (dec == SPV_Decoration_FuncParamAttr &&
               word(L, m->at, 3) == SPV_FunctionParameterAttribute_ByVal) {
        r->byval = 1;
    }
}

static void m_type(loader *L, modctx *m) { spvl_define_type(L, m->at, opcode_at(L, m->at)); }

static void m_constant(loader *L, modctx *m)
{
    spvl_define_constant(L, m->at, opcode_at(L, m->at));
}

static void m_undef(loader *L, modctx *m)
{
    idrec *r = id(L, word(L, m->at, 2));
    r->kind = K_UNDEF;
    r->type = word(L, m->at, 1);
}

static void m_variable(loader *L, modctx *m)
{
    spv_program *p = L->p;
    uint32_t at = m->at;
    uint32_t rt = word(L, at, 1), rid = word(L, at, 2), sc = word(L, at, 3);
    idrec *r = id(L, rid);
    r->kind = K_VAR;
    r->type = rt;
    r->pos = at;
    r->storage = (uint8_t)sc;
    ty *vt = type_of(L, type_of(L, rt)->elem);
    if (sc == SC_INPUT && !r->builtin)
        UNSUPPORTED("Input variables must be supported built-ins");
    if (r->builtin) { /* no memory: read where it is loaded (spv_compile_builtin.c) */
        if (sc != SC_INPUT && sc != SC_CROSS && sc != SC_UNIFORM_CONSTANT)
            UNSUPPORTED("built-in %s in storage class %u", spv_builtin_name(r->bname), sc);
        if (op_count(L, at) > 4)
            UNSUPPORTED("built-in %s with an initializer", spv_builtin_name(r->bname));
        return;
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
}

static void m_function(loader *L, modctx *m)
{
    const uint32_t *w = L->w;
    uint32_t at = m->at;
    idrec *r = id(L, word(L, at, 2));
    r->kind = K_FUNC;
    r->type = word(L, at, 1);
    r->pos = at;
    /* A declaration (no body) is an import. */
    uint32_t next = at + m->cnt;
    while (next < L->nw && (w[next] & 0xFFFFu) == SPV_OpFunctionParameter)
        next += w[next] >> 16;
    if (next < L->nw && (w[next] & 0xFFFFu) == SPV_OpFunctionEnd) {
        r->cidx = SPV_NONE;
    } else {
        L->func_begin = spvl_grow(L, L->func_begin, &m->capfb, L->nfuncs + 1, sizeof *L->func_begin);
        r->cidx = L->nfuncs;
        L->func_begin[L->nfuncs++] = at;
    }
}

static module_fn *const k_module[M_COUNT] = {
    [M_IGNORE] = m_ignore,
    [M_CAPABILITY] = m_capability,
    [M_EXTENSION] = m_extension,
    [M_EXTINSTIMPORT] = m_extinstimport,
    [M_MEMORYMODEL] = m_memorymodel,
    [M_ENTRYPOINT] = m_entrypoint,
    [M_EXECMODE] = m_execmode,
    [M_DECORATE] = m_decorate,
    [M_TYPE] = m_type,
    [M_CONSTANT] = m_constant,
    [M_UNDEF] = m_undef,
    [M_VARIABLE] = m_variable,
    [M_FUNCTION] = m_function,
};

/* Pass A: module-level declarations, and where functions start (their
 * bodies are skipped here). */
static void declare_module(loader *L, modctx *m)
{
    int in_fn = 0;
    for (uint32_t at = 5; at < L->nw;) {
        L->pos = at;
        uint32_t cnt = L->w[at] >> 16;
        unsigned op = opcode_at(L, at);
        if (cnt == 0 || at + cnt > L->nw)
            MALFORMED("truncated instruction");
        if (in_fn) {
            if (op == SPV_OpFunctionEnd)
                in_fn = 0;
            at += cnt;
            continue;
        }
        const spv_opinfo *info = spv_opinfo_of(op);
        module_fn *handler = info ? k_module[info->mod] : NULL;
        if (!handler) {
            char buf[32];
            UNSUPPORTED("SPIR-V instruction %s is not supported at module scope",
                        spv_opname(op, buf, sizeof buf));
        }
        m->at = at;
        m->cnt = cnt;
        handler(L, m);
        in_fn = op == SPV_OpFunction;
        at += cnt;
    }
    L->pos = 0;
    if (!m->memory_model)
        MALFORMED("no OpMemoryModel");
}

/* Program-scope variables and their initializers. */
static void init_globals(loader *L)
{
    spv_program *p = L->p;
    p->globals_size = L->globals_bytes;
    p->globals = calloc(1, L->globals_bytes ? L->globals_bytes : 1);
    if (!p->globals)
        spvl_fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    for (uint32_t v = 1; v < L->bound; v++) {
        idrec *r = &L->ids[v];
        if (r->kind == K_VAR && (r->storage == SC_CROSS || r->storage == SC_UNIFORM_CONSTANT) &&
            op_count(L, r->pos) > 4) {
            L->pos = r->pos;
            spvl_write_const(L, L->w[r->pos + 4], p->globals + r->cidx);
        }
    }
}

/* A by-value aggregate (FuncParamAttr ByVal, a Function-storage pointer to
 * the pointee, as SYCL passes functors and structs): its bytes are the
 * argument, and each work-item gets its own copy in private memory, after
 * its stack (spv_group.c). */
static void describe_byval(loader *L, spv_kernel *kn, uint32_t i, const ty *t)
{
    const ty *e = type_of(L, t->elem);
    if (e->size == 0 || e->size > SPV_MAX_BYVAL_BYTES)
        UNSUPPORTED("kernel %s: by-value argument %u has %llu bytes (1 to %u are supported)",
                    kn->name, i, (unsigned long long)e->size, SPV_MAX_BYVAL_BYTES);
    uint64_t align = e->align > 16 ? e->align : 16;
    uint64_t off = (kn->byval_bytes + align - 1) / align * align;
    if (off + e->size > SPV_MAX_BYVAL_BYTES)
        UNSUPPORTED("kernel %s: by-value arguments need more than %u bytes", kn->name,
                    SPV_MAX_BYVAL_BYTES);
    kn->param_kind[i] = SPV_PARAM_BYVAL;
    kn->param_off[i] = (uint32_t)off;
    kn->byval_bytes = (uint32_t)(off + e->size);
    kn->param_n[i] = 1;
    kn->param_bytes[i] = 8;
    kn->info.param_sizes[i] = (uint32_t)e->size;
}

/* Each parameter's components and sizes, as zeKernelSetArgumentValue sees them. */
static void describe_params(loader *L, spv_kernel *kn, const spv_func *f, uint32_t fidx)
{
    uint32_t ppos = L->func_begin[fidx];
    ppos += op_count(L, ppos);
    for (uint32_t i = 0; i < f->nparams; i++, ppos += op_count(L, ppos)) {
        uint32_t pt = word(L, ppos, 1);
        ty *t = type_of(L, pt);
        if (t->kind == T_PTR && t->storage == SC_WORKGROUP) {
            /* Its value is the size of the __local memory to give it. */
            kn->param_kind[i] = SPV_PARAM_LOCAL;
            kn->param_n[i] = 1;
            kn->param_bytes[i] = 8;
            kn->info.param_sizes[i] = 8;
            continue;
        }
        if (t->kind == T_PTR && t->storage == SC_FUNCTION) {
            if (!id(L, word(L, ppos, 2))->byval)
                UNSUPPORTED("kernel %s: argument %u is a private pointer that is not "
                            "FuncParamAttr ByVal", kn->name, i);
            describe_byval(L, kn, i, t);
            continue;
        }
        if (t->kind == T_BOOL || t->kind == T_ARRAY || t->kind == T_STRUCT)
            UNSUPPORTED("kernel %s: argument %u has a type that cannot be passed", kn->name, i);
        ty *s = scalar(L, pt);
        uint32_t cn = comps(L, pt);
        kn->param_n[i] = (uint8_t)cn;
        kn->param_bytes[i] = (uint8_t)s->size;
        kn->info.param_sizes[i] = (uint32_t)(t->kind == T_VEC ? t->size : s->size);
    }
}

static void make_kernels(loader *L, const modctx *m)
{
    spv_program *p = L->p;
    p->kernels = calloc(m->nentries ? m->nentries : 1, sizeof *p->kernels);
    if (!p->kernels)
        spvl_fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    for (uint32_t k = 0; k < m->nentries; k++) {
        uint32_t at = m->entries[k];
        L->pos = at;
        idrec *fr = id(L, word(L, at, 2));
        if (fr->kind != K_FUNC || fr->cidx == SPV_NONE)
            MALFORMED("entry point is not a defined function");
        spv_kernel *kn = &p->kernels[p->nkernels];
        kn->prog = p;
        kn->func = fr->cidx;
        kn->name = strdup(spvl_string_at(L, at, 3, NULL));
        if (!kn->name)
            spvl_fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
        p->nkernels++;
        spv_func *f = &p->funcs[fr->cidx];
        if (f->nparams > AR_KERNEL_MAX_PARAMS)
            UNSUPPORTED("kernel %s has %u parameters (at most %u)", kn->name, f->nparams,
                        AR_KERNEL_MAX_PARAMS);
        kn->info.abi_version = AR_HOST_ABI_VERSION;
        kn->info.num_params = f->nparams;
        describe_params(L, kn, f, fr->cidx);
        for (uint32_t j = 0; j < k; j++)
            if (!strcmp(p->kernels[j].name, kn->name))
                MALFORMED("two entry points named %s", kn->name);
    }
}

static void load_module(loader *L)
{
    const uint32_t *w = L->w;
    if (L->nw < 5 || w[0] != SPV_MAGIC_NUMBER)
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
        spvl_fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    spv_program *p = L->p;

    modctx m = {0};
    declare_module(L, &m);
    init_globals(L);
    p->funcs = calloc(L->nfuncs ? L->nfuncs : 1, sizeof *p->funcs);
    if (!p->funcs)
        spvl_fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    p->nfuncs = L->nfuncs;
    for (uint32_t i = 0; i < L->nfuncs; i++) {
        p->funcs[i].id = L->w[L->func_begin[i] + 2];
        spvl_compile_function(L, i);
    }
    for (uint32_t i = 0; i < L->nfuncs; i++)
        stack_needs(L, i);
    make_kernels(L, &m);
    free(m.entries);
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
        spvl_fail(&L, SPV_LOAD_MALFORMED, "a SPIR-V module is a whole number of 32-bit words (got %zu bytes)", size);
    uint32_t *words = malloc(size);
    if (!words)
        spvl_fail(&L, SPV_LOAD_NO_MEMORY, "out of host memory");
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
uint64_t spv_kernel_local_bytes(const void *kernel_ctx, void *const *params)
{
    const spv_kernel *k = kernel_ctx;
    uint64_t total = k->prog->local_bytes;
    for (uint32_t i = 0; i < k->info.num_params; i++)
        if (k->param_kind[i] == SPV_PARAM_LOCAL) {
            uint64_t size;
            memcpy(&size, params[i], sizeof size);
            total = spv_local_arg_offset(total) + size;
        }
    return total;
}

int spv_kernel_param_kind(const void *kernel_ctx, uint32_t i)
{
    const spv_kernel *k = kernel_ctx;
    return i < k->info.num_params ? k->param_kind[i] : SPV_PARAM_VALUE;
}
