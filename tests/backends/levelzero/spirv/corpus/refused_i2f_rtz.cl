// Refused by name: an integer-to-float conversion rounding toward zero.
kernel void i2f_rtz(global const int *a, global float *f) {
    size_t i = get_global_id(0);
    f[i] = convert_float_rtz(a[i]);
}
