// OpenCL.std math built-ins the sim implements, in float and double.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define ID size_t i = get_global_id(0)

kernel void math_f32(global const float *a, global const float *b, global float *out) {
    ID;
    float x = a[i], y = b[i];
    out[12 * i + 0] = sqrt(fabs(x));
    out[12 * i + 1] = floor(x);
    out[12 * i + 2] = ceil(x);
    out[12 * i + 3] = trunc(x);
    out[12 * i + 4] = rint(x);
    out[12 * i + 5] = round(x);
    out[12 * i + 6] = copysign(x, y);
    out[12 * i + 7] = fmin(x, y);
    out[12 * i + 8] = fmax(x, y);
    out[12 * i + 9] = fmod(x, y);
    out[12 * i + 10] = exp(x);
    out[12 * i + 11] = fma(x, y, x);
}

kernel void math_f64(global const double *a, global const double *b, global double *out) {
    ID;
    double x = a[i], y = b[i];
    out[8 * i + 0] = sqrt(fabs(x));
    out[8 * i + 1] = sin(x);
    out[8 * i + 2] = log(fabs(x));
    out[8 * i + 3] = pow(fabs(x), y);
    out[8 * i + 4] = atan2(x, y);
    out[8 * i + 5] = fma(x, y, -x);
    out[8 * i + 6] = hypot(x, y);
    out[8 * i + 7] = cbrt(x);
}
