/* What the SPIR-V interpreter's files share: the state of a work-group and
 * its work-items (spv_exec.c runs one work-item, spv_group.c runs the group
 * around it: barriers, collectives) and the value helpers of spv_math.c. */
#ifndef ARSIM_SPV_EXEC_H
#define ARSIM_SPV_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "../engine.h"
#include "spv_bits.h"
#include "spv_internal.h"

#define SPVX_API __attribute__((visibility("hidden")))

#define CACHE_RANGES 8

enum { S_RUN, S_BARRIER, S_COLL, S_DONE };
enum { R_DONE = 1, R_BARRIER = 2, R_COLL = 3 };

typedef struct frame {
    uint32_t ret_pc, func;
    uint64_t *regs;
    uint8_t *priv;
} frame;

typedef struct item {
    uint32_t pc, func, depth;
    uint8_t state;
    uint64_t *regs;
    uint8_t *priv;
    frame *stack;
    uint32_t lid[3];
    uint32_t linear;
} item;

typedef struct range {
    uintptr_t lo, hi;
} range;

typedef struct group {
    const spv_program *p;
    const spv_kernel *k;
    const ar_launch *l;
    void **params;
    uint32_t gid[3];
    uint32_t size[3];
    uint32_t nitems;
    item *items;
    uint64_t *regs;
    uint8_t *priv;
    size_t priv_total;
    frame *frames;
    uint8_t *local;
    size_t local_len;
    /* The local memory a GPU would give the work-group (spv_group.c's
     * local_granted): local_len rounded up to the allocation step, or
     * local_len under the sanitizer.  The bytes past local_len are the
     * slack: never written, so zero, and only loads reach them. */
    size_t local_pad;
    range cache[CACHE_RANGES];
    unsigned ncache, next_cache;
    /* Ranges the launch declared read-only (engine.h), or NULL: every store
     * is checked against them. */
    const arsim_readonly *ro;
} group;

static inline uint32_t subgroup_count(const group *g)
{
    return (g->nitems + SPV_SUBGROUP_SIZE - 1) / SPV_SUBGROUP_SIZE;
}

/* ------------------------------------------------------------ spv_exec.c */

/* Makes a frame for function f at regs/priv (arguments already in place). */
SPVX_API void spvx_enter(const group *g, const spv_func *f, uint64_t *regs, uint8_t *priv);
/* Runs a work-item until it finishes, yields or faults.  Returns R_*, or
 * -ARSIM_ERR_ILLEGAL_ADDRESS or -1. */
SPVX_API int spvx_run_item(group *g, item *it);

/* ------------------------------------------------------------ spv_math.c */

/* Round to nearest even, as vstore_half does by default. */
SPVX_API uint16_t spvx_double_to_half(double v);
/* Atomic kind (A_*) at p, w bits wide; returns the old value. */
SPVX_API uint64_t spvx_atomic(void *p, uint32_t w, uint32_t kind, uint64_t v, uint64_t cmp);
/* OpenCL.std instruction e at width w. */
SPVX_API uint64_t spvx_ext_float(uint32_t e, uint32_t w, uint64_t ua, uint64_t ub, uint64_t uc);
/* frexp, modf, fract, sincos, remquo, lgamma_r at width w: the result, and in
 * *out the bits they store (an int, or a value of width w). */
SPVX_API uint64_t spvx_ext_out(uint32_t e, uint32_t w, uint64_t ua, uint64_t ub, uint64_t *out);
SPVX_API uint64_t spvx_ext_int(uint32_t e, uint32_t w, uint64_t a, uint64_t b, uint64_t c);
/* Float comparison op (the SPIR-V opcode), and OpIsNan ... OpSignBitSet. */
SPVX_API int spvx_fcmp(uint32_t op, double a, double b);
SPVX_API uint64_t spvx_fclass(uint32_t op, uint64_t v, uint32_t w);
/* Float to integer: rounding mode (0 default toward zero, 1 rte, 2 rtz, 3
 * rtp, 4 rtn), saturating (out-of-range values clamp, NaN gives 0). */
SPVX_API uint64_t spvx_ftoi(double x, uint32_t w, int is_signed, uint32_t mode);
/* Integer (c bits; signed or not) to a float of width w, and float (c bits)
 * to float (w bits), rounded as mode says (1 + an FPRoundingMode; 0 is rte). */
SPVX_API uint64_t spvx_itof(uint64_t v, uint32_t c, int is_signed, uint32_t w, uint32_t mode);
SPVX_API uint64_t spvx_fconv(uint64_t v, uint32_t c, uint32_t w, uint32_t mode);

#endif /* ARSIM_SPV_EXEC_H */
