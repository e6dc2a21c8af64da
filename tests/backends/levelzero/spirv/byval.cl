// By-value aggregate kernel arguments, as SYCL passes functors and structs:
// clang writes each as a Function-storage pointer decorated FuncParamAttr ByVal.
typedef struct { float re, im; } cfloat;  // 8 bytes, as std::complex<float>
typedef struct {
    double scale;
    int offset;
    float coef[3];
    char tag;
} params_t;  // 32 bytes, with padding inside and at the end

// out[i] = in[i] * w (complex).
kernel void cmul(global cfloat *out, global const cfloat *in, cfloat w) {
    size_t i = get_global_id(0);
    cfloat a = in[i];
    out[i].re = a.re * w.re - a.im * w.im;
    out[i].im = a.re * w.im + a.im * w.re;
}

// The struct before and after the arrays; the kernel writes its own copy.
kernel void affine(params_t p, global float *out, global const float *in) {
    size_t i = get_global_id(0);
    p.coef[0] += (float)get_global_id(0);  // each work-item's own copy
    out[i] = (float)(in[i] * p.scale) + p.coef[i % 3] + (float)(p.offset + p.tag);
}
