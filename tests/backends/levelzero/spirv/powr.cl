/* OpenCL C's powr (x^y for x >= 0: NaN for x < 0, 0^0, inf^0 and 1^inf, +0
 * for either zero) in half, float and double: out[i] = powr(a[i], b[i]). */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

kernel void powr_f16(global const half *a, global const half *b, global half *out)
{
    size_t i = get_global_id(0);
    out[i] = powr(a[i], b[i]);
}

kernel void powr_f32(global const float *a, global const float *b, global float *out)
{
    size_t i = get_global_id(0);
    out[i] = powr(a[i], b[i]);
}

kernel void powr_f64(global const double *a, global const double *b, global double *out)
{
    size_t i = get_global_id(0);
    out[i] = powr(a[i], b[i]);
}
