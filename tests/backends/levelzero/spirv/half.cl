/* Half arithmetic, conversions and comparisons (cl_khr_fp16): each checked
 * against numpy float16 by test_spirv_half.py.  llvm-spirv 15 declares only
 * Float16Buffer for these; float16_cap.spvasm declares Float16 itself. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

kernel void half_arith(global const half *a, global const half *b, global half *sum,
                       global half *diff, global half *prod, global half *quot,
                       global half *neg)
{
    size_t i = get_global_id(0);
    half x = a[i], y = b[i];
    sum[i] = x + y;
    diff[i] = x - y;
    prod[i] = x * y;
    quot[i] = x / y;
    neg[i] = -x;
}

kernel void half_convert(global const float *f, global const double *d, global half *from_f,
                         global half *from_d, global const half *h, global float *to_f,
                         global double *to_d)
{
    size_t i = get_global_id(0);
    from_f[i] = (half)f[i];
    from_d[i] = (half)d[i];
    to_f[i] = (float)h[i];
    to_d[i] = (double)h[i];
}

kernel void half_compare(global const half *a, global const half *b, global int *lt,
                         global int *le, global int *eq, global int *ne, global int *nan)
{
    size_t i = get_global_id(0);
    half x = a[i], y = b[i];
    lt[i] = x < y;
    le[i] = x <= y;
    eq[i] = x == y;
    ne[i] = x != y;
    nan[i] = isnan(x);
}
