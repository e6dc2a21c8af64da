// The last module of the linked program: lib_helper, for link_lib.cl.
float lib_helper(float x, int k)
{
    return fabs(x) * (float)k;
}
