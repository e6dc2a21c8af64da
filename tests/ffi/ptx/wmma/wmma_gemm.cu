// A WMMA gemm as nvcuda::wmma's users write it: each warp computes one
// 16x16 tile of C = A B (+ C), fp16 in, f32 or f16 accumulate, A row- or
// column-major, the tiles read from global or staged through shared memory.
// make.sh compiles it to PTX for sm_80 and sm_90 (tests/ffi/test_ptx_wmma.py).
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

// C (M x N, row-major f32) = A (M x K) B (K x N) + C, straight from global
// memory; A row-major (lda = K) or column-major (lda = M), B row-major.
template <typename ALayout>
__device__ void gemm_global(const half *a, const half *b, float *c, int m, int n, int k, int lda)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles_n = n / 16;
    int tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm * 16 >= m)
        return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, ALayout> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    float *ct = c + tm * 16 * n + tn * 16;
    wmma::load_matrix_sync(acc, ct, n, wmma::mem_row_major);
    for (int kk = 0; kk < k; kk += 16) {
        const half *at = std::is_same<ALayout, wmma::row_major>::value ? a + tm * 16 * lda + kk
                                                                        : a + kk * lda + tm * 16;
        wmma::load_matrix_sync(fa, at, lda);
        wmma::load_matrix_sync(fb, b + kk * n + tn * 16, n);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(ct, acc, n, wmma::mem_row_major);
}

extern "C" __global__ void wmma_gemm_row(const half *a, const half *b, float *c, int m, int n, int k)
{
    gemm_global<wmma::row_major>(a, b, c, m, n, k, k);
}

extern "C" __global__ void wmma_gemm_col(const half *a, const half *b, float *c, int m, int n, int k)
{
    gemm_global<wmma::col_major>(a, b, c, m, n, k, m);
}

// D (M x N, column-major f16) = A B with an f16 accumulator starting at 0,
// each warp's tiles staged through shared memory; one warp per block.
extern "C" __global__ void wmma_gemm_shared_f16(const half *a, const half *b, half *d, int m, int n,
                                                int k)
{
    __shared__ __align__(32) half sa[16 * 16];
    __shared__ __align__(32) half sb[16 * 16];
    __shared__ __align__(32) half sd[16 * 16];
    int tiles_n = n / 16;
    int tm = blockIdx.x / tiles_n, tn = blockIdx.x % tiles_n;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> acc;
    wmma::fill_fragment(acc, __float2half(0.0f));
    for (int kk = 0; kk < k; kk += 16) {
        for (int i = threadIdx.x; i < 256; i += 32) {
            int r = i / 16, col = i % 16;
            sa[i] = a[(tm * 16 + r) * k + kk + col];
            sb[col * 16 + r] = b[(kk + r) * n + tn * 16 + col]; // B tile stored column-major
        }
        __syncwarp();
        wmma::load_matrix_sync(fa, sa, 16);
        wmma::load_matrix_sync(fb, sb, 16);
        wmma::mma_sync(acc, fa, fb, acc);
        __syncwarp();
    }
    wmma::store_matrix_sync(sd, acc, 16, wmma::mem_col_major);
    __syncwarp();
    for (int i = threadIdx.x; i < 256; i += 32) {
        int col = i / 16, r = i % 16;
        d[(tn * 16 + col) * m + tm * 16 + r] = sd[i];
    }
}
