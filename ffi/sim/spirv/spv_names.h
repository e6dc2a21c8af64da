/* SPIR-V opcode names for error messages. */
#ifndef ARSIM_SPV_NAMES_H
#define ARSIM_SPV_NAMES_H

#include <stddef.h>

/* The opcode's name, or "opcode N" written into buf. */
__attribute__((visibility("hidden"))) const char *spv_opname(unsigned op, char *buf, size_t len);

#endif
