/* OpenCL C kernels that exercise levelzero-sim's SPIR-V executor
 * (tests/ffi/test_spirv_executor.py).  Built by build.py in this folder:
 * clang-15 -cl-std=CL2.0 (-O0 and -O2 builds) + llvm-spirv-15. */
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

typedef struct pair {
    int key;
    float value;
    char tag;
} pair;

__constant float k_table[5] = {0.5f, 1.5f, -2.0f, 4.0f, 8.25f};
__global int g_counter = 7;

/* Local memory and barriers: each group reverses its slice. */
__kernel void local_reverse(__global const int *x, __global int *y)
{
    __local int tile[256];
    uint lid = get_local_id(0), n = get_local_size(0);
    tile[lid] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    y[get_global_id(0)] = tile[n - 1 - lid];
}

/* A tree reduction: barriers inside a loop. */
__kernel void tree_sum(__global const float *x, uint n, __global float *sums)
{
    __local float tile[256];
    uint lid = get_local_id(0), gid = get_global_id(0);
    tile[lid] = gid < n ? x[gid] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s)
            tile[lid] += tile[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        sums[get_group_id(0)] = tile[0];
}

/* Sub-group operations; out has 12 ints per work-item. */
__kernel void subgroups(__global const int *x, __global int *out)
{
    uint gid = get_global_id(0);
    int v = x[gid];
    __global int *o = out + 12 * gid;
    o[0] = (int)get_sub_group_size();
    o[1] = (int)get_max_sub_group_size();
    o[2] = (int)get_num_sub_groups();
    o[3] = (int)get_sub_group_id();
    o[4] = (int)get_sub_group_local_id();
    o[5] = sub_group_reduce_add(v);
    o[6] = sub_group_reduce_max(v);
    o[7] = sub_group_scan_inclusive_add(v);
    o[8] = sub_group_scan_exclusive_min(v);
    o[9] = sub_group_broadcast(v, 3);
    o[10] = sub_group_any(v > 40) + 2 * sub_group_all(v > -1000);
    o[11] = as_int(sub_group_reduce_add(as_float(v & 0x3fff) + 0.5f) > 0.0f ? 1 : 0);
}

/* Work-group collectives. */
__kernel void workgroups(__global const int *x, __global int *out)
{
    uint gid = get_global_id(0);
    int v = x[gid];
    out[3 * gid] = work_group_reduce_add(v);
    out[3 * gid + 1] = work_group_scan_inclusive_max(v);
    out[3 * gid + 2] = work_group_broadcast(v, 5);
}

/* Atomics on global and local memory. */
__kernel void atomics(__global int *g, __global long *g64, __global int *per_group)
{
    __local int counter;
    __local int lmax;
    uint lid = get_local_id(0);
    int gid = (int)get_global_id(0);
    if (lid == 0) {
        counter = 0;
        lmax = -1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    atomic_inc(&counter);
    atomic_max(&lmax, gid);
    atomic_add(&g[0], gid);
    atomic_sub(&g[1], 1);
    atomic_min(&g[2], -gid);
    atomic_max(&g[3], gid);
    atomic_or(&g[4], 1 << (gid % 31));
    atomic_and(&g[5], ~(1 << (gid % 31)));
    atomic_xor(&g[6], gid);
    atomic_cmpxchg(&g[7], 0, gid + 1); /* only the first succeeds */
    atomic_dec(&g[8]);
    atom_add(&g64[0], (long)gid << 33);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        per_group[2 * get_group_id(0)] = counter;
        per_group[2 * get_group_id(0) + 1] = lmax;
    }
}

/* Thread geometry in three dimensions; 8 values per work-item. */
__kernel void geometry(__global uint *out)
{
    size_t i = get_global_linear_id();
    __global uint *o = out + 8 * i;
    o[0] = (uint)get_global_id(0) + 1000 * (uint)get_global_id(1) + 1000000 * (uint)get_global_id(2);
    o[1] = (uint)get_local_id(0) + 100 * (uint)get_local_id(1) + 10000 * (uint)get_local_id(2);
    o[2] = (uint)get_group_id(0) + 100 * (uint)get_group_id(1) + 10000 * (uint)get_group_id(2);
    o[3] = (uint)get_global_size(0) + 1000 * (uint)get_global_size(1);
    o[4] = (uint)get_num_groups(0) + 100 * (uint)get_num_groups(1) + 10000 * (uint)get_num_groups(2);
    o[5] = (uint)get_local_linear_id();
    o[6] = get_work_dim();
    o[7] = (uint)get_local_size(2);
}

static int helper_sum(const pair *p, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += p[i].key * (p[i].tag == 'a' ? 2 : 1);
    return s;
}

