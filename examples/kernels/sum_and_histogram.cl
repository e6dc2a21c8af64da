/* An OpenCL C kernel for examples/custom_kernel_spirv.py.
 *
 * Each work-group (at most 256 work-items) sums its slice of x, through a
 * sub-group reduction and __local memory, and adds its slice's histogram of
 * the integer parts of x (16 bins) to a global one with atomics.
 *
 * Rebuild the committed SPIR-V (clang 15 + llvm-spirv 15):
 *   clang-15 -x cl -cl-std=CL2.0 -target spir64-unknown-unknown -O2 \
 *     -Xclang -finclude-default-header -Xclang -no-opaque-pointers \
 *     -emit-llvm -c sum_and_histogram.cl -o /tmp/k.bc
 *   llvm-spirv-15 /tmp/k.bc -o sum_and_histogram.spv
 */
#define BINS 16

__kernel void sum_and_histogram(__global const float *x, uint n, __global float *group_sums,
                                __global uint *histogram)
{
    __local float partial[256 / 16]; /* one per sub-group */
    __local uint bins[BINS];
    uint lid = get_local_id(0), gid = get_global_id(0);
    if (lid < BINS)
        bins[lid] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    float v = gid < n ? x[gid] : 0.0f;
    if (gid < n)
        atomic_inc(&bins[clamp((int)v, 0, BINS - 1)]);
    float s = sub_group_reduce_add(v);
    if (get_sub_group_local_id() == 0)
        partial[get_sub_group_id()] = s;
    barrier(CLK_LOCAL_MEM_FENCE);

    if (lid == 0) {
        float total = 0.0f;
        for (uint i = 0; i < get_num_sub_groups(); i++)
            total += partial[i];
        group_sums[get_group_id(0)] = total;
    }
    if (lid < BINS)
        atomic_add(&histogram[lid], bins[lid]);
}
