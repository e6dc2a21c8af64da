// Program linking (ZE_experimental_module_program): a kernel module that
// imports a function and a table.  llvm-spirv writes each declaration with
// LinkageAttributes Import; link_lib.cl exports them (and imports
// lib_helper from link_lib2.cl in turn).
float scale_add(float x, float y);
extern global float lib_bias[4];

kernel void linked(global float *out, global const float *a, global const float *b)
{
    size_t i = get_global_id(0);
    out[i] = sqrt(scale_add(a[i], b[i])) + lib_bias[i % 4];
}
