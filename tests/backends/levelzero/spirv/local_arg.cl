// __local pointer kernel arguments (SYCL's local_accessor): the host gives
// each its size with zeKernelSetArgumentValue(kernel, i, size, NULL).
// A tree reduction in `scratch`, a counter in `hits`, beside the kernel's own
// __local array, which the arguments must not overlap.
kernel void reduce_sum(global const float *in, global float *sums, local float *scratch,
                       local uint *hits, global uint *checks) {
    local uint own[4];
    size_t l = get_local_id(0), n = get_local_size(0), g = get_group_id(0);
    if (l < 4) own[l] = 0xABCD0000u + (uint)l;
    if (l == 0) hits[0] = 0;
    scratch[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    atomic_inc(hits);
    for (size_t s = n / 2; s > 0; s >>= 1) {
        if (l < s) scratch[l] += scratch[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) {
        sums[g] = scratch[0];
        checks[2 * g] = hits[0];
        checks[2 * g + 1] = own[0] ^ own[1] ^ own[2] ^ own[3];
    }
}
