/* sinpi on half: an OpenCL.std instruction the sim runs on no width, which
 * levelzero-sim refuses at module creation, naming it and the half type. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

kernel void half_sinpi(global const half *a, global half *out)
{
    size_t i = get_global_id(0);
    out[i] = sinpi(a[i]);
}
