/* A SPIR-V executor for the software drivers: OpenCL kernels (the subset that
 * clang + llvm-spirv write) decoded, checked and compiled into a compact
 * register form at load, then interpreted work-item by work-item.
 *
 * See README.md in this folder for the supported instructions and what is
 * refused.  The program is immutable after load, so any number of threads
 * may run its kernels at once. */
#ifndef ARSIM_SPV_H
#define ARSIM_SPV_H

#include <stddef.h>
#include <stdint.h>

#include "../../kernels/ar_host_abi.h"

#define SPV_API __attribute__((visibility("hidden")))

/* Sub-group size every kernel runs with (Intel GPUs use 8, 16 or 32). */
#define SPV_SUBGROUP_SIZE 16u
/* Static __local memory a kernel may declare (bytes). */
#define SPV_MAX_LOCAL_BYTES 65536u

/* By-value aggregate arguments, all of one kernel's together (bytes). */
#define SPV_MAX_BYVAL_BYTES 4096u

/* How a kernel parameter is passed (spv_kernel_param_kind). */
enum {
    SPV_PARAM_VALUE = 0, /* scalars, vectors, global pointers: param_sizes bytes */
    SPV_PARAM_BYVAL = 1, /* an aggregate's bytes, copied for each work-item */
    SPV_PARAM_LOCAL = 2, /* __local pointer: the value is the size in bytes (uint64) */
};

typedef struct spv_program spv_program;

typedef enum spv_load_status {
    SPV_LOAD_OK = 0,
    SPV_LOAD_MALFORMED = 1,   /* not valid SPIR-V (bad header, truncated, bad ids) */
    SPV_LOAD_UNSUPPORTED = 2, /* valid, but uses something the executor refuses */
    SPV_LOAD_NO_MEMORY = 3,
    SPV_LOAD_LINK = 4,        /* the modules do not link (spv_link) */
} spv_load_status;

/* One module of a program (spv_link), and its specialization constants:
 * nconst ids (SpecId) and pointers to their values (as many bytes as the
 * constant's type; a bool's is one byte). */
typedef struct spv_input {
    const void *bytes;
    size_t size;
    uint32_t nconst;
    const uint32_t *const_ids;
    const void *const *const_values;
} spv_input;

/* Links n modules into one (SPIR-V linkage: each import becomes the one
 * export of its name, of the same kind and type), after giving each its
 * specialization constants.  Returns the program's words (malloc'd) and sets
 * *out_bytes, or returns NULL, sets *status (SPV_LOAD_LINK for imports,
 * exports and specialization constants that do not match) and writes the
 * reason, naming the symbol, into err.  The program still goes to
 * spv_program_load.  One module is checked the same way (an import it
 * uses is refused by name), and comes back as it was but for its
 * specialization constants, so that the loader's word offsets are its own. */
SPV_API uint32_t *spv_link(const spv_input *in, uint32_t n, size_t *out_bytes,
                           spv_load_status *status, char *err, size_t errlen);

/* Decodes and compiles a module.  On failure returns NULL, sets *status and
 * writes a one-line reason (naming the instruction and its word offset)
 * into err. */
SPV_API spv_program *spv_program_load(const void *bytes, size_t size, spv_load_status *status,
                                      char *err, size_t errlen);
SPV_API void spv_program_free(void *program);

SPV_API size_t spv_kernel_count(const spv_program *p);
SPV_API const char *spv_kernel_name(const spv_program *p, size_t i);
SPV_API const ar_kernel_info *spv_kernel_info(const spv_program *p, size_t i);
/* The context to pass to spv_kernel_run for kernel i. */
SPV_API void *spv_kernel_ctx(spv_program *p, size_t i);

/* Where a __local argument starts in a work-group's local memory, given
 * where the previous one (or the kernel's own __local variables) ended:
 * arguments follow the variables, in parameter order, each aligned to 64. */
static inline uint64_t spv_local_arg_offset(uint64_t end) { return (end + 63u) & ~(uint64_t)63u; }

/* The work-group local memory a launch with these argument values needs:
 * the kernel's __local variables and its __local arguments. */
SPV_API uint64_t spv_kernel_local_bytes(const void *kernel_ctx, void *const *params);

/* SPV_PARAM_* of parameter i of the kernel whose context is kernel_ctx. */
SPV_API int spv_kernel_param_kind(const void *kernel_ctx, uint32_t i);

/* arsim_foreign_run: runs work-groups [launch->block_begin, block_end), in
 * order, on the calling thread (the engine splits a grid over threads).
 * Returns 0, ARSIM_ERR_ILLEGAL_ADDRESS (6) for an access outside every
 * allocation, or -1 for any other failure (barrier divergence, unreachable
 * code, a stack that cannot be allocated). */
SPV_API int spv_kernel_run(void *kernel_ctx, const ar_launch *launch, void **params);

#endif /* ARSIM_SPV_H */
