// Loads past the end of a work-group's local memory (test_spirv_local_slack.py).
// A GPU gives a work-group its shared local memory in steps (Xe-LP: the next
// power of two, at least 1 KiB), so such a load reads what is left there;
// the sim reads zeros, up to the step, and faults beyond it.  One work-item;
// at[0] is the index of buf it reads or writes, at[1] how: 0 a load, 1 a
// vload2 (8 bytes, across the end at index 4), 2 a store.  One kernel and one
// __local array in the module, as the sim lays out a module's __local
// variables together.
kernel void slack(global const int *at, global int *out) {
    local int buf[5]; // 20 bytes: 1 KiB on the GPU
    for (int i = 0; i < 5; i++) buf[i] = 100 + i;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (at[1] == 0) {
        out[0] = buf[at[0]];
    } else if (at[1] == 1) {
        vstore2(vload2(0, buf + at[0]), 0, out);
    } else {
        buf[at[0]] = 7;
        barrier(CLK_LOCAL_MEM_FENCE);
        out[0] = buf[0];
    }
}
