/* Scaled dot-product attention in the portable dialect (ar_portable.h).
 *
 *   out = softmax(scale * Q K^T [+ causal mask]) V   per (batch, head)
 *
 * q and out are [batch*heads, seq_q, head_dim], k and v are
 * [batch*heads, seq_k, head_dim], all packed.  causal != 0 masks key j > query
 * i (top-left aligned, as torch's scaled_dot_product_attention(is_causal=True)),
 * so every query row keeps key 0.
 *
 * One thread per query row, grid-stride over batch*heads*seq_q (launch 1-D).
 * Pass 1 finds the row's maximum score and softmax denominator in one sweep
 * (rescaling the running sum when the maximum grows); pass 2 accumulates the
 * weighted rows of v in float registers, AR_ATTENTION_CHUNK output columns at
 * a time (recomputing the scores per chunk: no scratch memory needed, and no
 * rounding of partial sums to the output dtype).
 * Kernels: attention_f32 and attention_f16 (IEEE half stored as ar_u16).
 */
#include "ar_compute.h"

#define AR_ATTENTION_CHUNK 64

#define AR_ATTENTION_SCORE(LOAD, score, q_at, k_at)                                            \
    float score = 0.0f;                                                                        \
    for (ar_u64 t = 0; t < d; t++)                                                             \
        score += LOAD(q, q_at + t) * LOAD(k, k_at + t);                                        \
    score *= scale;

#define AR_ATTENTION_KERNEL(dt, T, LOAD, STORE)                                                \
    AR_KERNEL(attention_##dt, ar_u64, bh, ar_u64, seq_q, ar_u64, seq_k, ar_u64, d, float,      \
              scale, ar_u32, causal, AR_GLOBAL const T *, q, AR_GLOBAL const T *, k,           \
              AR_GLOBAL const T *, v, AR_GLOBAL T *, out)                                      \
    {                                                                                          \
        ar_u64 rows = bh * seq_q;                                                              \
        for (ar_u64 row = AR_GLOBAL_ID_X; row < rows; row += AR_GLOBAL_SIZE_X) {               \
            ar_u64 head_at = row / seq_q * seq_k * d;                                          \
            ar_u64 i = row % seq_q;                                                            \
            ar_u64 q_at = row * d;                                                             \
            ar_u64 keys = seq_k;                                                               \
            if (causal && i + 1 < keys)                                                        \
                keys = i + 1;                                                                  \
            float top = 0.0f;                                                                  \
            float total = 0.0f;                                                                \
            for (ar_u64 j = 0; j < keys; j++) {                                                \
                AR_ATTENTION_SCORE(LOAD, score, q_at, head_at + j * d)                         \
                if (j == 0) {                                                                  \
                    top = score;                                                               \
                    total = 1.0f;                                                              \
                } else if (score > top) {                                                      \
                    total = total * ar_expf(top - score) + 1.0f;                               \
                    top = score;                                                               \
                } else {                                                                       \
                    total += ar_expf(score - top);                                             \
                }                                                                              \
            }                                                                                  \
            float inv = 1.0f / total;                                                          \
            for (ar_u64 t0 = 0; t0 < d; t0 += AR_ATTENTION_CHUNK) {                            \
                ar_u64 width = d - t0 < AR_ATTENTION_CHUNK ? d - t0 : AR_ATTENTION_CHUNK;      \
                float acc[AR_ATTENTION_CHUNK];                                                 \
                AR_NO_UNROLL                                                                   \
                for (ar_u64 u = 0; u < width; u++)                                             \
                    acc[u] = 0.0f;                                                             \
                for (ar_u64 j = 0; j < keys; j++) {                                            \
                    AR_ATTENTION_SCORE(LOAD, score, q_at, head_at + j * d)                     \
                    float weight = ar_expf(score - top);                                       \
                    AR_NO_UNROLL                                                               \
                    for (ar_u64 u = 0; u < width; u++)                                         \
                        acc[u] += weight * LOAD(v, head_at + j * d + t0 + u);                  \
                }                                                                              \
                AR_NO_UNROLL                                                                   \
                for (ar_u64 u = 0; u < width; u++)                                             \
                    STORE(out, q_at + t0 + u, acc[u] * inv);                                   \
            }                                                                                  \
        }                                                                                      \
    }

AR_ATTENTION_KERNEL(f32, float, AR_LOAD_F32, AR_STORE_F32)
AR_ATTENTION_KERNEL(f16, ar_u16, AR_LOAD_F16, AR_STORE_F16)
