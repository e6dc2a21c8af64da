// Sub-group collectives (16 work-items per sub-group on the sim).
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
kernel void sg_ops(global const int *x, global int *out) {
    size_t i = get_global_id(0);
    int v = x[i];
    out[6 * i + 0] = sub_group_reduce_add(v);
    out[6 * i + 1] = sub_group_scan_inclusive_max(v);
    out[6 * i + 2] = sub_group_scan_exclusive_add(v);
    out[6 * i + 3] = sub_group_broadcast(v, 3);
    out[6 * i + 4] = sub_group_any(v > 90) + 2 * sub_group_all(v > -1000);
    out[6 * i + 5] = (int)get_sub_group_local_id() + 100 * (int)get_sub_group_id();
}

kernel void sg_float(global const float *x, global float *out) {
    size_t i = get_global_id(0);
    out[2 * i + 0] = sub_group_reduce_min(x[i]);
    out[2 * i + 1] = sub_group_reduce_max(x[i]);
}
