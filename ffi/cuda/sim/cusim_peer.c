/* Peer access and peer copies between two devices.
 *
 * Every pair of distinct sim devices can reach each other's memory (device
 * memory is host memory, so the "link" is always there); a device is not its
 * own peer, as in CUDA (cuDeviceCanAccessPeer, in cusim_core.c).  Peer access is bookkeeping on the context: kernels
 * are not refused memory of a device whose access was never enabled.  The
 * copies themselves are the engine's peer copies (arsim_op_copy_peer): they
 * take both devices' copy engines and the peer link's bandwidth. */
#include "cusim.h"

/* The current context and the bit of the peer context's device. */
static CUresult peer_bit(CUcontext peerContext, cu_ctx **cur, uint64_t *bit)
{
    CUSIM_TRY(cusim_current_ctx(cur));
    cu_ctx *peer = cusim_ctx_from_handle(peerContext);
    if (!peer)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (peer->device == (*cur)->device)
        return CUDA_ERROR_INVALID_DEVICE;
    *bit = 1ull << peer->device;
    return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    cu_ctx *c;
    uint64_t bit;
    CUSIM_TRY(peer_bit(peerContext, &c, &bit));
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t old = __atomic_fetch_or(&c->peers, bit, __ATOMIC_ACQ_REL);
    return old & bit ? CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED : CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    cu_ctx *c;
    uint64_t bit;
    CUSIM_TRY(peer_bit(peerContext, &c, &bit));
    uint64_t old = __atomic_fetch_and(&c->peers, ~bit, __ATOMIC_ACQ_REL);
    return old & bit ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

/* dst and src are n bytes of device memory of their contexts' devices. */
static CUresult peer_args(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src,
                          CUcontext srcContext, size_t n)
{
    CUSIM_TRY(cusim_check_init());
    cu_ctx *dc = cusim_ctx_from_handle(dstContext), *sc = cusim_ctx_from_handle(srcContext);
    if (!dc || !sc)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (n == 0)
        return CUDA_SUCCESS;
    arsim_alloc a;
    const unsigned dev_kinds = ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED;
    if (arsim_mem_lookup((void *)(uintptr_t)dst, &a) != ARSIM_OK || !(a.kind & dev_kinds) ||
        a.device != dc->device)
        return CUDA_ERROR_INVALID_VALUE;
    if (arsim_mem_lookup((void *)(uintptr_t)src, &a) != ARSIM_OK || !(a.kind & dev_kinds) ||
        a.device != sc->device)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    CUSIM_TRY(peer_args(dstDevice, dstContext, srcDevice, srcContext, ByteCount));
    return cusim_copy1d((void *)(uintptr_t)dstDevice, (const void *)(uintptr_t)srcDevice,
                        ByteCount, ARSIM_COPY_D2D, hStream, 0);
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                      CUcontext srcContext, size_t ByteCount)
{
    CUSIM_TRY(peer_args(dstDevice, dstContext, srcDevice, srcContext, ByteCount));
    return cusim_copy1d((void *)(uintptr_t)dstDevice, (const void *)(uintptr_t)srcDevice,
                        ByteCount, ARSIM_COPY_D2D, NULL, 1);
}
