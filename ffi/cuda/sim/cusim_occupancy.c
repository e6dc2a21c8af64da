/* cuda-sim: the occupancy calculator.
 *
 * The same arithmetic as for a compute capability 8.0 multiprocessor, over
 * the limits cuDeviceGetAttribute reports (2048 threads, 32 blocks, 65536
 * registers and 167936 bytes of shared memory per multiprocessor) and the
 * function model of cusim_func.c (CUSIM_FUNC_REGS registers a thread, the
 * static shared bytes and the launch bound the PTX declares).  The sim runs any launch
 * the limits allow whatever the answer; the numbers exist so that callers
 * that size grids from them (cuda.core, CuPy, user code) get sane grids. */
#include "cusim.h"

#define SM_MAX_THREADS 2048
#define SM_MAX_BLOCKS 32
#define SM_REGISTERS 65536
#define SM_SHARED 167936
#define WARP 32

/* Resident blocks of f per multiprocessor at this block size and dynamic
 * shared memory; 0 when such a block cannot launch at all. */
static int blocks_per_sm(const cu_function *f, int block_size, size_t dynamic_shared)
{
    if (block_size > 1024 || dynamic_shared > (size_t)cusim_func_max_dynamic_shared(f))
        return 0;
    if (f->attrs.max_threads && (unsigned)block_size > f->attrs.max_threads)
        return 0;
    int warps = (block_size + WARP - 1) / WARP;
    int blocks = SM_MAX_BLOCKS;
    int by_threads = SM_MAX_THREADS / (warps * WARP);
    int by_registers = SM_REGISTERS / (warps * WARP * CUSIM_FUNC_REGS);
    if (by_threads < blocks)
        blocks = by_threads;
    if (by_registers < blocks)
        blocks = by_registers;
    size_t shared = dynamic_shared + f->attrs.shared_static;
    if (shared > 0 && (int)(SM_SHARED / shared) < blocks)
        blocks = (int)(SM_SHARED / shared);
    return blocks;
}

static CUresult check_flags(unsigned int flags)
{
    return flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE ? CUDA_ERROR_INVALID_VALUE
                                                                   : CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
                                                              int blockSize,
                                                              size_t dynamicSMemSize,
                                                              unsigned int flags)
{
    CUSIM_TRY(cusim_check_init());
    if (!numBlocks || blockSize <= 0 || check_flags(flags) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    cu_function *f = cusim_function_get(func);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *numBlocks = blocks_per_sm(f, blockSize, dynamicSMemSize);
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                     int blockSize, size_t dynamicSMemSize)
{
    return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                dynamicSMemSize, 0);
}

/* The block size with the most resident threads per multiprocessor; among
 * equals the largest, as the CUDA calculator picks. */
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize,
                                                   CUfunction func,
                                                   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                   size_t dynamicSMemSize, int blockSizeLimit,
                                                   unsigned int flags)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c)); /* the grid is sized for the current device */
    if (!minGridSize || !blockSize || blockSizeLimit < 0 || check_flags(flags) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    cu_function *f = cusim_function_get(func);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    int sm_count;
    CUSIM_TRY(cuDeviceGetAttribute(&sm_count, 16 /* MULTIPROCESSOR_COUNT */, c->device));
    int limit = blockSizeLimit > 0 && blockSizeLimit < 1024 ? blockSizeLimit : 1024;
    int best_size = 0, best_blocks = 0;
    long best_threads = 0;
    /* From the limit down in warp steps (the limit itself first when it is
     * not a whole number of warps). */
    for (int size = limit; size > 0; size = (size % WARP) ? size - size % WARP : size - WARP) {
        size_t dynamic =
            blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(size) : dynamicSMemSize;
        int blocks = blocks_per_sm(f, size, dynamic);
        if ((long)blocks * size > best_threads) {
            best_threads = (long)blocks * size;
            best_size = size;
            best_blocks = blocks;
        }
    }
    *blockSize = best_size;
    *minGridSize = best_blocks * sm_count;
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                          CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                          size_t dynamicSMemSize, int blockSizeLimit)
{
    return cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func,
                                                     blockSizeToDynamicSMemSize, dynamicSMemSize,
                                                     blockSizeLimit, 0);
}

CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func,
                                                 int numBlocks, int blockSize)
{
    CUSIM_TRY(cusim_check_init());
    if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    cu_function *f = cusim_function_get(func);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (blocks_per_sm(f, blockSize, 0) < numBlocks) {
        *dynamicSmemSize = 0; /* that many blocks never fit, whatever the memory */
        return CUDA_SUCCESS;
    }
    size_t per_block = SM_SHARED / (size_t)numBlocks;
    size_t fixed = f->attrs.shared_static;
    per_block = per_block > fixed ? per_block - fixed : 0;
    size_t cap = (size_t)cusim_func_max_dynamic_shared(f);
    *dynamicSmemSize = per_block < cap ? per_block : cap;
    return CUDA_SUCCESS;
}
