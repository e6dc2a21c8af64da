/* What the CUDA front end asks of a loaded PTX module after the load: a
 * kernel's resource sizes and launch bounds (cuFuncGetAttribute, launch
 * checks) and a module variable's address (cuModuleGetGlobal).
 *
 * The sizes are the ones the PTX declares, which is what ptxas starts from:
 * the static .shared bytes of the module, the kernel's .local depot plus its
 * deepest chain of callees' depots, and the module's .const bytes. */
#include <string.h>

#include "ptx_internal.h"

static const ptx_kernel_ctx *ctx_of_module(const arsim_module *m)
{
    const ptx_kernel_ctx *kc = m ? arsim_module_foreign_ctx(m) : NULL;
    return kc && kc->magic == PTX_CTX_MAGIC ? kc : NULL;
}

int ptx_kernel_attributes(const arsim_kernel *k, ptx_kernel_attrs *out)
{
    if (!k || k->run != ptx_run || !k->ctx)
        return 0;
    const ptx_kernel_ctx *kc = k->ctx;
    const pmodule *m = kc->mod;
    const pfunc *f = &m->funcs[kc->func];
    memset(out, 0, sizeof *out);
    out->shared_static = m->shared_declared;
    out->local_bytes = f->local_total;
    for (uint32_t i = 0; i < m->nvars; i++)
        if (m->vars[i].is_const)
            out->const_bytes += (uint32_t)m->vars[i].size;
    const uint32_t *dims = f->reqntid[0] ? f->reqntid : f->maxntid;
    if (dims[0])
        out->max_threads = dims[0] * dims[1] * dims[2];
    memcpy(out->reqntid, f->reqntid, sizeof out->reqntid);
    out->uses_printf = f->uses_printf;
    return 1;
}

int ptx_module_global(const arsim_module *m, const char *name, void **ptr, size_t *size)
{
    const ptx_kernel_ctx *kc = ctx_of_module(m);
    if (!kc || !name)
        return -1;
    const pmodule *pm = kc->mod;
    for (uint32_t i = 0; i < pm->nvars; i++) {
        if (strcmp(pm->vars[i].name, name) == 0) {
            *ptr = pm->vars[i].data;
            *size = pm->vars[i].size;
            return 0;
        }
    }
    return -1;
}

int ptx_register_vars(pmodule *m)
{
    for (uint32_t i = 0; i < m->nvars; i++) {
        if (arsim_mem_register(m->vars[i].data, m->vars[i].size, 0, 0) != ARSIM_OK)
            return -1;
        m->vars[i].registered = 1;
    }
    return 0;
}

void ptx_mark_printf(pmodule *m)
{
    for (uint32_t i = 0; i < m->nfuncs; i++)
        for (int32_t pc = 0; pc < m->funcs[i].ncode; pc++)
            m->funcs[i].uses_printf |= m->funcs[i].code[pc].op == OP_VPRINTF;
    /* Callers of a user: until nothing changes (recursion included). */
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t i = 0; i < m->nfuncs; i++) {
            pfunc *f = &m->funcs[i];
            for (int32_t pc = 0; pc < f->ncode && !f->uses_printf; pc++) {
                const pinsn *in = &f->code[pc];
                int reaches = in->op == OP_CALL && m->funcs[in->target].uses_printf;
                for (uint32_t c = 0; in->op == OP_CALLI && c < m->nfuncs && !reaches; c++)
                    reaches = m->funcs[c].address_taken && m->funcs[c].uses_printf;
                if (reaches)
                    changed = f->uses_printf = 1;
            }
        }
    }
}
