// Intel sub-group shuffles (cl_intel_subgroups) of vectors: each component
// moves as the scalar shuffle moves it, every component from the same
// work-item.  Per work-item: shuffle by a varying lane, shuffle_xor by p[1],
// shuffle_down(x, y, p[0]) and shuffle_up(y, x, p[0]).  p[0] and p[1] are
// uniform, as the extension asks of the down/up delta.
// clang 15's header for spir64 does not declare them: declared here, with
// the mangled names llvm-spirv (--spirv-ext=+SPV_INTEL_subgroups) turns
// into OpSubgroupShuffle(Xor/Down/Up)INTEL.
#define OVL __attribute__((overloadable))
#define DECL(T)                                                            \
    T OVL intel_sub_group_shuffle(T, uint);                                \
    T OVL intel_sub_group_shuffle_xor(T, uint);                            \
    T OVL intel_sub_group_shuffle_down(T, T, uint);                        \
    T OVL intel_sub_group_shuffle_up(T, T, uint);
#define SHUF(T)                                                            \
    DECL(T)                                                                          \
    kernel void shuf_##T(global const T *x, global const T *y, global const uint *lane, \
                         global const uint *p, global T *out) {                         \
        size_t i = get_global_id(0);                                                     \
        T a = x[i], b = y[i];                                                            \
        out[4 * i + 0] = intel_sub_group_shuffle(a, lane[i]);                            \
        out[4 * i + 1] = intel_sub_group_shuffle_xor(a, p[1]);                           \
        out[4 * i + 2] = intel_sub_group_shuffle_down(a, b, p[0]);                       \
        out[4 * i + 3] = intel_sub_group_shuffle_up(b, a, p[0]);                         \
    }
SHUF(float2)
SHUF(float4)
SHUF(float8)
SHUF(float16)
SHUF(int4)
SHUF(uint2)
SHUF(uint8)
