// Vectors: arithmetic, swizzles, shuffles, dot products, vload/vstore.
#define ID size_t i = get_global_id(0)

kernel void float4_ops(global const float4 *a, global const float4 *b, global float4 *out,
                       global float *dots) {
    ID;
    float4 x = a[i], y = b[i];
    out[3 * i + 0] = x * y + (float4)(1.0f, 2.0f, 3.0f, 4.0f);
    out[3 * i + 1] = x.wzyx - y.xxyy;
    out[3 * i + 2] = select(x, y, x < y);
    dots[i] = dot(x, y);
}

kernel void shuffles(global const int4 *a, global const int4 *b, global int8 *out) {
    ID;
    int4 x = a[i], y = b[i];
    uint4 m = (uint4)(3, 0, 2, 1);
    uint8 m2 = (uint8)(7, 0, 6, 1, 5, 2, 4, 3);
    int4 s = shuffle(x, m);
    out[2 * i + 0] = (int8)(s, x.s13 + y.s20, (int2)(x.s3, y.s0));
    out[2 * i + 1] = shuffle2(x, y, m2);
}

kernel void vload_store(global const float *a, global float *out) {
    ID;
    float3 v = vload3(i, a);
    vstore3(v.zxy * 2.0f, i, out);
}

kernel void uchar_vectors(global const uchar8 *a, global const uchar8 *b, global uchar8 *out) {
    ID;
    out[2 * i + 0] = add_sat(a[i], b[i]);
    out[2 * i + 1] = (a[i] >> (uchar8)2) ^ b[i];
}

kernel void double2_ops(global const double2 *a, global double2 *out) {
    ID;
    double2 x = a[i];
    out[i] = x.yx * x + (double2)(0.25, -0.5);
}
