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
#include <stdint.h>

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

/* A PTX kernel's resources, as its PTX declares them (ptx_query.c). */
typedef struct ptx_kernel_attrs {
    uint32_t shared_static; /* bytes the module's static .shared variables take */
    uint32_t local_bytes;   /* per-thread .local: its depot and its callees' deepest chain */
    uint32_t const_bytes;   /* bytes of the module's .const variables */
    uint32_t max_threads;   /* product of .reqntid or .maxntid; 0 when neither is given */
    uint32_t reqntid[3];    /* .reqntid, zeros when absent */
    int uses_printf;        /* it or a function it calls calls vprintf */
} ptx_kernel_attrs;

/* 1 and *out filled if k is a kernel of a PTX module, else 0. */
__attribute__((visibility("hidden"))) int ptx_kernel_attributes(const arsim_kernel *k,
                                                                ptx_kernel_attrs *out);
/* 0 and the address and size of module variable name (.global or .const) if
 * m is a PTX module that declares it, else -1.  The memory is registered
 * with the engine, so copies and memsets reach it as device memory. */
__attribute__((visibility("hidden"))) int ptx_module_global(const arsim_module *m,
                                                            const char *name, void **ptr,
                                                            size_t *size);

/* Where vprintf's records go: the driver's printf FIFO.  Called on the thread
 * running the kernel (arsim_kernel_tag() names the launch's context) with one
 * formatted record and the bytes it takes in the FIFO.  Without a sink a
 * kernel that calls vprintf fails. */
typedef void (*ptx_printf_sink)(const char *text, size_t len, size_t record_bytes);
__attribute__((visibility("hidden"))) void ptx_set_printf_sink(ptx_printf_sink sink);

#endif /* CUSIM_PTX_H */
