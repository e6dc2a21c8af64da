// A second export of lib_helper (link_lib2.cl has one): linking both is refused.
float lib_helper(float x, int k)
{
    return x + (float)k;
}
