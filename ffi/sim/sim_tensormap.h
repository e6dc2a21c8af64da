/* The contents cuda-sim gives CUDA's opaque 128-byte CUtensorMap: written by
 * the driver's cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col
 * (ffi/cuda/sim/cusim_tensormap.c) and by
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
    uint8_t im2col;      /* 1: an im2col map (box[] unused; the fields below) */
    int16_t lower[3];    /* im2col: the bounding box's lower corner in W, H, D */
    int16_t upper[3];    /* im2col: its upper corner, as offsets from each dimension's last index */
    uint16_t cpp;        /* im2col: channels per pixel, 1..256 */
    uint16_t ppc;        /* im2col: pixels per column, 1..1024 */
    uint8_t pad[10];
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

/* NULL when what a map of either mode shares is valid; else why not.  The
 * rules are cuTensorMapEncodeTiled's and cuTensorMapEncodeIm2col's (CUDA
 * driver API reference). */
static inline const char *sim_tensormap_shared_invalid(const sim_tensormap *m, unsigned rank)
{
    if (rank > 5)
        return "rank over 5";
    if (!sim_tensormap_esize(m->elemtype))
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
        if (!m->estride[i] || m->estride[i] > 8)
            return "an element stride outside 1..8";
        if (i && (m->stride[i - 1] % 16 || m->stride[i - 1] >= (1ull << 40)))
            return "a global stride not a multiple of 16 below 2^40";
    }
    return NULL;
}

/* NULL when a row of `inner` bytes (the box's inner dimension) fits the
 * map's swizzle and the 16-byte granularity; else why not. */
static inline const char *sim_tensormap_inner_invalid(const sim_tensormap *m, size_t inner)
{
    unsigned span = sim_tensormap_span(m->swizzle);
    if (inner % 16)
        return "the box's inner dimension is not a multiple of 16 bytes";
    if (span && inner > span)
        return "the box's inner dimension is wider than the swizzle span";
    return NULL;
}

/* NULL when the map describes a tiled tensor cuda-sim can copy; else why not. */
static inline const char *sim_tensormap_invalid(const sim_tensormap *m)
{
    unsigned rank = m->rank_m1 + 1u;
    const char *why = m->im2col ? "an im2col map in tile mode" : sim_tensormap_shared_invalid(m, rank);
    for (unsigned i = 0; !why && i < rank; i++)
        if (!m->box[i] || m->box[i] > 256)
            why = "a box dimension outside 1..256";
    return why ? why : sim_tensormap_inner_invalid(m, (size_t)m->box[0] * sim_tensormap_esize(m->elemtype));
}

/* The largest magnitude of an im2col corner of a rank-3..5 map (the
 * bounding box's corners are 16-, 8- and 5-bit signed values). */
static inline int sim_im2col_corner_max(unsigned rank)
{
    return rank == 3 ? 32767 : rank == 4 ? 127 : 15;
}

/* NULL when the map describes an im2col tensor cuda-sim can copy; else why not. */
static inline const char *sim_tensormap_im2col_invalid(const sim_tensormap *m)
{
    unsigned rank = m->rank_m1 + 1u;
    const char *why = !m->im2col   ? "a tiled map in im2col mode"
                      : rank < 3   ? "an im2col map of rank below 3"
                                   : sim_tensormap_shared_invalid(m, rank);
    if (why)
        return why;
    if (!m->cpp || m->cpp > 256 || !m->ppc || m->ppc > 1024)
        return "channels per pixel outside 1..256 or pixels per column outside 1..1024";
    int lim = sim_im2col_corner_max(rank);
    for (unsigned i = 0; i + 2 < rank; i++) {
        if (m->lower[i] < -lim - 1 || m->lower[i] > lim || m->upper[i] < -lim - 1 ||
            m->upper[i] > lim)
            return "a bounding-box corner out of range for the rank";
        if ((int64_t)m->dim[i + 1] + m->upper[i] - m->lower[i] < 1)
            return "an empty bounding box";
    }
    return sim_tensormap_inner_invalid(m, (size_t)m->cpp * sim_tensormap_esize(m->elemtype));
}
#endif /* CUSIM_SIM_TENSORMAP_H */
