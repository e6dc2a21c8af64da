// lib_helper of another type than link_lib.cl imports (double, not float,
// and no int): linking it is refused.
double lib_helper(double x)
{
    return x * 3.0;
}
