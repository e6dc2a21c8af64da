// Program linking (ZE_experimental_module_program): a kernel module that
// imports functions and a table.  llvm-spirv writes each declaration with
// LinkageAttributes Import; link_lib.cl exports scale_add and lib_bias (and
// imports lib_helper from link_lib2.cl in turn), link_lib2.cl store_twice,
// whose pointer parameter it writes as a uint* (the float's bits), as
// llvm-spirv types an opaque pointer by its module's own uses.
float scale_add(float x, float y);
void store_twice(global float *dst, float v);
extern global float lib_bias[4];

kernel void linked(global float *out, global const float *a, global const float *b,
                   global float *twice)
{
    size_t i = get_global_id(0);
    out[i] = sqrt(scale_add(a[i], b[i])) + lib_bias[i % 4];
    store_twice(twice + i, a[i]);
}
