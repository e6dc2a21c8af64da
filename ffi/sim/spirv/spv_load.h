/* The SPIR-V loader's own state and helpers, shared by its files:
 *
 *   spv_module.c        module scope: header, capabilities, declarations,
 *                       kernels; spv_program_load and spv_program_free
 *   spv_decode.c        failing, types, constants
 *   spv_emit.c          slots and emitted instructions of the register form
 *   spv_promote.c       Function variables kept in slots
 *   spv_function.c      compiling a function: the passes, the dispatch over
 *                       spv_opcodes.def's families, control flow, phi copies
 *   spv_compile_mem.c   variables, loads, stores, access chains, atomics
 *   spv_compile_builtin.c  builtins read through pointers
 *   spv_compile_alu.c   arithmetic, comparisons, conversions, vectors
 *   spv_compile_ext.c   OpenCL.std, barriers, collectives
 *
 * Failing longjmps out of the load (spvl_fail), so no helper returns an
 * error. */
#ifndef ARSIM_SPV_LOAD_H
#define ARSIM_SPV_LOAD_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "../sim_bits.h"
#include "spv_internal.h"
#include "spv_opcodes.h"

#define SPVL_API __attribute__((visibility("hidden")))

enum { K_NONE, K_TYPE, K_CONST, K_VAR, K_FUNC, K_VALUE, K_LABEL, K_EXTSET, K_UNDEF, K_OTHER };
enum { T_VOID = 1, T_BOOL, T_INT, T_FLOAT, T_VEC, T_PTR, T_ARRAY, T_STRUCT, T_FUNC, T_OPAQUE };
enum {
    SC_UNIFORM_CONSTANT = SPV_StorageClass_UniformConstant,
    SC_INPUT = SPV_StorageClass_Input,
    SC_WORKGROUP = SPV_StorageClass_Workgroup,
    SC_CROSS = SPV_StorageClass_CrossWorkgroup,
    SC_FUNCTION = SPV_StorageClass_Function,
    SC_GENERIC = SPV_StorageClass_Generic,
};

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
    uint8_t builtin; /* 1 + B_*: a builtin variable, or a pointer into one */
    uint8_t bcomp;   /* pointers into a builtin: 0 the whole value, else 1 + a component */
    uint16_t bname;  /* builtins: the BuiltIn decoration's value (for messages) */
    uint32_t bvar;   /* builtins: the variable; bindex: a dynamic component's id, or 0 */
    uint32_t bindex;
    uint8_t sat, round; /* decorations: SaturatedConversion, FPRoundingMode + 1 */
    uint8_t storage;
    uint8_t packed; /* CPacked (structs) */
    uint8_t promoted; /* a Function variable kept in slots (see promote_variables) */
    uint8_t byval; /* function parameters: FuncParamAttr ByVal */
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

SPVL_API __attribute__((noreturn, format(printf, 3, 4))) void spvl_fail(loader *L,
                                                                        spv_load_status st,
                                                                        const char *fmt, ...);
#define MALFORMED(...) spvl_fail(L, SPV_LOAD_MALFORMED, __VA_ARGS__)
#define UNSUPPORTED(...) spvl_fail(L, SPV_LOAD_UNSUPPORTED, __VA_ARGS__)

/* ---------------------------------------------------- decoding (inline) */

static inline unsigned opcode_at(const loader *L, uint32_t pos) { return L->w[pos] & 0xFFFFu; }

static inline uint32_t op_count(const loader *L, uint32_t pos) { return L->w[pos] >> 16; }

static inline uint32_t word(loader *L, uint32_t pos, uint32_t i)
{
    uint32_t count = L->w[pos] >> 16;
    if (i >= count)
        MALFORMED("instruction is missing operand %u", i);
    return L->w[pos + i];
}

static inline idrec *id(loader *L, uint32_t v)
{
    if (v == 0 || v >= L->bound)
        MALFORMED("id %u is outside the module's bound %u", v, L->bound);
    return &L->ids[v];
}

static inline ty *type_of(loader *L, uint32_t t)
{
    idrec *r = id(L, t);
    if (r->kind != K_TYPE)
        MALFORMED("id %u is not a type", t);
    return &L->types[t];
}

/* The most slots an aggregate value (a struct or array) may take. */
#define SPV_MAX_AGGREGATE_SLOTS 255u

/* Slots of a value of aggregate type t, or SPV_NONE past
 * SPV_MAX_AGGREGATE_SLOTS (spv_decode.c). */
SPVL_API uint32_t spvl_aggregate_slots(loader *L, uint32_t t);

/* Components of a value of type t: one slot per scalar, per vector
 * component, and per leaf of a struct or array, members in order. */
static inline uint32_t comps(loader *L, uint32_t t)
{
    ty *y = type_of(L, t);
    switch (y->kind) {
    case T_BOOL: case T_INT: case T_FLOAT: case T_PTR: return 1;
    case T_VEC: return y->n;
    case T_VOID: return 0;
    case T_ARRAY: case T_STRUCT: {
        uint32_t n = spvl_aggregate_slots(L, t);
        if (n == SPV_NONE)
            UNSUPPORTED("values of aggregate type (id %u) with more than %u components are not "
                        "supported", t, SPV_MAX_AGGREGATE_SLOTS);
        return n;
    }
    default:
        UNSUPPORTED("values of type %u are not supported; only scalars, vectors, pointers, "
                    "structs and arrays", t);
    }
}

/* The type of member k of struct type y. */
static inline uint32_t member_type(loader *L, const ty *y, uint32_t k) { return L->w[y->pos + 2 + k]; }

