// Structs by value (kernel arguments and private copies) and arrays of structs.
typedef struct { int a; float b; short c; char d; } small_t;            // 12 bytes
typedef struct { double w; int idx[3]; uchar flag; } big_t;             // 24 bytes
typedef struct { float re, im; } cfloat;

static cfloat cmul(cfloat x, cfloat y) {
    cfloat r = {x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re};
    return r;
}

kernel void struct_args(small_t s, global float *out, big_t g) {
    size_t i = get_global_id(0);
    out[i] = (float)(s.a + s.c + s.d) * s.b + (float)(g.w * g.idx[i % 3]) + (float)g.flag;
}

kernel void complex_pow(global const cfloat *in, global cfloat *out, int k) {
    size_t i = get_global_id(0);
    cfloat acc = {1.0f, 0.0f};
    for (int j = 0; j < k; j++)
        acc = cmul(acc, in[i]);
    out[i] = acc;
}

kernel void struct_array(global const small_t *in, global small_t *out) {
    size_t i = get_global_id(0);
    small_t tmp[2];
    tmp[0] = in[i];
    tmp[1] = in[(i + 1) % get_global_size(0)];
    tmp[0].a += tmp[1].c;
    tmp[0].b *= 2.0f;
    out[i] = tmp[i & 1];
}
