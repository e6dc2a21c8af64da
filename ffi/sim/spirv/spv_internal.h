/* The compiled form shared by the loader (spv_load.h) and the interpreter
 * (spv_exec.h).
 *
 * Every SSA value lives in 64-bit slots of its function's frame (a vector
 * takes one slot per component).  Integers are kept zero-extended to 64 bits
 * and masked to their width after every operation; floats keep their IEEE
 * bits (f32 in the low half); booleans are 0 or 1; pointers are host
 * addresses (device memory is host memory in the sim).  Constants a function
 * uses get slots too, filled from a template when the frame is made, so an
 * operand is always a plain slot index. */
#ifndef ARSIM_SPV_INTERNAL_H
#define ARSIM_SPV_INTERNAL_H

#include <stdint.h>

#include "spv.h"
#include "spv_grammar.h"

#define SPV_NONE 0xFFFFFFFFu
/* X_EXT code for OpBitReverse (beyond OpenCL.std's numbers). */
#define SPV_EXT_BITREVERSE 1000u

enum {
    /* moves and constants */
    X_MOV, X_BUILTIN, X_VEXTRACT, X_VINSERT, X_SELECT,
    /* integer arithmetic (w = width) */
    X_IADD, X_ISUB, X_IMUL, X_UDIV, X_SDIV, X_UMOD, X_SREM, X_SMOD,
    X_SHL, X_SHRL, X_SHRA, X_OR, X_XOR, X_AND, X_NOT, X_SNEG,
    X_IEQ, X_INE, X_UGT, X_UGE, X_ULT, X_ULE, X_SGT, X_SGE, X_SLT, X_SLE,
    X_LAND, X_LOR, X_LNOT, X_LEQ, X_LNE,
    /* float arithmetic: f16 (computed exactly, rounded once to half), f32, f64 */
    X_FADD16, X_FSUB16, X_FMUL16, X_FDIV16, X_FREM16, X_FMOD16, X_FNEG16,
    X_FADD32, X_FSUB32, X_FMUL32, X_FDIV32, X_FREM32, X_FMOD32, X_FNEG32,
    X_FADD64, X_FSUB64, X_FMUL64, X_FDIV64, X_FREM64, X_FMOD64, X_FNEG64,
    /* float compares: c = predicate (SPIR-V opcode), w = width */
    X_FCMP, X_FCLASS,
    /* conversions: w = destination width, c = source width */
    X_UCONV, X_SCONV, X_FTOU, X_FTOS, X_UTOF, X_STOF, X_FCONV,
    /* memory: w = element bytes, n = components; X_LOAD and X_STORE: c = the
     * alignment an Aligned memory operand lowers the element's size to (0:
     * none), e = 1 when vloadn or vstoren made it (a fault report names it) */
    X_LOAD, X_STORE, X_PTRADD, X_ADDI, X_MEMCPY,
    X_LOADH, X_STOREH, /* a half in memory to/from a float of width w (rte) */
    X_ATOMIC,
    /* control */
    X_JMP, X_BR, X_SWITCH, X_CALL, X_RET, X_UNREACHABLE,
    X_BARRIER, X_COLL,
    X_EXT,
    /* OpenCL.std functions with a second result, stored by an X_STORE after
     * them: d = result, a and b = operands (b SPV_NONE for one), c = the
     * instruction, e = the slot of the value to store. */
    X_EXTOUT,
    X_COUNT,
    /* The ranges the interpreter hands to one helper each (spv_exec.c). */
    X_INT_FIRST = X_IADD, X_INT_LAST = X_LNE,
    X_FLOAT_FIRST = X_FADD16, X_FLOAT_LAST = X_FCLASS,
    X_CONV_FIRST = X_UCONV, X_CONV_LAST = X_FCONV,
};

/* Atomic kinds (X_ATOMIC c). */
enum {
    A_LOAD, A_STORE, A_XCHG, A_CMPXCHG, A_INC, A_DEC, A_ADD, A_SUB, A_SMIN, A_UMIN,
    A_SMAX, A_UMAX, A_AND, A_OR, A_XOR, A_FADD, A_FMIN, A_FMAX,
};

