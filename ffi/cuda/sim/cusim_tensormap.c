/* cuda-sim: tensor maps for TMA (cp.async.bulk.tensor).
 *
 * CUtensorMap is 128 opaque bytes; cuda-sim stores in them the fields of
 * ffi/sim/sim_tensormap.h, which the PTX interpreter reads when a kernel
 * copies a box (and tensormap.replace writes on the device).  The checks
 * are the CUDA driver API reference's for cuTensorMapEncodeTiled and
 * cuTensorMapEncodeIm2col.  Interleaved layouts, the packed sub-byte types
 * and the 128B atom swizzles are not modelled: NOT_SUPPORTED, never a map
 * that would copy wrongly. */
#include <string.h>

#include "cusim.h"
#include "../../sim/sim_tensormap.h"

_Static_assert(sizeof(CUtensorMap) == sizeof(sim_tensormap), "CUtensorMap holds sim_tensormap");

/* The fields both encoders take, into m: INVALID_VALUE or NOT_SUPPORTED as
 * the driver answers, else CUDA_SUCCESS.  The rank's range is the caller's. */
static CUresult encode_common(sim_tensormap *m, CUtensorMapDataType type, cuuint32_t rank,
                              void *addr, const cuuint64_t *dim, const cuuint64_t *strides,
                              const cuuint32_t *estrides, CUtensorMapInterleave interleave,
                              CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                              CUtensorMapFloatOOBfill fill)
{
    if (!addr || !dim || !estrides || (rank > 1 && !strides) || l2 > 3 || interleave > 2 ||
        swizzle > 6 || fill > 1)
        return CUDA_ERROR_INVALID_VALUE;
    if (type > 12)
        return type <= 15 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    if (fill && type < 6) /* the NaN fill is for floating-point types only */
        return CUDA_ERROR_INVALID_VALUE;
    if (interleave || swizzle >= 4) /* interleaved layouts; CUDA 12.8's 128B atom swizzles */
        return CUDA_ERROR_NOT_SUPPORTED;
    memset(m, 0, sizeof *m);
    m->addr = (uint64_t)(uintptr_t)addr;
    m->rank_m1 = (uint8_t)(rank - 1);
    m->elemtype = (uint8_t)type;
    m->swizzle = (uint8_t)swizzle;
    m->fill = (uint8_t)fill;
    m->l2 = (uint8_t)l2;
    for (cuuint32_t i = 0; i < rank; i++) {
        if (estrides[i] > 8)
            return CUDA_ERROR_INVALID_VALUE;
        m->dim[i] = dim[i];
        m->estride[i] = (uint8_t)estrides[i];
        if (i)
            m->stride[i - 1] = strides[i - 1];
    }
    return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                cuuint32_t tensorRank, void *globalAddress,
                                const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                const cuuint32_t *boxDim, const cuuint32_t *elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion,
                                CUtensorMapFloatOOBfill oobFill)
{
    if (!tensorMap || !boxDim || tensorRank < 1 || tensorRank > 5)
        return CUDA_ERROR_INVALID_VALUE;
    sim_tensormap m;
    CUresult rc = encode_common(&m, tensorDataType, tensorRank, globalAddress, globalDim,
                                globalStrides, elementStrides, interleave, swizzle, l2Promotion,
                                oobFill);
    if (rc)
        return rc;
    for (cuuint32_t i = 0; i < tensorRank; i++) {
        if (boxDim[i] > 256)
            return CUDA_ERROR_INVALID_VALUE;
        m.box[i] = (uint16_t)boxDim[i];
    }
    if (sim_tensormap_invalid(&m))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(tensorMap, &m, sizeof m);
    return CUDA_SUCCESS;
}

/* An im2col map: the tensor is N[D][H]WC (dimension 0 the channels, the
 * last the images); each copy loads pixelsPerColumn pixels of
 * channelsPerPixel channels, walking the bounding box that the corners
 * mark in W, H, D (arrays in that order, as globalDim's dimensions 1..). */
CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                 cuuint32_t tensorRank, void *globalAddress,
                                 const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                 const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner,
                                 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                 const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                 CUtensorMapFloatOOBfill oobFill)
{
    if (!tensorMap || !pixelBoxLowerCorner || !pixelBoxUpperCorner || tensorRank < 3 ||
        tensorRank > 5 || channelsPerPixel > 256 || pixelsPerColumn > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    sim_tensormap m;
    CUresult rc = encode_common(&m, tensorDataType, tensorRank, globalAddress, globalDim,
                                globalStrides, elementStrides, interleave, swizzle, l2Promotion,
                                oobFill);
    if (rc)
        return rc;
    int lim = sim_im2col_corner_max(tensorRank);
    for (cuuint32_t i = 0; i + 2 < tensorRank; i++) {
        int lo = pixelBoxLowerCorner[i], hi = pixelBoxUpperCorner[i];
        if (lo < -lim - 1 || lo > lim || hi < -lim - 1 || hi > lim)
            return CUDA_ERROR_INVALID_VALUE;
        m.lower[i] = (int16_t)lo;
        m.upper[i] = (int16_t)hi;
    }
    m.im2col = 1;
    m.cpp = (uint16_t)channelsPerPixel;
    m.ppc = (uint16_t)pixelsPerColumn;
    if (sim_tensormap_im2col_invalid(&m))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(tensorMap, &m, sizeof m);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
    if (!tensorMap || !globalAddress)
        return CUDA_ERROR_INVALID_VALUE;
    sim_tensormap m;
    memcpy(&m, tensorMap, sizeof m);
    m.addr = (uint64_t)(uintptr_t)globalAddress;
    if (m.im2col ? sim_tensormap_im2col_invalid(&m) != NULL : sim_tensormap_invalid(&m) != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(tensorMap, &m, sizeof m);
    return CUDA_SUCCESS;
}
