/* The opcode table of spv_opcodes.def as data: one spv_opinfo per row, found
 * by a switch the compiler builds from the same rows. */
#include <stdio.h>

#include "spv_internal.h"
#include "spv_opcodes.h"

enum {
#define SPV_OP(name, mod, fn, code, flags) ROW_##name,
#include "spv_opcodes.def"
#undef SPV_OP
};

static const spv_opinfo k_ops[] = {
#define SPV_OP(name, mod, fn, code, flags) {"Op" #name, M_##mod, F_##fn, OPF_##flags, code},
#include "spv_opcodes.def"
#undef SPV_OP
};

const spv_opinfo *spv_opinfo_of(unsigned op)
{
    switch (op) {
#define SPV_OP(name, mod, fn, code, flags) \
    case SPV_Op##name:                                  \
        return &k_ops[ROW_##name];
#include "spv_opcodes.def"
#undef SPV_OP
    default:
        return NULL;
    }
}

const char *spv_opname(unsigned op, char *buf, size_t len)
{
    const spv_opinfo *info = spv_opinfo_of(op);
    if (info)
        return info->name;
    snprintf(buf, len, "opcode %u", op);
    return buf;
}
