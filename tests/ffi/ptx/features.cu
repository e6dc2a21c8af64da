// Kernels that exercise each PTX instruction family the cuda-sim executor
// supports.  features.ptx is this file compiled by
//   nvcc -ptx -arch=compute_80 -O3 features.cu -o features.ptx
// (tests/ffi/test_ptx_exec.py checks it is current when nvcc exists).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// Block sum: grid-stride loads, warp shuffles, static and dynamic shared
// memory, barriers, shared and global atomics.
extern "C" __global__ void block_sum(const float *x, int n, float *out, int *blocks_done)
{
    extern __shared__ float partial[];
    __shared__ int arrived;
    int t = threadIdx.x;
    if (t == 0)
        arrived = 0;
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
        v += x[i];
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    __syncthreads();
    if ((t & 31) == 0) {
        partial[t / 32] = v;
        atomicAdd(&arrived, 1);
    }
    __syncthreads();
    if (t == 0) {
        float s = 0.0f;
        for (int w = 0; w < arrived; w++)
            s += partial[w];
        atomicAdd(out, s);
        atomicAdd(blocks_done, 1);
    }
}

// Warp votes and shuffles inside divergent branches (one warp per block).
extern "C" __global__ void warp_divergent(unsigned *out)
{
    int lane = threadIdx.x & 31;
    unsigned *o = out + 8 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (lane % 3 == 0) {
        unsigned m = __activemask();
        o[0] = m;
        o[1] = __ballot_sync(m, lane & 1);
        o[2] = __any_sync(m, lane == 9);
        o[3] = __all_sync(m, lane < 30);
        // rotate values among the active lanes by index
        int k = __popc(m & ((1u << lane) - 1));
        int src = __fns(m, 0, (k + 1) % __popc(m) + 1);
        o[4] = __shfl_sync(m, lane * 10, src);
    } else {
        unsigned m = __activemask();
        o[0] = m;
        o[1] = __ballot_sync(m, lane > 16);
        o[2] = __any_sync(m, lane == 9);
        o[3] = __all_sync(m, lane != 0);
        o[4] = 0;
    }
    unsigned full = __activemask();
    o[5] = full;
    o[6] = __shfl_xor_sync(0xffffffffu, lane, 5, 16);   // butterfly within 16-lane segments
    o[7] = __shfl_up_sync(0xffffffffu, lane + 100, 3, 8); // up within 8-lane segments
}

// A loop whose trip count differs per lane, then a shuffle after reconvergence.
extern "C" __global__ void collatz(const unsigned *start, unsigned *steps, unsigned *after)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long v = start[i];
    unsigned s = 0;
    while (v != 1) {
        v = (v & 1) ? 3 * v + 1 : v / 2;
        s++;
    }
    steps[i] = s;
    after[i] = __shfl_down_sync(0xffffffffu, s, 1);
}

extern "C" __global__ void atomics(int *i32, unsigned *u32, unsigned long long *u64, float *f32,
                                   double *f64, int *sh_out)
{
    __shared__ int sh[4];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 4)
        sh[threadIdx.x] = threadIdx.x == 1 ? 1000000 : 0;
    __syncthreads();
    atomicAdd(&i32[0], t);
    atomicMin(&i32[1], 1000 - t);
    atomicMax(&i32[2], t * 3 - 50);
    atomicAnd(&i32[3], ~(1 << (t % 31)));
    atomicOr(&i32[4], 1 << (t % 29));
    atomicXor(&i32[5], t);
    atomicExch(&i32[6], 7);
    atomicCAS(&i32[7], 0, t + 1);
    atomicInc(&u32[0], 17);
    atomicDec(&u32[1], 5);
    atomicMin(&u32[2], 4000000000u - t);
    atomicMax(&u32[3], t);
    atomicAdd(&u64[0], 1ull << 33);
    atomicMin(&u64[1], 1000ull - t);
    atomicMax(&u64[2], (unsigned long long)t << 40);
    atomicCAS(&u64[3], 0ull, 5ull);
    atomicExch(&u64[4], 9ull);
    atomicAnd(&u64[5], ~(1ull << (t % 63)));
    atomicOr(&u64[6], 1ull << (t % 61));
    atomicXor(&u64[7], (unsigned long long)t << 32);
    atomicAdd(&f32[0], 0.5f);
    atomicAdd(&f64[0], 0.25);
    atomicAdd(&sh[0], 2);
    atomicMin(&sh[1], t);
    atomicMax(&sh[2], t);
    atomicXor(&sh[3], t);
    __syncthreads();
    if (threadIdx.x < 4)
        atomicAdd(&sh_out[threadIdx.x], sh[threadIdx.x]);
}

// 3-D grids and blocks: every thread writes its coordinates.
extern "C" __global__ void coords(unsigned *out)
{
    unsigned bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    unsigned tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned *o = out + 4 * (bx * nt + tx);
    o[0] = threadIdx.x | threadIdx.y << 10 | threadIdx.z << 20;
    o[1] = blockIdx.x | blockIdx.y << 10 | blockIdx.z << 20;
    o[2] = blockDim.x | blockDim.y << 10 | blockDim.z << 20;
    o[3] = gridDim.x | gridDim.y << 10 | gridDim.z << 20;
}

__device__ __noinline__ unsigned long long factorial(unsigned n)
{
    return n <= 1 ? 1ull : n * factorial(n - 1);
}

__device__ __noinline__ float2 swap_scale(float2 v, float s)
{
    return make_float2(v.y * s, v.x * s);
}

