/* cuda-sim's PTX executor: the one entry point the driver calls.
 *
 * cuModuleLoadData hands PTX text here.  The text is parsed once into a
 * compact program (registers and labels resolved), and each .entry becomes a
 * foreign kernel of an engine module (ffi/sim/engine.h) that interprets it a
 * warp of 32 lanes at a time.  See README.md for what is supported.
 */
#ifndef CUSIM_PTX_H
#define CUSIM_PTX_H

#include <stddef.h>

#include "../engine.h"

typedef enum ptx_status {
    PTX_OK = 0,
    PTX_ERR_INVALID = 1,     /* malformed, or uses something the executor refuses */
    PTX_ERR_VERSION = 2,     /* .version or .target newer than the executor knows */
    PTX_ERR_OUT_OF_MEMORY = 3,
} ptx_status;

/* 1 if the NUL-terminated image looks like PTX text (a .version directive
 * before any binary byte). */
__attribute__((visibility("hidden"))) int ptx_looks_like(const char *image);

/* Parses PTX text and builds an engine module whose kernels run it.  On
 * failure writes one line naming the line number and the construct into log
 * (when log_size > 0). */
__attribute__((visibility("hidden"))) ptx_status ptx_module_load(const char *text,
                                                                arsim_module **out, char *log,
                                                                size_t log_size);

#endif /* CUSIM_PTX_H */
