// Collectives on halves (dpnp's f2 sums, cumulative sums and products):
// each float reduction or scan step rounds to half, in work-item order.
// Eight results per work-item.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void half_groups(__global const half *x, __global half *out)
{
    size_t i = get_global_id(0);
    half v = x[i];
    __global half *o = out + 8 * i;
    o[0] = work_group_reduce_add(v);
    o[1] = work_group_scan_inclusive_add(v);
    o[2] = sub_group_reduce_add(v);
    o[3] = sub_group_scan_exclusive_add(v);
    o[4] = sub_group_reduce_min(v);
    o[5] = work_group_reduce_max(v);
    o[6] = sub_group_non_uniform_scan_inclusive_mul(v);
    o[7] = sub_group_broadcast(v, 3);
}
