/* cuda-sim: the per-thread-default-stream entry points (_ptsz for stream
 * arguments, _ptds for the synchronous copies), which the driver exports for
 * code built with --default-stream per-thread and which cuGetProcAddress
 * returns under CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.  Each runs its
 * base entry point with stream 0 meaning CU_STREAM_PER_THREAD. */
#include "cusim.h"

CUSIM_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
    PTDS_CALL(cuMemcpyHtoD_v2(dst, src, n));
}

CUSIM_API CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
    PTDS_CALL(cuMemcpyDtoH_v2(dst, src, n));
}

CUSIM_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    PTDS_CALL(cuMemcpyDtoD_v2(dst, src, n));
}

CUSIM_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    PTDS_CALL(cuMemcpy(dst, src, n));
}

CUSIM_API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *c) { PTDS_CALL(cuMemcpy2D_v2(c)); }

CUSIM_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n)
{
    PTDS_CALL(cuMemsetD8_v2(d, v, n));
}

CUSIM_API CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n)
{
    PTDS_CALL(cuMemsetD16_v2(d, v, n));
}

CUSIM_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n)
{
    PTDS_CALL(cuMemsetD32_v2(d, v, n));
}

CUSIM_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    PTDS_CALL(cuMemcpyAsync(dst, src, n, s));
}

CUSIM_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n,
                                             CUstream s)
{
    PTDS_CALL(cuMemcpyHtoDAsync_v2(dst, src, n, s));
}

CUSIM_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    PTDS_CALL(cuMemcpyDtoHAsync_v2(dst, src, n, s));
}

CUSIM_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                             CUstream s)
{
    PTDS_CALL(cuMemcpyDtoDAsync_v2(dst, src, n, s));
}

CUSIM_API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *c, CUstream s)
{
    PTDS_CALL(cuMemcpy2DAsync_v2(c, s));
}

CUSIM_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
    PTDS_CALL(cuMemsetD8Async(d, v, n, s));
}

CUSIM_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
    PTDS_CALL(cuMemsetD16Async(d, v, n, s));
}

CUSIM_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
    PTDS_CALL(cuMemsetD32Async(d, v, n, s));
}

CUSIM_API CUresult cuStreamQuery_ptsz(CUstream s) { PTDS_CALL(cuStreamQuery(s)); }
CUSIM_API CUresult cuStreamSynchronize_ptsz(CUstream s) { PTDS_CALL(cuStreamSynchronize(s)); }

CUSIM_API CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags)
{
    PTDS_CALL(cuStreamWaitEvent(s, e, flags));
}

CUSIM_API CUresult cuStreamGetPriority_ptsz(CUstream s, int *p)
{
    PTDS_CALL(cuStreamGetPriority(s, p));
}

CUSIM_API CUresult cuStreamGetFlags_ptsz(CUstream s, unsigned int *f)
{
    PTDS_CALL(cuStreamGetFlags(s, f));
}

CUSIM_API CUresult cuStreamGetCtx_ptsz(CUstream s, CUcontext *c) { PTDS_CALL(cuStreamGetCtx(s, c)); }

CUSIM_API CUresult cuStreamGetId_ptsz(CUstream s, unsigned long long *id)
{
    PTDS_CALL(cuStreamGetId(s, id));
}

CUSIM_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    PTDS_CALL(cuStreamBeginCapture_v2(s, mode));
}

CUSIM_API CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
    PTDS_CALL(cuStreamEndCapture(s, g));
}

CUSIM_API CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st)
{
    PTDS_CALL(cuStreamIsCapturing(s, st));
}

CUSIM_API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream s, CUstreamCaptureStatus *st,
                                                  cuuint64_t *id, CUgraph *g,
                                                  const CUgraphNode **deps, size_t *ndeps)
{
    PTDS_CALL(cuStreamGetCaptureInfo_v2(s, st, id, g, deps, ndeps));
}

CUSIM_API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *st,
                                                  cuuint64_t *id, CUgraph *g,
                                                  const CUgraphNode **deps,
                                                  const CUgraphEdgeData **edges, size_t *ndeps)
{
    PTDS_CALL(cuStreamGetCaptureInfo_v3(s, st, id, g, deps, edges, ndeps));
}

CUSIM_API CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *user)
{
    PTDS_CALL(cuLaunchHostFunc(s, fn, user));
}

CUSIM_API CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { PTDS_CALL(cuEventRecord(e, s)); }

CUSIM_API CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags)
{
    PTDS_CALL(cuEventRecordWithFlags(e, s, flags));
}

CUSIM_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                       unsigned int gz, unsigned int bx, unsigned int by,
                                       unsigned int bz, unsigned int shared, CUstream s,
                                       void **params, void **extra)
{
    PTDS_CALL(cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra));
}

CUSIM_API CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream s) { PTDS_CALL(cuGraphLaunch(x, s)); }

CUSIM_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t n, CUmemoryPool pool, CUstream s)
{
    PTDS_CALL(cuMemAllocFromPoolAsync(d, n, pool, s));
}

CUSIM_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream s)
{
    PTDS_CALL(cuMemAllocAsync(d, n, s));
}

CUSIM_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream s) { PTDS_CALL(cuMemFreeAsync(d, s)); }
