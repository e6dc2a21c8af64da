// OpenCL.std functions whose results are exact (no rounding): nextafter and
// logb, in float and double (dpnp's nextafter and frexp-like kernels use
// them).  out[2i] = nextafter(a[i], b[i]), out[2i + 1] = logb(a[i]).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void exact_f32(__global const float *a, __global const float *b, __global float *out)
{
    size_t i = get_global_id(0);
    out[2 * i] = nextafter(a[i], b[i]);
    out[2 * i + 1] = logb(a[i]);
}

__kernel void exact_f64(__global const double *a, __global const double *b, __global double *out)
{
    size_t i = get_global_id(0);
    out[2 * i] = nextafter(a[i], b[i]);
    out[2 * i + 1] = logb(a[i]);
}