static float pick(int which)
{
    switch (which) {
    case 0: return 10.0f;
    case 3: return 30.0f;
    case -7: return -70.0f;
    default: return k_table[(uint)which % 5u];
    }
}

/* Private arrays, structs, calls, switch, program-scope variables. */
__kernel void misc(__global const int *x, __global float *out, __global int *iout)
{
    int gid = (int)get_global_id(0);
    pair ps[4];
    for (int i = 0; i < 4; i++) {
        ps[i].key = x[gid] + i;
        ps[i].value = (float)i;
        ps[i].tag = i == 2 ? 'a' : 'b';
    }
    iout[2 * gid] = helper_sum(ps, 4);
    iout[2 * gid + 1] = g_counter + gid;
    out[gid] = pick(x[gid] % 9 - 4) + ps[gid % 4].value;
}

/* Integer built-ins; 16 results per work-item. */
__kernel void int_math(__global const int *a, __global const int *b, __global int *out)
{
    uint i = get_global_id(0);
    int x = a[i], y = b[i];
    uint ux = (uint)x, uy = (uint)y;
    __global int *o = out + 16 * i;
    o[0] = mul_hi(x, y);
    o[1] = (int)mul_hi(ux, uy);
    o[2] = (int)clz(ux);
    o[3] = (int)popcount(ux);
    o[4] = (int)rotate(ux, uy);
    o[5] = (int)abs_diff(x, y);
    o[6] = add_sat(x, y);
    o[7] = (int)sub_sat(ux, uy);
    o[8] = hadd(x, y);
    o[9] = clamp(x, -100, 100);
    o[10] = min(x, y) ^ max(ux, uy);
    o[11] = y != 0 ? x / y : 0;
    o[12] = y != 0 ? x % y : 0;
    o[13] = x >> (uy & 31);
    o[14] = (int)(ux >> (uy & 31));
    o[15] = (int)abs(x);
}

/* Float built-ins and vectors; 12 results per work-item. */
__kernel void float_math(__global const float *a, __global const float *b, __global float *out,
                         __global int *iout, __global double *dout)
{
    uint i = get_global_id(0);
    float x = a[i], y = b[i];
    float4 v = (float4)(x, y, x * y, x - y);
    float4 w = v * 2.0f + (float4)(1.0f, 2.0f, 3.0f, 4.0f);
    __global float *o = out + 12 * i;
    o[0] = fma(x, y, 1.0f);
    o[1] = fmod(x, y);
    o[2] = copysign(x, y);
    o[3] = floor(x) + ceil(y);
    o[4] = w.x + w.y * w.z - w.w;
    o[5] = dot(v.xy, v.zw);
    o[6] = mix(x, y, 0.25f);
    o[7] = step(x, y) + sign(x);
    o[8] = fmax(x, y) - fmin(x, y);
    o[9] = select(x, y, (int)(x < y));
    o[10] = trunc(x) + round(y);
    o[11] = sqrt(fabs(x)) + exp(-fabs(y));
    iout[2 * i] = convert_int_sat(x * 1e9f);
    iout[2 * i + 1] = convert_int_rte(y * 2.5f);
    dout[i] = (double)x * (double)y + 1.0 / 3.0;
}

/* Out of bounds on purpose: writes at index `at`. */
__kernel void poke(__global int *y, long at)
{
    if (get_global_id(0) == 0)
        y[at] = 1;
}

/* A barrier that only some work-items reach. */
__kernel void divergent_barrier(__global int *y)
{
    if (get_local_id(0) < 5)
        barrier(CLK_LOCAL_MEM_FENCE);
    y[get_global_id(0)] = 1;
}

/* vload4/vstore4, vload_half/vstore_half, a switch on a (signed) char. */
__kernel void vectors_and_halves(__global const float *x, __global float *y,
                                 __global const half *hx, __global half *hy, __global int *sw)
{
    size_t i = get_global_id(0);
    float4 v = vload4(i, x);
    vstore4(v * 2.0f + (float4)(0.0f, 1.0f, 2.0f, 3.0f), i, y);
    float h = vload_half(i, hx);
    vstore_half(h * 3.0f, i, hy);
    char c = (char)(i % 5) - 2;
    int r;
    switch (c) {
    case -2: r = 100; break;
    case -1: r = 200; break;
    case 1: r = 300; break;
    default: r = c;
    }
    sw[i] = r;
}

/* One sub-group runs a sub-group reduction the others skip, then the whole
 * group meets at a work-group reduction. */
__kernel void mixed_collectives(__global const int *x, __global int *out)
{
    int v = x[get_global_id(0)];
    if (get_sub_group_id() == 1)
        v = sub_group_reduce_add(v);
    out[get_global_id(0)] = work_group_reduce_add(v);
}
