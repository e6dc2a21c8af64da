/* cuda-sim: interprocess handles, refused.
 *
 * The sim's device memory and events live in one process: another process
 * has no way to reach them.  So the devices report no IPC
 * (CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, _HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
 * and _MEMPOOL_SUPPORTED_HANDLE_TYPES are 0), no pool is made shareable
 * (cuMemPoolCreate), and the calls that export or import a handle say
 * CUDA_ERROR_NOT_SUPPORTED where a GPU would hand one out, after the checks a
 * GPU makes on their arguments. */
#include "cusim.h"

CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    CUSIM_TRY(cusim_check_init());
    cu_event *e = arsim_handle_get((uint64_t)(uintptr_t)event, HK_EVENT);
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!pHandle || !(e->flags & CU_EVENT_INTERPROCESS))
        return CUDA_ERROR_INVALID_VALUE; /* only an interprocess event has a handle */
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    (void)handle;
    CUSIM_TRY(cusim_check_init());
    return phEvent ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    CUSIM_TRY(cusim_check_init());
    arsim_alloc a;
    if (!pHandle || arsim_mem_lookup((void *)(uintptr_t)dptr, &a) != ARSIM_OK ||
        a.kind != ARSIM_MEM_DEVICE)
        return CUDA_ERROR_INVALID_VALUE; /* device memory only */
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    (void)handle;
    (void)Flags;
    CUSIM_TRY(cusim_check_init());
    return pdptr ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    (void)dptr;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_INVALID_VALUE; /* nothing was ever opened */
}

/* A pool exports only the handle types it was made with, and no sim pool
 * has one. */
CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                          CUmemAllocationHandleType handleType,
                                          unsigned long long flags)
{
    (void)handle_out;
    (void)pool;
    (void)handleType;
    (void)flags;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                            CUmemAllocationHandleType handleType,
                                            unsigned long long flags)
{
    (void)handle;
    (void)handleType;
    (void)flags;
    CUSIM_TRY(cusim_check_init());
    return pool_out ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr)
{
    (void)shareData_out;
    (void)ptr;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_INVALID_VALUE; /* no pool is shareable */
}

CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                                CUmemPoolPtrExportData *shareData)
{
    (void)pool;
    CUSIM_TRY(cusim_check_init());
    return ptr_out && shareData ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
}
