/* sqrt on half: OpenCL.std on half values, which levelzero-sim refuses at
 * module creation rather than running on the wrong width. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

kernel void half_sqrt(global const half *a, global half *out)
{
    size_t i = get_global_id(0);
    out[i] = sqrt(a[i]);
}
