// OpenCL.std functions whose results are exact (no rounding but ldexp's
// correctly rounded subnormals): nextafter, logb and ldexp, in float and
// double (dpnp's nextafter and ldexp kernels use them).
// out[3i] = nextafter(a[i], b[i]), out[3i + 1] = logb(a[i]),
// out[3i + 2] = ldexp(a[i], k[i]).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void exact_f32(__global const float *a, __global const float *b, __global const int *k,
                        __global float *out)
{
    size_t i = get_global_id(0);
    out[3 * i] = nextafter(a[i], b[i]);
    out[3 * i + 1] = logb(a[i]);
    out[3 * i + 2] = ldexp(a[i], k[i]);
}

__kernel void exact_f64(__global const double *a, __global const double *b, __global const int *k,
                        __global double *out)
{
    size_t i = get_global_id(0);
    out[3 * i] = nextafter(a[i], b[i]);
    out[3 * i + 1] = logb(a[i]);
    out[3 * i + 2] = ldexp(a[i], k[i]);
}
