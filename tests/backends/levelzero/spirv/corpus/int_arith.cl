// Integer arithmetic in every width: wrap-around, division, shifts, builtins.
// (x % (y | 1), not x % y: at -O2 clang pairs x / y with x % y through a
// freeze, which llvm-spirv 15 cannot translate.)
#define ID size_t i = get_global_id(0)

kernel void i8_ops(global const char *a, global const char *b, global char *out) {
    ID;
    char x = a[i], y = b[i];
    out[8 * i + 0] = x + y;
    out[8 * i + 1] = x - y;
    out[8 * i + 2] = x * y;
    out[8 * i + 3] = y ? x / y : 0;
    out[8 * i + 4] = x % (y | 1);
    out[8 * i + 5] = add_sat(x, y);
    out[8 * i + 6] = x >> (y & 7);
    out[8 * i + 7] = abs_diff(x, y);
}

kernel void u8_ops(global const uchar *a, global const uchar *b, global uchar *out) {
    ID;
    uchar x = a[i], y = b[i];
    out[6 * i + 0] = x + y;
    out[6 * i + 1] = sub_sat(x, y);
    out[6 * i + 2] = y ? x / y : 0;
    out[6 * i + 3] = x >> (y & 7);
    out[6 * i + 4] = popcount(x);
    out[6 * i + 5] = hadd(x, y);
}

kernel void i16_ops(global const short *a, global const short *b, global short *out) {
    ID;
    short x = a[i], y = b[i];
    out[6 * i + 0] = x + y;
    out[6 * i + 1] = x * y;
    out[6 * i + 2] = y ? x / y : 0;
    out[6 * i + 3] = x % (y | 1);
    out[6 * i + 4] = sub_sat(x, y);
    out[6 * i + 5] = rotate(x, y);
}

kernel void i32_ops(global const int *a, global const int *b, global int *out) {
    ID;
    int x = a[i], y = b[i];
    out[10 * i + 0] = x + y;
    out[10 * i + 1] = x * y;
    out[10 * i + 2] = (y && !(x == INT_MIN && y == -1)) ? x / y : 0;
    out[10 * i + 3] = (x == INT_MIN && (y | 1) == -1) ? 0 : x % (y | 1);
    out[10 * i + 4] = x << (y & 31);
    out[10 * i + 5] = x >> (y & 31);
    out[10 * i + 6] = mul_hi(x, y);
    out[10 * i + 7] = clz(x);
    out[10 * i + 8] = max(x, y) ^ min(x, y);
    out[10 * i + 9] = (int)((uint)x >> (y & 31));
}

kernel void u32_ops(global const uint *a, global const uint *b, global uint *out) {
    ID;
    uint x = a[i], y = b[i];
    out[6 * i + 0] = x * y;
    out[6 * i + 1] = y ? x / y : 0;
    out[6 * i + 2] = x % (y | 1);
    out[6 * i + 3] = mul_hi(x, y);
    out[6 * i + 4] = add_sat(x, y);
    out[6 * i + 5] = ctz(x);
}

kernel void i64_ops(global const long *a, global const long *b, global long *out) {
    ID;
    long x = a[i], y = b[i];
    out[7 * i + 0] = x + y;
    out[7 * i + 1] = x * y;
    out[7 * i + 2] = (y && !(x == LONG_MIN && y == -1)) ? x / y : 0;
    out[7 * i + 3] = (x == LONG_MIN && (y | 1) == -1) ? 0 : x % (y | 1);
    out[7 * i + 4] = x >> (y & 63);
    out[7 * i + 5] = mul_hi(x, y);
    out[7 * i + 6] = (long)((ulong)x / ((ulong)y | 1));
}
