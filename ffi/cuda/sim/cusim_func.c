/* cuda-sim: function attributes, names and cuLaunchKernelEx.
 *
 * The sim's device is compute capability 8.0 (cuDeviceGetAttribute).  What a
 * real driver reads from the compiled binary the sim does not have.  Static
 * shared, constant and local memory and the launch bounds are the ones the
 * PTX declares (ptx_query.c; none for host code); the register count is a
 * stated model, 32 a thread, and PTX and binary version are 80.  The
 * occupancy calculator (cusim_occupancy.c) uses the same register figure. */
#include "cusim.h"

#define CUSIM_SM_VERSION 80
#define CUSIM_MAX_THREADS_PER_BLOCK 1024

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    CUSIM_TRY(cusim_check_init());
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    cu_function *f = cusim_function_get(hfunc);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    int carveout;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *pi = f->attrs.max_threads ? (int)f->attrs.max_threads : CUSIM_MAX_THREADS_PER_BLOCK;
        break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = (int)f->attrs.shared_static; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = (int)f->attrs.const_bytes; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = (int)f->attrs.local_bytes; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = CUSIM_FUNC_REGS; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = CUSIM_SM_VERSION; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = CUSIM_SM_VERSION; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *pi = cusim_func_max_dynamic_shared(f);
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        carveout = __atomic_load_n(&f->carveout_set, __ATOMIC_RELAXED);
        *pi = carveout ? carveout - 1 : -1;
        break;
    /* No thread-block clusters on compute capability 8.0. */
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    CUSIM_GET(f, cu_function, hfunc, HK_FUNCTION);
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (value < 0 || value > CUSIM_SHARED_PER_BLOCK_OPTIN - (int)f->attrs.shared_static)
            return CUDA_ERROR_INVALID_VALUE;
        __atomic_store_n(&f->max_dynamic_shared_set, value + 1, __ATOMIC_RELAXED);
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < -1 || value > 100)
            return CUDA_ERROR_INVALID_VALUE;
        __atomic_store_n(&f->carveout_set, value + 1, __ATOMIC_RELAXED);
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        return CUDA_ERROR_NOT_SUPPORTED; /* no clusters on this device */
    default:
        return CUDA_ERROR_INVALID_VALUE; /* read-only or unknown */
    }
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    CUSIM_TRY(cusim_check_init());
    if (!cusim_function_get(hfunc))
        return CUDA_ERROR_INVALID_HANDLE;
    /* A preference only: the sim has no L1 to split. */
    return config >= CU_FUNC_CACHE_PREFER_NONE && config <= CU_FUNC_CACHE_PREFER_EQUAL
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    CUSIM_TRY(cusim_check_init());
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    cu_function *f = cusim_function_get(hfunc);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->k->name;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    CUSIM_TRY(cusim_check_init());
    if (!hmod)
        return CUDA_ERROR_INVALID_VALUE;
    cu_function *f = cusim_function_get(hfunc);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *hmod = (CUmodule)(uintptr_t)f->mod->handle;
    return CUDA_SUCCESS;
}

/* Loading is eager in the sim: a function exists only once its code does. */
CUresult cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function)
{
    CUSIM_TRY(cusim_check_init());
    if (!state)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cusim_function_get(function))
        return CUDA_ERROR_INVALID_HANDLE;
    *state = CU_FUNCTION_LOADING_STATE_LOADED;
    return CUDA_SUCCESS;
}

CUresult cuFuncLoad(CUfunction function)
{
    CUSIM_TRY(cusim_check_init());
    return cusim_function_get(function) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Launch attributes: the ones that only tune performance are accepted and
 * have no effect; the ones that change what runs or when (cooperative
 * grids, clusters, programmatic dependent launch, completion events) are
 * features compute capability 8.0 or the sim lacks: CUDA_ERROR_NOT_SUPPORTED,
 * never silently ignored. */
static CUresult check_launch_attrs(const CUlaunchConfig *config)
{
    if (config->numAttrs > 0 && !config->attrs)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *a = &config->attrs[i];
        switch (a->id) {
        case CU_LAUNCH_ATTRIBUTE_IGNORE:
        case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
        case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
            break;
        case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
            if (a->value.sharedMemCarveout > 100 && a->value.sharedMemCarveout != (unsigned)-1)
                return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            if (a->value.cooperative)
                return CUDA_ERROR_NOT_SUPPORTED; /* COOPERATIVE_LAUNCH is 0 */
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            if (a->value.clusterDim.x > 1 || a->value.clusterDim.y > 1 ||
                a->value.clusterDim.z > 1)
                return CUDA_ERROR_NOT_SUPPORTED;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
        case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
        case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
        case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
            return CUDA_ERROR_NOT_SUPPORTED;
        default:
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **params,
                          void **extra, launch_fn launch)
{
    CUSIM_TRY(cusim_check_init());
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    CUSIM_TRY(check_launch_attrs(config));
    return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                  config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
                  params, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra)
{
    return launch_ex(config, f, kernelParams, extra, cuLaunchKernel);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                               void **extra)
{
    return launch_ex(config, f, kernelParams, extra, cuLaunchKernel_ptsz);
}
