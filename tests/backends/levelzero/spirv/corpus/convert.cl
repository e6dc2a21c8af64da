// Conversions: rounding modes and saturation.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define ID size_t i = get_global_id(0)

kernel void f2i(global const float *a, global int *out) {
    ID;
    float x = a[i];
    out[6 * i + 0] = convert_int_sat(x);
    out[6 * i + 1] = convert_int_sat_rte(x);
    out[6 * i + 2] = convert_int_sat_rtp(x);
    out[6 * i + 3] = convert_int_sat_rtn(x);
    out[6 * i + 4] = (isnan(x) || fabs(x) > 2e9f) ? 0 : (int)x;
    out[6 * i + 5] = (int)convert_uint_sat(x);
}

kernel void f2small(global const float *a, global char *c, global uchar *uc, global short *s) {
    ID;
    float x = a[i];
    c[i] = convert_char_sat(x);
    uc[i] = convert_uchar_sat_rte(x);
    s[i] = convert_short_sat_rtn(x);
}

kernel void d2l(global const double *a, global long *out, global float *f) {
    ID;
    double x = a[i];
    out[2 * i + 0] = convert_long_sat(x);
    out[2 * i + 1] = (long)convert_ulong_sat_rte(x);
    f[i] = (float)x;
}

kernel void i2f(global const int *a, global const long *b, global float *f, global double *d) {
    ID;
    f[2 * i + 0] = (float)a[i];
    f[2 * i + 1] = (float)b[i];
    d[i] = (double)b[i];
}

kernel void i2i_sat(global const int *a, global const long *b, global char *c, global ushort *us,
                    global int *w) {
    ID;
    c[i] = (char)a[i];
    us[i] = (ushort)b[i];
    w[i] = (int)(uchar)a[i] + (int)(short)b[i];
}

kernel void i2i_saturating(global const int *a, global char *c) {
    ID;
    c[i] = convert_char_sat(a[i]);
}