/* Collective kinds (X_COLL c); e low byte = group operation (reduce,
 * inclusive, exclusive), bit 8 = work-group scope, bit 9 = non-uniform. */
enum {
    C_ALL, C_ANY, C_BROADCAST, C_IADD, C_FADD, C_IMUL, C_FMUL, C_FMIN, C_UMIN, C_SMIN,
    C_FMAX, C_UMAX, C_SMAX, C_AND, C_OR, C_XOR, C_LAND, C_LOR, C_LXOR,
    C_SHUFFLE, C_SHUFFLE_XOR, C_SHUFFLE_UP, C_SHUFFLE_DOWN, C_ELECT, C_BROADCAST_FIRST,
    C_BALLOT, C_INTEL_SHUFFLE_DOWN, C_INTEL_SHUFFLE_UP,
};
#define C_SCOPE_WORKGROUP 0x100u
#define C_NON_UNIFORM 0x200u

/* Builtins (X_BUILTIN c). */
enum {
    B_GLOBAL_ID, B_LOCAL_ID, B_GROUP_ID, B_GROUP_SIZE, B_NUM_GROUPS, B_GLOBAL_SIZE,
    B_GLOBAL_OFFSET, B_ENQUEUED_GROUP_SIZE, B_GLOBAL_LINEAR_ID, B_LOCAL_INDEX, B_WORK_DIM,
    B_SUBGROUP_SIZE, B_SUBGROUP_MAX_SIZE, B_NUM_SUBGROUPS, B_SUBGROUP_ID, B_SUBGROUP_LOCAL_ID,
};

typedef struct spv_ins {
    uint16_t op;
    uint8_t n; /* components (1 for scalars) */
    uint8_t w; /* width in bits (ints, floats) or bytes (memory), per op */
    uint32_t d; /* result slot */
    uint32_t a, b, c, e;
} spv_ins;

/* What a frame's slot gets when the frame is made (besides the constants). */
typedef struct spv_fixup {
    uint32_t slot;
    uint32_t kind; /* 0: private stack + off, 1: work-group local memory + off */
    uint64_t off;
} spv_fixup;

typedef struct spv_func {
    uint32_t id;
    uint32_t code;     /* first instruction */
    uint32_t nslots;   /* frame size in slots */
    uint32_t const_base, nconst; /* constants: slots [const_base, +nconst) from templ */
    uint32_t templ;    /* index into the program's constant pool */
    uint32_t fix, nfix; /* fixups (program's fixup array) */
    uint32_t priv_bytes; /* private (Function storage) bytes of this frame */
    uint32_t nparams;
    uint32_t param_slot; /* aux index: slot of each parameter, then its width n */
    uint32_t ret_n;
    /* Deepest stack under this function, computed after load. */
    uint64_t max_slots, max_priv;
    uint32_t max_depth;
    int visiting, done;
} spv_func;

typedef struct spv_kernel {
    struct spv_program *prog;
    char *name;
    uint32_t func; /* index into funcs */
    ar_kernel_info info;
    uint8_t param_n[AR_KERNEL_MAX_PARAMS];     /* components */
    uint8_t param_bytes[AR_KERNEL_MAX_PARAMS]; /* bytes per component */
    uint8_t param_kind[AR_KERNEL_MAX_PARAMS];  /* SPV_PARAM_* (spv.h) */
    uint32_t param_off[AR_KERNEL_MAX_PARAMS];  /* by-value: offset in the copies */
    uint32_t byval_bytes; /* each work-item's copies of the by-value arguments */
    int slack_reported;   /* a load read its local memory's slack (spv_exec.c): said once */
} spv_kernel;

struct spv_program {
    spv_ins *code;
    uint32_t ncode;
    uint64_t *pool; /* constant templates */
    uint32_t npool;
    uint32_t *aux;
    uint32_t naux;
    spv_fixup *fixups;
    uint32_t nfixups;
    spv_func *funcs;
    uint32_t nfuncs;
    spv_kernel *kernels;
    uint32_t nkernels;
    uint32_t local_bytes;  /* static __local memory */
    uint8_t *globals;      /* program-scope variables (__constant, __global) */
    uint64_t globals_size;
};

#endif /* ARSIM_SPV_INTERNAL_H */
