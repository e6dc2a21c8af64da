// The library link_kernel.cl imports from (no kernels of its own); it
// imports lib_helper from link_lib2.cl.
float lib_helper(float x, int k);

global float lib_bias[4] = {0.5f, -1.0f, 2.0f, 0.25f};

float scale_add(float x, float y)
{
    return exp(x) * 2.0f + lib_helper(y, 3);
}
