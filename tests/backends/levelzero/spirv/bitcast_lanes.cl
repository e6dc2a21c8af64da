// Bitcasts between vectors of other lane counts (dpnp's complex kernels):
// each result is the same bytes, lanes laid out lowest first.  The inputs
// are computed on first, so that the casts are of values (built at -O0).
__kernel void lanes(__global const ulong2 *a, __global const uchar16 *b, __global ulong2 *o1,
                    __global uchar16 *o2, __global int4 *o3, __global ulong2 *o4,
                    __global short8 *o5)
{
    size_t i = get_global_id(0);
    ulong2 x = a[i] + (ulong2)1;
    uchar16 y = b[i] + (uchar16)3;
    o1[i] = as_ulong2(y);                           // 16 x 8 bits into 2 x 64
    o2[i] = as_uchar16(x);                          // 2 x 64 into 16 x 8
    o3[i] = as_int4(as_short8(x) + (short8)1);      // 64 into 16, then 16 into 32
    o4[i] = as_ulong2(as_double2(as_float4(x) * 1.0f) + 0.0); // via 32- and 64-bit floats
    o5[i] = as_short8(y);                           // 8 into 16
}
