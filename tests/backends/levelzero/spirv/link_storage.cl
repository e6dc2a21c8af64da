// lib_helper as link_lib.cl imports it, but store_twice with a __local
// pointer where link_kernel.cl passes a __global one: linking is refused.
float lib_helper(float x, int k)
{
    return fabs(x) * (float)k;
}

void store_twice(local uint *dst, float v)
{
    *dst = as_uint(v * 2.0f);
}
