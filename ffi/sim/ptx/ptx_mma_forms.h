/* The mma.sync forms cuda-sim runs and their fragment layouts, shared by
 * the parser (ptx_insn_matrix.c: which spellings exist, how many registers
 * each operand takes) and the executor (ptx_exec_mma.c: where each element
 * of a lane's fragment sits in its matrix).
 *
 * The layouts are the PTX ISA's ("Matrix Fragments for mma.m16n8k16",
 * "...m16n8k8", "...m16n8k4", "...m16n8k32", "...m8n8k4 with .f64"), with
 * g = %laneid >> 2 (groupID) and t = %laneid % 4 (threadID_in_group), for
 * element i of the fragment (elements fill each register low bits first).
 */
#ifndef CUSIM_PTX_MMA_FORMS_H
#define CUSIM_PTX_MMA_FORMS_H

#include "ptx_internal.h"

/* How element i of lane l's fragment maps to (row, col). */
enum {
    FR_A16_H,     /* m16n8k16 A, 16-bit: row g (+8 for i%4 >= 2), col 2t + i%2 (+8 for i >= 4) */
    FR_A8_H,      /* m16n8k8 A, 16-bit: row g (+8 for i >= 2), col 2t + i%2 */
    FR_A8_TF32,   /* m16n8k8 A, tf32: row g (+8 for odd i), col t (+4 for i >= 2) */
    FR_A4_TF32,   /* m16n8k4 A, tf32: row g (+8 for i = 1), col t */
    FR_A32_I8,    /* m16n8k32 A, 8-bit: row g (+8 for i%8 >= 4), col 4t + i%4 (+16 for i >= 8) */
    FR_A16_I8,    /* m16n8k16 A, 8-bit: row g (+8 for i >= 4), col 4t + i%4 */
    FR_A884,      /* m8n8k4 A, f64: row g, col t */
    FR_B16_H,     /* m16n8k16 B, 16-bit: row 2t + i%2 (+8 for i >= 2), col g */
    FR_B8_H,      /* m16n8k8 B, 16-bit: row 2t + i, col g */
    FR_B8_TF32,   /* m16n8k8 B, tf32: row t (+4 for i = 1), col g */
    FR_B4_TF32,   /* m16n8k4 B, tf32: row t, col g */
    FR_B32_I8,    /* m16n8k32 B, 8-bit: row 4t + i%4 (+16 for i >= 4), col g */
    FR_B16_I8,    /* m16n8k16 B, 8-bit: row 4t + i, col g */
    FR_B884,      /* m8n8k4 B, f64: row t, col g */
    FR_C16x8,     /* C and D of the m16n8 shapes: row g (+8 for i >= 2), col 2t + i%2 */
    FR_C8x8,      /* C and D of m8n8k4: row g, col 2t + i */
};

static inline void mma_frag_pos(int kind, int lane, int i, int *row, int *col)
{
    int g = lane >> 2, t = lane & 3;
    switch (kind) {
    case FR_A16_H: *row = g + 8 * ((i >> 1) & 1); *col = 2 * t + (i & 1) + 8 * (i >= 4); return;
    case FR_A8_H: *row = g + 8 * (i >= 2); *col = 2 * t + (i & 1); return;
    case FR_A8_TF32: *row = g + 8 * (i & 1); *col = t + 4 * (i >= 2); return;
    case FR_A4_TF32: *row = g + 8 * i; *col = t; return;
    case FR_A32_I8: *row = g + 8 * ((i >> 2) & 1); *col = 4 * t + (i & 3) + 16 * (i >= 8); return;
    case FR_A16_I8: *row = g + 8 * (i >= 4); *col = 4 * t + (i & 3); return;
    case FR_A884: *row = g; *col = t; return;
    case FR_B16_H: *row = 2 * t + (i & 1) + 8 * (i >= 2); *col = g; return;
    case FR_B8_H: *row = 2 * t + i; *col = g; return;
    case FR_B8_TF32: *row = t + 4 * i; *col = g; return;
    case FR_B4_TF32: *row = t; *col = g; return;
    case FR_B32_I8: *row = 4 * t + (i & 3) + 16 * (i >= 4); *col = g; return;
    case FR_B16_I8: *row = 4 * t + i; *col = g; return;
    case FR_B884: *row = t; *col = g; return;
    case FR_C16x8: *row = g + 8 * (i >= 2); *col = 2 * t + (i & 1); return;
    default: *row = g; *col = 2 * t + i; return; /* FR_C8x8 */
    }
}

/* The input families a shape takes. */
enum { IN_HALF = 1, IN_TF32, IN_INT8, IN_F64 };
/* tf32 is no register type of its own: a .b32 holding an f32's bits. */
#define T_TF32 (T_PRED + 1)

typedef struct mma_shape {
    const char *name;
    uint8_t m, n, k, in;
    uint8_t a_kind, b_kind, c_kind;
} mma_shape;

static const mma_shape g_mma_shapes[] = {
    {"m16n8k16", 16, 8, 16, IN_HALF, FR_A16_H, FR_B16_H, FR_C16x8},
    {"m16n8k8", 16, 8, 8, IN_HALF, FR_A8_H, FR_B8_H, FR_C16x8},
    {"m16n8k8", 16, 8, 8, IN_TF32, FR_A8_TF32, FR_B8_TF32, FR_C16x8},
    {"m16n8k4", 16, 8, 4, IN_TF32, FR_A4_TF32, FR_B4_TF32, FR_C16x8},
    {"m16n8k32", 16, 8, 32, IN_INT8, FR_A32_I8, FR_B32_I8, FR_C16x8},
    {"m16n8k16", 16, 8, 16, IN_INT8, FR_A16_I8, FR_B16_I8, FR_C16x8},
    {"m8n8k4", 8, 8, 4, IN_F64, FR_A884, FR_B884, FR_C8x8},
};
#define MMA_NSHAPES (int)(sizeof g_mma_shapes / sizeof g_mma_shapes[0])

/* Bits of one element of type t in a fragment register. */
static inline int mma_elem_bits(int t)
{
    switch (t) {
    case T_S8: case T_U8: return 8;
    case T_F16: case T_BF16: return 16;
    case T_F64: return 64;
    default: return 32; /* f32, tf32, s32 */
    }
}

/* Registers of a fragment of rows x cols elements of type t. */
static inline int mma_regs(int rows, int cols, int t)
{
    int per = mma_elem_bits(t) == 64 ? 1 : 32 / mma_elem_bits(t);
    return rows * cols / PTX_LANES / per;
}

#endif /* CUSIM_PTX_MMA_FORMS_H */