// .func calls (recursive, by-value aggregates) and local memory.
extern "C" __global__ void calls_local(const int *idx, unsigned long long *fact, float *pairs, int *picked)
{
    int t = threadIdx.x;
    fact[t] = factorial(t % 21);
    float2 p = swap_scale(make_float2(t, -t), 0.5f);
    pairs[2 * t] = p.x;
    pairs[2 * t + 1] = p.y;
    int local[24];
    for (int i = 0; i < 24; i++)
        local[i] = i * i + t;
    picked[t] = local[idx[t] % 24];
}

// Integer arithmetic in 16, 32 and 64 bits.
extern "C" __global__ void int_ops(const int *a, const int *b, const long long *c, const long long *d,
                                   long long *out)
{
    int t = threadIdx.x;
    int x = a[t], y = b[t];
    long long p = c[t], q = d[t];
    short hs = (short)x, hy = (short)(y | 1);
    long long *o = out + 24 * t;
    o[0] = x + y;
    o[1] = x - y;
    o[2] = x * y;
    o[3] = __mulhi(x, y);
    o[4] = (long long)x * y;
    o[5] = y ? x / y : 0;
    o[6] = y ? x % y : 0;
    o[7] = (unsigned)x / ((unsigned)y | 1u);
    o[8] = min(x, y) ^ max(x, y) << 1;
    o[9] = (x >> (y & 31)) ^ ((unsigned)x >> (y & 31)) ^ (x << (y & 7));
    o[10] = __popc(x) | __clz(y) << 8 | __ffs(x) << 16;
    o[11] = __brev(x);
    o[12] = __byte_perm(x, y, 0x5140);
    o[13] = __funnelshift_l(x, y, t) ^ __funnelshift_r(x, y, t * 3);
    o[14] = p * q;
    o[15] = __mul64hi(p, q);
    o[16] = q ? p / q : 0;
    o[17] = q ? p % q : 0;
    o[18] = (p >> (t & 63)) ^ (long long)((unsigned long long)p >> (t & 63));
    o[19] = __popcll(p) | __clzll(q) << 8;
    o[20] = (short)(hs * hy) + (short)(hs / hy);
    o[21] = abs(x) + llabs(p);
    o[22] = __sad(x, y, 7u);
    o[23] = __umulhi((unsigned)x, (unsigned)y);
}

// Float arithmetic: f32, f64, fma, division, the approximate and the
// full-precision transcendentals.
extern "C" __global__ void float_ops(const float *a, const float *b, const double *c, float *o32, double *o64)
{
    int t = threadIdx.x;
    float x = a[t], y = b[t];
    double p = c[t];
    float *o = o32 + 16 * t;
    o[0] = x + y;
    o[1] = x * y;
    o[2] = fmaf(x, y, 1.0f);
    o[3] = x / y;
    o[4] = sqrtf(fabsf(x));
    o[5] = __fdividef(x, y);
    o[6] = __expf(x * 0.01f);
    o[7] = __sinf(x) + __cosf(y);
    o[8] = __logf(fabsf(y) + 1.0f);
    o[9] = rsqrtf(fabsf(x) + 1.0f);
    o[10] = expf(x * 0.01f);
    o[11] = sinf(x);
    o[12] = logf(fabsf(y) + 1.0f);
    o[13] = tanhf(x * 0.1f);
    o[14] = fminf(x, y) + fmaxf(x, y) * 2.0f;
    o[15] = copysignf(y, x) + truncf(x) + floorf(y) + ceilf(x) + rintf(y);
    double *q = o64 + 8 * t;
    q[0] = p * p + p;
    q[1] = fma(p, p, -1.0);
    q[2] = 1.0 / p;
    q[3] = sqrt(fabs(p));
    q[4] = exp(p * 0.001);
    q[5] = log(fabs(p) + 1.0);
    q[6] = sin(p);
    q[7] = pow(fabs(p) + 1.0, 0.3);
}

// cvt with rounding modes, and half/bfloat16 conversions.
extern "C" __global__ void conversions(const float *a, const double *d, const long long *ll,
                                       int *oi, float *of, unsigned short *oh)
{
    int t = threadIdx.x;
    float x = a[t];
    double p = d[t];
    long long v = ll[t];
    int *i = oi + 8 * t;
    i[0] = __float2int_rn(x);
    i[1] = __float2int_rz(x);
    i[2] = __float2int_rd(x);
    i[3] = __float2int_ru(x);
    i[4] = __float2uint_rn(x);
    i[5] = __double2int_rz(p);
    i[6] = (int)__float2ll_rd(x);
    i[7] = (signed char)v + (unsigned short)v;
    float *f = of + 8 * t;
    f[0] = __ll2float_rn(v);
    f[1] = __ll2float_rz(v);
    f[2] = __ll2float_rd(v);
    f[3] = __ll2float_ru(v);
    f[4] = __double2float_rn(p);
    f[5] = __double2float_rz(p);
    f[6] = __double2float_rd(p);
    f[7] = __double2float_ru(p);
    unsigned short *h = oh + 8 * t;
    h[0] = __half_as_ushort(__float2half_rn(x));
    h[1] = __half_as_ushort(__float2half_rz(x));
    h[2] = __half_as_ushort(__float2half_rd(x));
    h[3] = __half_as_ushort(__float2half_ru(x));
    h[4] = __bfloat16_as_ushort(__float2bfloat16_rn(x));
    h[5] = __bfloat16_as_ushort(__float2bfloat16_rz(x));
    h[6] = __half_as_ushort(__hadd(__float2half_rn(x), __float2half_rn(1.0f)));
    h[7] = __half_as_ushort(__float2half_rn(__half2float(__float2half_rn(x)) * 2.0f + __bfloat162float(__float2bfloat16_rn(x))));
}

// An access past an allocation: the launch must fail with an illegal address.
extern "C" __global__ void out_of_bounds(float *x, long long at)
{
    x[at] = 1.0f;
}
