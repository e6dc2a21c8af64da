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
 * The softmax is computed online in one pass over the keys (running maximum
 * and rescaled running sum), with the output row itself as the accumulator, so
 * no scratch memory is needed.
 */
#include "ar_compute.h"

AR_KERNEL(attention_f32, ar_u64, bh, ar_u64, seq_q, ar_u64, seq_k, ar_u64, d, float, scale,
          ar_u32, causal, AR_GLOBAL const float *, q, AR_GLOBAL const float *, k,
          AR_GLOBAL const float *, v, AR_GLOBAL float *, out)
{
    ar_u64 rows = bh * seq_q;
    for (ar_u64 row = AR_GLOBAL_ID_X; row < rows; row += AR_GLOBAL_SIZE_X) {
        ar_u64 head = row / seq_q;
        ar_u64 i = row % seq_q;
        AR_GLOBAL const float *qi = q + row * d;
        AR_GLOBAL const float *kh = k + head * seq_k * d;
        AR_GLOBAL const float *vh = v + head * seq_k * d;
        AR_GLOBAL float *o = out + row * d;
        ar_u64 keys = seq_k;
        if (causal && i + 1 < keys)
            keys = i + 1;
        float running_max = 0.0f;
        float running_sum = 0.0f;
        for (ar_u64 j = 0; j < keys; j++) {
            AR_GLOBAL const float *kj = kh + j * d;
            AR_GLOBAL const float *vj = vh + j * d;
            float score = 0.0f;
            for (ar_u64 t = 0; t < d; t++)
                score += qi[t] * kj[t];
            score *= scale;
            if (j == 0) {
                running_max = score;
                running_sum = 1.0f;
                for (ar_u64 t = 0; t < d; t++)
                    o[t] = vj[t];
            } else if (score > running_max) {
                /* A new maximum: rescale what was accumulated so far. */
                float shrink = ar_expf(running_max - score);
                running_max = score;
                running_sum = running_sum * shrink + 1.0f;
                for (ar_u64 t = 0; t < d; t++)
                    o[t] = o[t] * shrink + vj[t];
            } else {
                float weight = ar_expf(score - running_max);
                running_sum += weight;
                for (ar_u64 t = 0; t < d; t++)
                    o[t] += weight * vj[t];
            }
        }
        float inv = 1.0f / running_sum;
        for (ar_u64 t = 0; t < d; t++)
            o[t] *= inv;
    }
}
