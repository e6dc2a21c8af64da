/* ar_portable.h: one kernel source, three compilers.
 *
 * A kernel written with these macros over plain C builds
 *   - to PTX with nvcc (CUDA dialect:   nvcc -ptx -x cu ...),
 *   - to SPIR-V with clang in OpenCL C mode (OpenCL dialect: clang -x cl ...),
 *   - to a host shared object with gcc (host dialect: the software drivers
 *     load it as a module; see ar_host_abi.h for the entry ABI).
 *
 *     AR_KERNEL(saxpy, ar_u32, n, float, a, AR_GLOBAL const float *, x,
 *               AR_GLOBAL float *, y)
 *     {
 *         ar_u32 i = AR_GLOBAL_ID_X;
 *         if (i < n)
 *             y[i] = a * x[i] + y[i];
 *     }
 *
 * Rules of the dialect:
 *   - parameters are given as (type, name) pairs, at most 24; pointer
 *     parameters to device memory carry AR_GLOBAL;
 *   - thread geometry only through the AR_* index macros, and only in the
 *     kernel body (helpers take indices as arguments);
 *   - helpers are AR_DEVICE_FN functions;
 *   - integer types through ar_u16/ar_i32/ar_u32/ar_i64/ar_u64, math through
 *     ar_*f, float bits through ar_float_as_u32/ar_u32_as_float;
 *   - no barriers and no block-shared memory: the host build runs the threads
 *     of a block one after another.
 */
#ifndef AR_PORTABLE_H
#define AR_PORTABLE_H

#if defined(__CUDACC__)
#define AR_DIALECT_CUDA 1
#elif defined(__OPENCL_VERSION__) || defined(__OPENCL_C_VERSION__)
#define AR_DIALECT_OPENCL 1
#else
#define AR_DIALECT_HOST 1
#endif

#include "ar_pp.h"

#define AR__CAT_(a, b) a##b
#define AR__CAT(a, b) AR__CAT_(a, b)
/* Expand the table entry named PREFIX_<number of pairs>. */
#define AR__APPLY(prefix, ...) AR__CAT(prefix, AR__NPAIRS(__VA_ARGS__))(__VA_ARGS__)

/* ------------------------------------------------------------------ CUDA */
#if defined(AR_DIALECT_CUDA)

typedef int ar_i32;
typedef unsigned int ar_u32;
typedef long long ar_i64;
typedef unsigned long long ar_u64;
typedef unsigned short ar_u16;

/* Reinterpret the bits of a float as a uint32 and back. */
#define ar_float_as_u32(f) __float_as_uint(f)
#define ar_u32_as_float(u) __uint_as_float(u)
/* Keep the next loop rolled (nvcc fully unrolls short constant-bound loops,
 * which only bloats naive kernels' PTX). */
#define AR_NO_UNROLL _Pragma("unroll 1")

#define AR_GLOBAL
#define AR_RESTRICT __restrict__
#define AR_DEVICE_FN static __device__ __forceinline__
#define AR_KERNEL(name, ...) \
    extern "C" __global__ void name(AR__APPLY(AR__PARAMS_, __VA_ARGS__))

#define AR_THREAD_IDX_X (threadIdx.x)
#define AR_THREAD_IDX_Y (threadIdx.y)
#define AR_THREAD_IDX_Z (threadIdx.z)
#define AR_BLOCK_IDX_X (blockIdx.x)
#define AR_BLOCK_IDX_Y (blockIdx.y)
#define AR_BLOCK_IDX_Z (blockIdx.z)
#define AR_BLOCK_DIM_X (blockDim.x)
#define AR_BLOCK_DIM_Y (blockDim.y)
#define AR_BLOCK_DIM_Z (blockDim.z)
#define AR_GRID_DIM_X (gridDim.x)
#define AR_GRID_DIM_Y (gridDim.y)
#define AR_GRID_DIM_Z (gridDim.z)

