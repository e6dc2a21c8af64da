// The last module of the linked program: lib_helper, for link_lib.cl, and
// store_twice, for link_kernel.cl, which declares its pointer a float*.
float lib_helper(float x, int k)
{
    return fabs(x) * (float)k;
}

void store_twice(global uint *dst, float v)
{
    *dst = as_uint(v * 2.0f);
}
