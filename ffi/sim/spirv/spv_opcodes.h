/* What the loader knows about each SPIR-V opcode, from spv_opcodes.def:
 * names for messages, and each opcode's handler families and flags.  The
 * SPV_Op* numbers, like every SPIR-V number the sim uses, come from
 * spv_grammar.h. */
#ifndef ARSIM_SPV_OPCODES_H
#define ARSIM_SPV_OPCODES_H

#include <stddef.h>
#include <stdint.h>

#include "spv_grammar.h"

/* Module-scope handling (the loader's first pass, spv_module.c). */
typedef enum spv_mod_family {
    M_NONE, M_IGNORE, M_CAPABILITY, M_EXTENSION, M_EXTINSTIMPORT, M_MEMORYMODEL, M_ENTRYPOINT,
    M_EXECMODE, M_DECORATE, M_TYPE, M_CONSTANT, M_UNDEF, M_VARIABLE, M_FUNCTION,
    M_COUNT
} spv_mod_family;

/* Compile handlers inside a function body (spv_function.c's table). */
typedef enum spv_fn_family {
    F_NONE, F_NOP, F_LABEL, F_PHI, F_UNDEF,
    /* memory (spv_compile_mem.c) */
    F_VARIABLE, F_LOAD, F_STORE, F_COPYMEMORY, F_COPYMEMORYSIZED, F_ACCESSCHAIN, F_ATOMIC,
    /* values (spv_compile_alu.c) */
    F_COPY, F_BITCAST, F_CONVERT, F_IUNARY, F_FUNARY, F_IBINARY, F_FBINARY, F_COMPARE,
    F_FCOMPARE, F_FCLASS, F_BITS, F_DOT, F_ANYALL, F_SELECT,
    F_VEXTRACT, F_VINSERT, F_VSHUFFLE, F_CONSTRUCT, F_EXTRACT, F_INSERT,
    /* OpenCL.std, barriers and collectives (spv_compile_ext.c) */
    F_EXTINST, F_BARRIER, F_GROUPOP, F_GROUPVALUE, F_GROUPPAIR, F_GROUPELECT, F_INTELSHUFFLE,
    F_INTELSHUFFLEREL,
    /* control (spv_function.c) */
    F_BRANCH, F_BRANCHCONDITIONAL, F_SWITCH, F_RETURN, F_RETURNVALUE, F_UNREACHABLE, F_CALL,
    F_COUNT
} spv_fn_family;

enum {
    OPF_0 = 0,
    OPF_NR = 1u << 0,
    OPF_FWD = 1u << 1,
    OPF_NU = 1u << 2,
};

typedef struct spv_opinfo {
    const char *name; /* with its "Op" */
    uint8_t mod;      /* spv_mod_family */
    uint8_t fn;       /* spv_fn_family */
    uint8_t flags;    /* OPF_* */
    uint32_t code;
} spv_opinfo;

/* The row of opcode op, or NULL for an opcode the table does not know. */
__attribute__((visibility("hidden"))) const spv_opinfo *spv_opinfo_of(unsigned op);

/* The opcode's name, or "opcode N" written into buf. */
__attribute__((visibility("hidden"))) const char *spv_opname(unsigned op, char *buf, size_t len);

#endif