#define ar_sqrtf(x) sqrtf(x)
#define ar_expf(x) expf(x)
#define ar_logf(x) logf(x)
#define ar_tanhf(x) tanhf(x)
#define ar_erff(x) erff(x)
#define ar_fabsf(x) fabsf(x)
#define ar_fmaxf(a, b) fmaxf(a, b)
#define ar_fminf(a, b) fminf(a, b)
#define ar_powf(a, b) powf(a, b)

/* ---------------------------------------------------------------- OpenCL */
#elif defined(AR_DIALECT_OPENCL)

typedef int ar_i32;
typedef uint ar_u32;
typedef long ar_i64;
typedef ulong ar_u64;
typedef ushort ar_u16;

#define ar_float_as_u32(f) as_uint((float)(f))
#define ar_u32_as_float(u) as_float((uint)(u))

#define AR_GLOBAL __global
#define AR_RESTRICT restrict
#define AR_DEVICE_FN static inline
#define AR_KERNEL(name, ...) __kernel void name(AR__APPLY(AR__PARAMS_, __VA_ARGS__))

#define AR_THREAD_IDX_X ((ar_u32)get_local_id(0))
#define AR_THREAD_IDX_Y ((ar_u32)get_local_id(1))
#define AR_THREAD_IDX_Z ((ar_u32)get_local_id(2))
#define AR_BLOCK_IDX_X ((ar_u32)get_group_id(0))
#define AR_BLOCK_IDX_Y ((ar_u32)get_group_id(1))
#define AR_BLOCK_IDX_Z ((ar_u32)get_group_id(2))
#define AR_BLOCK_DIM_X ((ar_u32)get_local_size(0))
#define AR_BLOCK_DIM_Y ((ar_u32)get_local_size(1))
#define AR_BLOCK_DIM_Z ((ar_u32)get_local_size(2))
#define AR_GRID_DIM_X ((ar_u32)get_num_groups(0))
#define AR_GRID_DIM_Y ((ar_u32)get_num_groups(1))
#define AR_GRID_DIM_Z ((ar_u32)get_num_groups(2))

#define ar_sqrtf(x) sqrt((float)(x))
#define ar_expf(x) exp((float)(x))
#define ar_logf(x) log((float)(x))
#define ar_tanhf(x) tanh((float)(x))
#define ar_erff(x) erf((float)(x))
#define ar_fabsf(x) fabs((float)(x))
#define ar_fmaxf(a, b) fmax((float)(a), (float)(b))
#define ar_fminf(a, b) fmin((float)(a), (float)(b))
#define ar_powf(a, b) pow((float)(a), (float)(b))

/* ------------------------------------------------------------------ host */
#else

#include <math.h>
#include <stdint.h>

#include "ar_host_abi.h"

typedef int32_t ar_i32;
typedef uint32_t ar_u32;
typedef int64_t ar_i64;
typedef uint64_t ar_u64;
typedef uint16_t ar_u16;

static inline uint32_t ar_float_as_u32(float f)
{
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
}

static inline float ar_u32_as_float(uint32_t u)
{
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
}

/* Where the body finds its thread: the host entry fills one per thread. */
typedef struct ar__thread {
    ar_dim3 grid, block, block_idx, thread_idx;
} ar__thread;

#define AR_GLOBAL
#define AR_RESTRICT __restrict__
#define AR_DEVICE_FN static inline
#define AR__EXPORT __attribute__((visibility("default")))

/* The kernel NAME becomes the ABI entry (ar_host_abi.h): it unpacks the
 * kernelParams-style array once, then runs the body for every thread of the
 * requested blocks.  The body is a static function that the entry calls. */
