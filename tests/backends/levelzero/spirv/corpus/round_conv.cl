// Integer-to-float and float-to-float conversions with a rounding mode:
// convert_float_rtz/_rtp/_rtn, an FPRoundingMode decoration on
// OpConvertSToF, OpConvertUToF and OpFConvert (the sim refused them once).
kernel void round_conv(global const int *a, global const ulong *l,
                       global const double *d, global float *f) {
    size_t i = get_global_id(0);
    f[7 * i + 0] = convert_float_rtz(a[i]);
    f[7 * i + 1] = convert_float_rtp(a[i]);
    f[7 * i + 2] = convert_float_rtn(a[i]);
    f[7 * i + 3] = convert_float_rtz(l[i]);
    f[7 * i + 4] = convert_float_rtp(l[i]);
    f[7 * i + 5] = convert_float_rtp(d[i]);
    f[7 * i + 6] = convert_float_rtn(d[i]);
}
