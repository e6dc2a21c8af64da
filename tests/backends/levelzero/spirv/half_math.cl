/* OpenCL.std on halves (cl_khr_fp16): each function the sim runs on float,
 * applied to half operands; test_spirv_half_math.py checks every result
 * against numpy's float16 of the float64 result.  Built at -O2 (clang-15
 * writes max, min and clamp as fmax, fmin and fclamp there). */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

#define UNARY 37

kernel void half_unary(global const half *a, global half *out)
{
    size_t i = get_global_id(0);
    half x = a[i];
    global half *o = out + UNARY * i;
    o[0] = acos(x);    o[1] = acosh(x);   o[2] = asin(x);    o[3] = asinh(x);
    o[4] = atan(x);    o[5] = atanh(x);   o[6] = cbrt(x);    o[7] = ceil(x);
    o[8] = cos(x);     o[9] = cosh(x);    o[10] = erfc(x);   o[11] = erf(x);
    o[12] = exp(x);    o[13] = exp2(x);   o[14] = exp10(x);  o[15] = expm1(x);
    o[16] = fabs(x);   o[17] = floor(x);  o[18] = log(x);    o[19] = log2(x);
    o[20] = log10(x);  o[21] = log1p(x);  o[22] = logb(x);   o[23] = rint(x);
    o[24] = round(x);  o[25] = rsqrt(x);  o[26] = sin(x);    o[27] = sinh(x);
    o[28] = sqrt(x);   o[29] = tan(x);    o[30] = tanh(x);   o[31] = trunc(x);
    o[32] = degrees(x); o[33] = radians(x); o[34] = sign(x);  o[35] = -x;
    o[36] = x;
}

#define BINARY 16

kernel void half_binary(global const half *a, global const half *b, global const int *k,
                        global half *out)
{
    size_t i = get_global_id(0);
    half x = a[i], y = b[i];
    global half *o = out + BINARY * i;
    o[0] = atan2(x, y);     o[1] = copysign(x, y);  o[2] = fdim(x, y);    o[3] = fmax(x, y);
    o[4] = fmin(x, y);      o[5] = fmod(x, y);      o[6] = hypot(x, y);   o[7] = nextafter(x, y);
    o[8] = pow(x, y);       o[9] = powr(x, y);      o[10] = remainder(x, y);
    o[11] = step(x, y);     o[12] = ldexp(x, k[i]); o[13] = pown(x, k[i]);
    o[14] = max(x, y);      o[15] = min(x, y);
}

#define TERNARY 4

kernel void half_ternary(global const half *a, global const half *b, global const half *c,
                         global half *out)
{
    size_t i = get_global_id(0);
    half x = a[i], y = b[i], z = c[i];
    global half *o = out + TERNARY * i;
    o[0] = fma(x, y, z);
    o[1] = mad(x, y, z);
    o[2] = clamp(x, y, z);
    o[3] = mix(x, y, z);
}

/* Vectors of halves (vload4 and vstore4 are vloadn and vstoren): lane by
 * lane, and the instructions that move halves' bits: select (the sign bit of
 * each short lane), bitselect, shuffle and shuffle2. */
#define VECTOR 9

kernel void half_vector(global const half *a, global const half *b, global const int *k,
                        global const short *s, global half *out)
{
    size_t i = get_global_id(0);
    half4 x = vload4(i, a), y = vload4(i, b);
    int4 n = vload4(i, k);
    short4 m = vload4(i, s);
    ushort4 lanes = as_ushort4(m) & (ushort)7;
    global half *o = out + 4 * VECTOR * i;
    vstore4(sin(x), 0, o);
    vstore4(atan2(x, y), 1, o);
    vstore4(fma(x, y, x), 2, o);
    vstore4(ldexp(x, n), 3, o);
    vstore4(select(x, y, m), 4, o);
    vstore4(bitselect(x, y, as_half4(m)), 5, o);
    vstore4(shuffle(x, lanes & (ushort)3), 6, o);
    vstore4(shuffle2(x, y, lanes), 7, o);
    vstore4(clamp(x, (half)-1.5, (half)2.0), 8, o);
}

/* A scalar select: the whole value picked. */
kernel void half_select(global const half *a, global const half *b, global const short *s,
                        global half *out)
{
    size_t i = get_global_id(0);
    out[i] = select(a[i], b[i], s[i]);
}
