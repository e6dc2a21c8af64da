// Misaligned accesses: each kernel touches global memory through the pointer
// it is given, so a pointer one byte off makes a misaligned access by the
// instruction the kernel's name says.  packed_read reads an int at an odd
// offset of a packed struct, which its load's Aligned operand allows.
kernel void load_int(global const int *x, global int *y) { y[0] = x[0]; }

kernel void store_int(global int *y) { y[0] = 7; }

kernel void atomic_add_int(global int *y) { atomic_add(y, 1); }

kernel void vload4_float(global const float *x, global float *y) {
    vstore4(vload4(0, x) * 2.0f, 0, y);
}

kernel void vload_half_float(global const half *x, global float *y) { y[0] = vload_half(0, x); }

typedef struct __attribute__((packed)) {
    char tag;
    int value;
} packed_t;

kernel void packed_read(global const packed_t *p, global int *y) { y[0] = p->value; }