/* The scalar type of t (t itself, or a vector's element). */
static inline ty *scalar(loader *L, uint32_t t)
{
    ty *y = type_of(L, t);
    return y->kind == T_VEC ? type_of(L, y->elem) : y;
}

static inline uint32_t value_type(loader *L, uint32_t v) { return id(L, v)->type; }

static inline int is_vec(loader *L, uint32_t v) { return type_of(L, id(L, v)->type)->kind == T_VEC; }


/* ------------------------------------------------------ spv_decode.c */

SPVL_API void *spvl_grow(loader *L, void *p, uint32_t *cap, uint32_t need, size_t elem);
SPVL_API const char *spvl_string_at(loader *L, uint32_t pos, uint32_t first, uint32_t *next);
SPVL_API void spvl_define_type(loader *L, uint32_t pos, unsigned op);
SPVL_API void spvl_define_constant(loader *L, uint32_t pos, unsigned op);
/* Writes constant cid at dst (variable initializers). */
SPVL_API void spvl_write_const(loader *L, uint32_t cid, uint8_t *dst);

/* -------------------------------------------------------- spv_emit.c */

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

SPVL_API spv_ins *spvl_emit(loader *L, uint16_t op, uint8_t n, uint8_t w, uint32_t d, uint32_t a,
                            uint32_t b, uint32_t c, uint32_t e);
/* Emits a component-wise operation over n components. */
SPVL_API void spvl_emit_map(loader *L, uint16_t xop, uint32_t n, uint8_t w, uint32_t d,
                            uint32_t a, uint32_t b, uint32_t c, uint32_t e, int a_vec, int b_vec,
                            int e_vec);
SPVL_API uint32_t spvl_aux_push(loader *L, uint32_t v);
SPVL_API void spvl_add_fixup(loader *L, uint32_t slot, uint32_t kind, uint64_t off);
SPVL_API uint32_t spvl_new_slots(loader *L, uint32_t n);
/* A constant slot in the current function, filled from the template. */
SPVL_API uint32_t spvl_const_slot(loader *L, uint64_t v);
/* The slot holding the value of id v in the current function. */
SPVL_API uint32_t spvl_slot(loader *L, uint32_t v);
/* The constant value of id v (scopes, struct indices); must be a constant. */
SPVL_API uint64_t spvl_const_value(loader *L, uint32_t v, const char *what);
/* Records a branch to label `to` whose target pc is patched in once known. */
SPVL_API void spvl_branch_to(loader *L, fnstate *fs, uint32_t at, uint8_t field, uint8_t in_aux,
                             uint32_t from, uint32_t to);

/* ----------------------------------------------------- spv_promote.c */

SPVL_API void spvl_promote_variables(loader *L, uint32_t body);
/* 0 for instructions without a result id (the rest have a result type and id). */
SPVL_API int spvl_has_result(unsigned op);

/* ---------------------------------------------------- spv_function.c */

/* The instruction a compile handler is given. */
typedef struct fnctx {
    spv_func *f;
    fnstate fs;
    uint32_t at, cnt;
    unsigned op;
    const spv_opinfo *info;
    uint32_t cur_label;
    idrec *r;          /* its result, or NULL */
    uint32_t rt, d, n; /* result type, slot and components */
} fnctx;

typedef void spvl_compile_fn(loader *L, fnctx *c);

SPVL_API void spvl_compile_function(loader *L, uint32_t fidx);

/* Family handlers (the F_* of spv_opcodes.h), by file. */
SPVL_API spvl_compile_fn spvl_c_variable, spvl_c_load, spvl_c_store, spvl_c_copymemory,
    spvl_c_copymemorysized, spvl_c_accesschain, spvl_c_atomic;
/* Pointers into builtins (spv_compile_builtin.c): followed at compile time
 * through access chains and casts into OpLoad; anything else refuses. */
SPVL_API void spvl_builtin_chain(loader *L, fnctx *c);
SPVL_API void spvl_builtin_cast(loader *L, fnctx *c);
SPVL_API void spvl_builtin_load(loader *L, fnctx *c);
SPVL_API __attribute__((noreturn)) void spvl_builtin_escapes(loader *L, uint32_t v);
/* The X_* op of float operation x32 (its f32 form, as spv_opcodes.def names
 * it) at width 16, 32 or 64. */
SPVL_API uint16_t spvl_float_op(loader *L, uint16_t x32, uint32_t width);

SPVL_API spvl_compile_fn spvl_c_copy, spvl_c_bitcast, spvl_c_convert, spvl_c_iunary,
    spvl_c_funary, spvl_c_ibinary, spvl_c_fbinary, spvl_c_compare, spvl_c_fcompare,
    spvl_c_fclass, spvl_c_bits, spvl_c_dot, spvl_c_anyall, spvl_c_select, spvl_c_vextract,
    spvl_c_vinsert, spvl_c_vshuffle, spvl_c_construct, spvl_c_extract, spvl_c_insert,
    spvl_c_undef;
/* Refuses an OpenCL.std instruction on half values that does not run them
 * (spv_compile_ext.c), naming it. */
SPVL_API void spvl_ext_half(loader *L, const fnctx *c);
SPVL_API spvl_compile_fn spvl_c_extinst, spvl_c_barrier, spvl_c_groupop, spvl_c_groupvalue,
    spvl_c_grouppair, spvl_c_groupelect, spvl_c_intelshuffle, spvl_c_intelshufflerel;

#endif /* ARSIM_SPV_LOAD_H */
