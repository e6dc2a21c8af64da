/* The host-kernel ABI: how a software driver calls a kernel that was compiled
 * for the CPU (a host shared object built from the portable kernel sources).
 *
 * Shared by the kernels (through ar_portable.h, in host mode) and by the
 * simulated device (ffi/sim/engine.h), so the two cannot drift apart.
 *
 * For every kernel NAME, the host shared object exports two symbols:
 *
 *   int NAME(const ar_launch *launch, void **params);
 *       Runs the blocks [launch->block_begin, launch->block_end) of the grid
 *       (linear block index, x fastest, then y, then z), every thread of each
 *       block, one after another.  params is laid out as CUDA's kernelParams:
 *       params[i] points at the value of argument i.  Returns 0, or non-zero
 *       when the kernel reports a fault (the launch then fails).
 *
 *   const ar_kernel_info __ar_kinfo_NAME;
 *       The number of parameters and the byte size of each, so that a driver
 *       can copy argument values at launch time as CUDA does.
 *
 * Blocks run one after another and the threads of a block too, so a kernel
 * may not use barriers or block-shared memory that relies on them.
 */
#ifndef AR_HOST_ABI_H
#define AR_HOST_ABI_H

#include <stdint.h>

#define AR_HOST_ABI_VERSION 1u
/* CUDA allows 32,764 bytes of kernel parameters; numba passes each array as
 * several scalars, so a kernel of a few arrays has dozens.  A library built
 * against a smaller array still works: only num_params entries are read. */
#define AR_KERNEL_MAX_PARAMS 1024u
#define AR_KINFO_PREFIX "__ar_kinfo_"

typedef struct ar_dim3 {
    uint32_t x, y, z;
} ar_dim3;

typedef struct ar_launch {
    uint32_t abi_version; /* AR_HOST_ABI_VERSION */
    uint32_t shared_bytes; /* dynamic shared memory requested at launch */
    ar_dim3 grid;
    ar_dim3 block;
    void *shared; /* shared_bytes of scratch, zeroed, reused by every block */
    uint64_t block_begin; /* linear block range to run: [begin, end) */
    uint64_t block_end;
} ar_launch;

typedef int (*ar_kernel_entry)(const ar_launch *launch, void **params);

typedef struct ar_kernel_info {
    uint32_t abi_version; /* AR_HOST_ABI_VERSION */
    uint32_t num_params;
    uint32_t param_sizes[AR_KERNEL_MAX_PARAMS];
} ar_kernel_info;

#endif /* AR_HOST_ABI_H */
