/* rootn on half: an OpenCL.std instruction the sim runs on no width, which
 * levelzero-sim refuses at module creation, naming it and the half type. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

kernel void half_rootn(global const half *a, global const int *n, global half *out)
{
    size_t i = get_global_id(0);
    out[i] = rootn(a[i], n[i]);
}
