/* The contents cuda-sim gives CUDA's opaque 128-byte CUtensorMap: written by
 * the driver's cuTensorMapEncodeTiled (ffi/cuda/sim/cusim_tensormap.c) and by
 * PTX's tensormap.replace, read by cp.async.bulk.tensor
 * (ffi/sim/ptx/ptx_exec_bulk.c).  All zeros is the template a kernel fills
 * in field by field (Triton's device-side descriptors do so); the enums are
 * cuda.h's (CUtensorMapDataType, ...Interleave, ...Swizzle, ...FloatOOBfill).
 */
#ifndef CUSIM_SIM_TENSORMAP_H
#define CUSIM_SIM_TENSORMAP_H
#include <stddef.h>
#include <stdint.h>

typedef struct sim_tensormap {
    uint64_t addr;       /* the tensor's global address */
    uint64_t dim[5];     /* elements in each dimension, innermost first */
    uint64_t stride[4];  /* bytes between consecutive indices of dimensions 1..4 */
    uint16_t box[5];     /* the box's extent in each dimension (1..256) */
    uint8_t estride[5];  /* traversal strides (1..8) */
    uint8_t rank_m1;     /* rank - 1, as tensormap.replace.tile.rank writes it */
    uint8_t elemtype;    /* CU_TENSOR_MAP_DATA_TYPE_* */
    uint8_t interleave;  /* CU_TENSOR_MAP_INTERLEAVE_*: only NONE runs */
    uint8_t swizzle;     /* CU_TENSOR_MAP_SWIZZLE_*: NONE, 32B, 64B, 128B */
    uint8_t fill;        /* CU_TENSOR_MAP_FLOAT_OOB_FILL_*: NONE (zeros) or NAN_REQUEST_ZERO_FMA */
    uint8_t l2;          /* CU_TENSOR_MAP_L2_PROMOTION_* (a hint) */
    uint8_t pad[27];
} sim_tensormap;

_Static_assert(sizeof(sim_tensormap) == 128, "CUtensorMap is 128 bytes");

/* The bytes of one element of a CUtensorMapDataType, or 0 for an unknown type. */
static inline unsigned sim_tensormap_esize(unsigned t)
{
    static const unsigned char size[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 8, 2, 4, 4};
    return t < sizeof size ? size[t] : 0;
}

/* The swizzle span in bytes (0 for none). */
static inline unsigned sim_tensormap_span(unsigned swizzle)
{
    return swizzle >= 1 && swizzle <= 3 ? 16u << swizzle : 0;
}

/* NULL when the map describes a tiled tensor cuda-sim can copy; else why not.
 * The rules are cuTensorMapEncodeTiled's (CUDA driver API reference). */
static inline const char *sim_tensormap_invalid(const sim_tensormap *m)
{
    unsigned rank = m->rank_m1 + 1u, es = sim_tensormap_esize(m->elemtype);
    if (rank > 5)
        return "rank over 5";
    if (!es)
        return "unknown element type";
    if (m->interleave)
        return "interleaved layouts are not supported";
    if (m->swizzle > 3)
        return "unknown swizzle mode";
    if (m->fill > 1)
        return "unknown out-of-bounds fill";
    if (m->addr % 16)
        return "global address not 16-byte aligned";
    for (unsigned i = 0; i < rank; i++) {
        if (!m->dim[i] || m->dim[i] > (1ull << 32))
            return "a global dimension outside 1..2^32";
        if (!m->box[i] || m->box[i] > 256)
            return "a box dimension outside 1..256";
        if (!m->estride[i] || m->estride[i] > 8)
            return "an element stride outside 1..8";
        if (i && (m->stride[i - 1] % 16 || m->stride[i - 1] >= (1ull << 40)))
            return "a global stride not a multiple of 16 below 2^40";
    }
    if ((size_t)m->box[0] * es % 16)
        return "the box's inner dimension is not a multiple of 16 bytes";
    unsigned span = sim_tensormap_span(m->swizzle);
    if (span && (size_t)m->box[0] * es > span)
        return "the box's inner dimension is wider than the swizzle span";
    return NULL;
}
#endif /* CUSIM_SIM_TENSORMAP_H */