#define AR_KERNEL(name, ...)                                                          \
    static inline void ar__body_##name(const ar__thread *ar__t,                       \
                                       AR__APPLY(AR__PARAMS_, __VA_ARGS__));          \
    AR__EXPORT const ar_kernel_info __ar_kinfo_##name = {                             \
        AR_HOST_ABI_VERSION, AR__NPAIRS(__VA_ARGS__), {AR__APPLY(AR__SIZES_, __VA_ARGS__)}}; \
    AR__EXPORT int name(const ar_launch *ar__l, void **ar__p)                         \
    {                                                                                 \
        AR__APPLY(AR__UNPACK_, __VA_ARGS__)                                           \
        ar__thread ar__th;                                                            \
        ar__th.grid = ar__l->grid;                                                    \
        ar__th.block = ar__l->block;                                                  \
        for (uint64_t ar__b = ar__l->block_begin; ar__b < ar__l->block_end; ar__b++) { \
            ar__th.block_idx.x = (uint32_t)(ar__b % ar__l->grid.x);                   \
            ar__th.block_idx.y = (uint32_t)(ar__b / ar__l->grid.x % ar__l->grid.y);   \
            ar__th.block_idx.z = (uint32_t)(ar__b / ar__l->grid.x / ar__l->grid.y);   \
            for (uint32_t ar__z = 0; ar__z < ar__l->block.z; ar__z++)                 \
                for (uint32_t ar__y = 0; ar__y < ar__l->block.y; ar__y++)             \
                    for (uint32_t ar__x = 0; ar__x < ar__l->block.x; ar__x++) {       \
                        ar__th.thread_idx.x = ar__x;                                  \
                        ar__th.thread_idx.y = ar__y;                                  \
                        ar__th.thread_idx.z = ar__z;                                  \
                        ar__body_##name(&ar__th, AR__APPLY(AR__NAMES_, __VA_ARGS__)); \
                    }                                                                 \
        }                                                                             \
        return 0;                                                                     \
    }                                                                                 \
    static inline void ar__body_##name(const ar__thread *ar__t,                       \
                                       AR__APPLY(AR__PARAMS_, __VA_ARGS__))

#define AR_THREAD_IDX_X (ar__t->thread_idx.x)
#define AR_THREAD_IDX_Y (ar__t->thread_idx.y)
#define AR_THREAD_IDX_Z (ar__t->thread_idx.z)
#define AR_BLOCK_IDX_X (ar__t->block_idx.x)
#define AR_BLOCK_IDX_Y (ar__t->block_idx.y)
#define AR_BLOCK_IDX_Z (ar__t->block_idx.z)
#define AR_BLOCK_DIM_X (ar__t->block.x)
#define AR_BLOCK_DIM_Y (ar__t->block.y)
#define AR_BLOCK_DIM_Z (ar__t->block.z)
#define AR_GRID_DIM_X (ar__t->grid.x)
#define AR_GRID_DIM_Y (ar__t->grid.y)
#define AR_GRID_DIM_Z (ar__t->grid.z)

#define ar_sqrtf(x) sqrtf(x)
#define ar_expf(x) expf(x)
#define ar_logf(x) logf(x)
#define ar_tanhf(x) tanhf(x)
#define ar_erff(x) erff(x)
#define ar_fabsf(x) fabsf(x)
#define ar_fmaxf(a, b) fmaxf(a, b)
#define ar_fminf(a, b) fminf(a, b)
#define ar_powf(a, b) powf(a, b)

#endif

#ifndef AR_NO_UNROLL
#define AR_NO_UNROLL
#endif

/* Global (grid-wide) indices, the same in every dialect. */
#define AR_GLOBAL_ID_X (AR_BLOCK_IDX_X * AR_BLOCK_DIM_X + AR_THREAD_IDX_X)
#define AR_GLOBAL_ID_Y (AR_BLOCK_IDX_Y * AR_BLOCK_DIM_Y + AR_THREAD_IDX_Y)
#define AR_GLOBAL_ID_Z (AR_BLOCK_IDX_Z * AR_BLOCK_DIM_Z + AR_THREAD_IDX_Z)
/* Threads in the whole grid along x, for grid-stride loops
 * (for (i = AR_GLOBAL_ID_X; i < n; i += AR_GLOBAL_SIZE_X)), which let a kernel
 * cover any n with a capped grid. */
#define AR_GLOBAL_SIZE_X ((ar_u64)AR_GRID_DIM_X * (ar_u64)AR_BLOCK_DIM_X)

#endif /* AR_PORTABLE_H */
