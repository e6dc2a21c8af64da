// Local memory with barriers, and atomics on global and local memory.
kernel void tree_sum(global const int *x, global int *out) {
    local int part[64];
    size_t l = get_local_id(0);
    part[l] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t w = get_local_size(0) / 2; w > 0; w /= 2) {
        if (l < w)
            part[l] += part[l + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        out[get_group_id(0)] = part[0];
}

kernel void transpose_tile(global const float *in, global float *out) {
    local float tile[8][9];
    size_t x = get_local_id(0), y = get_local_id(1);
    size_t w = get_global_size(0);
    tile[y][x] = in[get_global_id(1) * w + get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    size_t gx = get_group_id(1) * 8 + x, gy = get_group_id(0) * 8 + y;
    out[gy * get_global_size(1) + gx] = tile[x][y];
}

kernel void histogram(global const uchar *x, global uint *bins, global int *stats) {
    local uint lbins[16];
    size_t l = get_local_id(0);
    if (l < 16)
        lbins[l] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uchar v = x[get_global_id(0)];
    atomic_inc(&lbins[v & 15]);
    atomic_max(&stats[0], (int)v);
    atomic_min(&stats[1], (int)v);
    atomic_add(&stats[2], (int)v);
    atomic_or(&stats[3], 1 << (v & 31));
    atomic_xor(&stats[4], (int)v);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < 16)
        atomic_add(&bins[l], lbins[l]);
}

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
kernel void cas_counter(global int *counter, global int *slots, global long *sum) {
    int old;
    do {
        old = atomic_add(&counter[0], 0);
    } while (atomic_cmpxchg(&counter[0], old, old + 1) != old);
    slots[old] = (int)get_global_id(0);
    atom_add(sum, (long)get_global_id(0) << 33);
    atomic_xchg(&counter[1], 7);
}
