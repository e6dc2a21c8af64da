/* The SPIR-V linker's own state and helpers, shared by its two files:
 *
 *   spv_link_ids.c   where the ids are in an instruction (the walk over its
 *                    operands, from spv_operands.h), and whether two modules'
 *                    types are the same
 *   spv_link.c       reading the modules, specialization constants, the
 *                    symbols, writing the program; spv_link
 *
 * Failing longjmps out of spv_link (lk_fail), so no helper returns an error. */
#ifndef ARSIM_SPV_LINK_H
#define ARSIM_SPV_LINK_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "spv.h"

#define LK_API __attribute__((visibility("hidden")))
#define LK_MAX_BOUND (1u << 22) /* the loader's limit on ids */
#define LK_MAX_TYPE_DEPTH 32

/* What the linker knows of an id of a module (lkmod.flags). */
enum {
    LK_DROPPED = 1,   /* its definition leaves the program (an import, a duplicate) */
    LK_BUILTIN = 2,   /* decorated BuiltIn (llvm-spirv also says Import) */
    LK_DECORATED = 4, /* the target of a decoration */
    LK_FORWARD = 8,   /* a pointer type OpTypeForwardPointer declares */
};

typedef struct lkmod {
    uint32_t *w; /* a copy: specialization constants are written into it */
    uint32_t nw, bound, base;
    uint32_t first_fn; /* word position of the first OpFunction (nw: none) */
    uint32_t *def;     /* id -> position of its defining instruction (0: none) */
    uint32_t *type;    /* id -> its result type */
    uint32_t *map;     /* id -> id in the program */
    uint32_t *uses;    /* id -> references from code (not names or decorations) */
    uint8_t *flags;    /* id -> LK_* */
} lkmod;

typedef struct lksym {
    const char *name;
    uint32_t mod, id, linkage, pos;
} lksym;

typedef struct linker {
    lkmod *m;
    uint32_t n, cur_mod, pos; /* pos: the instruction handled, for messages */
    lksym *syms;
    uint32_t nsyms, capsyms;
    uint32_t *out;
    uint32_t nout, capout;
    uint32_t *caps; /* capabilities written */
    uint32_t ncaps, capcaps;
    uint32_t *marks; /* positions in out of the extensions and kernels written */
    uint32_t nmarks, capmarks;
    struct {
        uint32_t *pos, *id; /* each kept type or constant: where in out, its id */
        uint32_t n, cap, capid;
        uint32_t *table; /* open addressing over pos: index + 1 */
        uint32_t tsize;
    } sh; /* the types and constants the modules share (merge_types) */
    uint32_t model_mod; /* 1 + the module whose memory model was written */
    struct {
        const uint32_t *a[LK_MAX_TYPE_DEPTH], *b[LK_MAX_TYPE_DEPTH];
        uint8_t *marks[LK_MAX_TYPE_DEPTH]; /* which words are ids, per level */
        uint32_t capmarks[LK_MAX_TYPE_DEPTH];
        uint32_t n;
    } cmp; /* the type comparison's stack */
    spv_load_status status;
    char *err;
    size_t errlen;
    jmp_buf fail;
} linker;

LK_API __attribute__((noreturn, format(printf, 3, 4))) void lk_fail(linker *K, spv_load_status st,
                                                                    const char *fmt, ...);
#define MALFORMED(...) lk_fail(K, SPV_LOAD_MALFORMED, __VA_ARGS__)
#define UNSUPPORTED(...) lk_fail(K, SPV_LOAD_UNSUPPORTED, __VA_ARGS__)
#define LINK_FAIL(...) lk_fail(K, SPV_LOAD_LINK, __VA_ARGS__)

LK_API void *lk_grow(linker *K, void *p, uint32_t *cap, uint32_t need, size_t elem);
LK_API void *lk_calloc(linker *K, size_t n, size_t elem);

static inline unsigned opcode(const uint32_t *ins) { return ins[0] & 0xFFFFu; }
static inline uint32_t count(const uint32_t *ins) { return ins[0] >> 16; }

/* A literal string's words (from first), to the one holding its zero byte. */
LK_API uint32_t lk_string_end(linker *K, const uint32_t *ins, uint32_t first);
LK_API const char *lk_string_at(linker *K, const uint32_t *ins, uint32_t first);
/* The instruction defining id v of module M. */
LK_API const uint32_t *lk_def_of(linker *K, lkmod *M, uint32_t v);

/* The walk over an instruction's ids: fn gets the word's index and its role
 * (T result type, R result, I any other id). */
typedef void lk_id_fn(linker *K, lkmod *M, const uint32_t *ins, uint32_t i, char role, void *ctx);
/* Calls fn on every id of the instruction; refuses what the grammar lacks. */
LK_API void lk_walk(linker *K, lkmod *M, const uint32_t *ins, lk_id_fn *fn, void *ctx);
/* Whether id a of A and id b of B define the same type (or constant). */
LK_API int lk_same_def(linker *K, lkmod *A, uint32_t a, lkmod *B, uint32_t b);

#endif /* ARSIM_SPV_LINK_H */
