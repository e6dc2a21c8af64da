// Float arithmetic in half, float and double, each operation rounded as written.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define ID size_t i = get_global_id(0)

kernel void f32_ops(global const float *a, global const float *b, global float *out) {
    ID;
    float x = a[i], y = b[i];
    out[6 * i + 0] = x + y;
    out[6 * i + 1] = x - y;
    out[6 * i + 2] = x * y;
    out[6 * i + 3] = x / y;
    out[6 * i + 4] = -x * 0.5f + y;
    out[6 * i + 5] = x < y ? x : (x == y ? 1.0f : y);
}

kernel void f64_ops(global const double *a, global const double *b, global double *out) {
    ID;
    double x = a[i], y = b[i];
    out[5 * i + 0] = x + y;
    out[5 * i + 1] = x - y;
    out[5 * i + 2] = x * y;
    out[5 * i + 3] = x / y;
    out[5 * i + 4] = (x + y) * (x - y);
}

kernel void f16_ops(global const half *a, global const half *b, global half *out) {
    ID;
    half x = a[i], y = b[i];
    out[4 * i + 0] = x + y;
    out[4 * i + 1] = x * y;
    out[4 * i + 2] = x / y;
    out[4 * i + 3] = (half)((float)x * (float)y);
}

kernel void mixed_widths(global const float *a, global const double *b, global double *out) {
    ID;
    out[2 * i + 0] = a[i] * b[i];
    out[2 * i + 1] = (double)(a[i] * (float)b[i]);
}
