/* cuda-sim: tensor maps for TMA (cp.async.bulk.tensor).
 *
 * CUtensorMap is 128 opaque bytes; cuda-sim stores in them the fields of
 * ffi/sim/sim_tensormap.h, which the PTX interpreter reads when a kernel
 * copies a box (and tensormap.replace writes on the device).  The checks
 * are the CUDA driver API reference's for cuTensorMapEncodeTiled.
 * Interleaved layouts and im2col maps are not modelled: NOT_SUPPORTED, never
 * a map that would copy wrongly. */
#include <string.h>

#include "cusim.h"
#include "../../sim/sim_tensormap.h"

_Static_assert(sizeof(CUtensorMap) == sizeof(sim_tensormap), "CUtensorMap holds sim_tensormap");

CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                cuuint32_t tensorRank, void *globalAddress,
                                const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                const cuuint32_t *boxDim, const cuuint32_t *elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion,
                                CUtensorMapFloatOOBfill oobFill)
{
    if (!tensorMap || !globalAddress || !globalDim || !boxDim || !elementStrides ||
        (tensorRank > 1 && !globalStrides) || tensorRank < 1 || tensorRank > 5 ||
        l2Promotion > 3)
        return CUDA_ERROR_INVALID_VALUE;
    if (interleave != 0 || (swizzle >= 4 && swizzle <= 6)) /* CUDA 12.8's 128B atom swizzles */
        return CUDA_ERROR_NOT_SUPPORTED;
    if (tensorDataType > 12)
        return tensorDataType <= 15 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    sim_tensormap m;
    memset(&m, 0, sizeof m);
    m.addr = (uint64_t)(uintptr_t)globalAddress;
    m.rank_m1 = (uint8_t)(tensorRank - 1);
    m.elemtype = (uint8_t)tensorDataType;
    m.swizzle = (uint8_t)(swizzle > 255 ? 255 : swizzle);
    m.fill = (uint8_t)(oobFill > 255 ? 255 : oobFill);
    m.l2 = (uint8_t)l2Promotion;
    for (cuuint32_t i = 0; i < tensorRank; i++) {
        if (boxDim[i] > 256 || elementStrides[i] > 8)
            return CUDA_ERROR_INVALID_VALUE;
        m.dim[i] = globalDim[i];
        m.box[i] = (uint16_t)boxDim[i];
        m.estride[i] = (uint8_t)elementStrides[i];
        if (i)
            m.stride[i - 1] = globalStrides[i - 1];
    }
    if (sim_tensormap_invalid(&m))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(tensorMap, &m, sizeof m);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                 cuuint32_t tensorRank, void *globalAddress,
                                 const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                 const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner,
                                 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                 const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                 CUtensorMapFloatOOBfill oobFill)
{
    (void)tensorMap, (void)tensorDataType, (void)tensorRank, (void)globalAddress;
    (void)globalDim, (void)globalStrides, (void)pixelBoxLowerCorner, (void)pixelBoxUpperCorner;
    (void)channelsPerPixel, (void)pixelsPerColumn, (void)elementStrides, (void)interleave;
    (void)swizzle, (void)l2Promotion, (void)oobFill;
    return CUDA_ERROR_NOT_SUPPORTED; /* cp.async.bulk.tensor's im2col mode is not modelled */
}

CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
    if (!tensorMap || !globalAddress)
        return CUDA_ERROR_INVALID_VALUE;
    sim_tensormap m;
    memcpy(&m, tensorMap, sizeof m);
    m.addr = (uint64_t)(uintptr_t)globalAddress;
    if (sim_tensormap_invalid(&m))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(tensorMap, &m, sizeof m);
    return CUDA_SUCCESS;
}
