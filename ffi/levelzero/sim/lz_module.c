/* Modules, build logs and kernels.
 *
 * A SPIR-V module (ZE_MODULE_FORMAT_IL_SPIRV) runs on the SPIR-V executor
 * (ffi/sim/spirv): linked (spv_link: its specialization constants set, its
 * imports resolved), decoded and checked here, at creation, so that anything
 * it does not support fails with ZE_RESULT_ERROR_MODULE_BUILD_FAILURE (bytes
 * that are not valid SPIR-V: ZE_RESULT_ERROR_INVALID_NATIVE_BINARY) and a
 * build log naming the instruction.  With the program extension
 * (ZE_experimental_module_program: a ze_module_program_exp_desc_t in pNext)
 * several SPIR-V modules are linked into one module.  A native module
 * (ZE_MODULE_FORMAT_NATIVE) is the bytes of a host shared object built from
 * the portable kernel sources (ffi/kernels/ar_host_abi.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/spirv/spv.h"
#include "lz_internal.h"

#define SPIRV_MAGIC 0x07230203u

static void log_finalize(lz_obj *o) {
    lz_build_log *l = (lz_build_log *)o;
    free(l->text);
    free(l);
}

static ze_result_t make_log(const char *text, ze_module_build_log_handle_t *out) {
    if (!out) return ZE_RESULT_SUCCESS;
    *out = NULL;
    lz_build_log *l = calloc(1, sizeof *l);
    if (!l) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    l->base = (lz_obj){.type = LZ_T_LOG, .refs = 1, .finalize = log_finalize};
    l->text = strdup(text ? text : "");
    if (!l->text || !lz_register(&l->base)) {
        log_finalize(&l->base);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    *out = (ze_module_build_log_handle_t)LZ_HANDLE(l);
    return ZE_RESULT_SUCCESS;
}

static void module_finalize(lz_obj *o) {
    lz_module *m = (lz_module *)o;
    /* Launches still queued hold their own module references in the engine. */
    if (m->m) arsim_module_unload(m->m);
    free(m);
}

/* A build failure of the SPIR-V: the log says why, and the result what
 * kind of failure it is. */
static ze_result_t spirv_failure(spv_load_status ls, const char *what, const char *err,
                                 ze_module_build_log_handle_t *phBuildLog)
{
    char msg[640];
    snprintf(msg, sizeof msg, "levelzero-sim: %s: %s", what, err);
    make_log(msg, phBuildLog);
    if (ls == SPV_LOAD_NO_MEMORY)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    return ls == SPV_LOAD_MALFORMED ? ZE_RESULT_ERROR_INVALID_NATIVE_BINARY
                                    : ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
}

/* Compiles a SPIR-V module for the executor; on failure, the build log says
 * why (the executor's message names the instruction and its word offset). */
static ze_result_t load_spirv(const void *image, size_t size, arsim_module **out,
                              ze_module_build_log_handle_t *phBuildLog)
{
    char err[512];
    spv_load_status ls = SPV_LOAD_OK;
    spv_program *prog = spv_program_load(image, size, &ls, err, sizeof err);
    if (!prog)
        return spirv_failure(ls, "cannot build the SPIR-V module", err, phBuildLog);
    arsim_module *am = NULL;
    if (arsim_module_create_foreign(prog, spv_program_free, &am) != ARSIM_OK) {
        spv_program_free(prog);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    for (size_t i = 0; i < spv_kernel_count(prog); i++) {
        arsim_status st = arsim_module_add_foreign_kernel(am, spv_kernel_name(prog, i),
                                                          spv_kernel_info(prog, i), spv_kernel_run,
                                                          spv_kernel_ctx(prog, i));
        if (st != ARSIM_OK) {
            arsim_module_unload(am);
            make_log("levelzero-sim: cannot register the module's kernels", phBuildLog);
            return st == ARSIM_ERR_OUT_OF_MEMORY ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
                                                 : ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
        }
    }
    *out = am;
    return ZE_RESULT_SUCCESS;
}

/* Links the inputs into one program (one input too: its specialization
 * constants, its imports) and compiles it. */
static ze_result_t link_spirv(const spv_input *in, uint32_t n, arsim_module **out,
                              ze_module_build_log_handle_t *phBuildLog)
{
    char err[512];
    spv_load_status ls = SPV_LOAD_OK;
    size_t size = 0;
    uint32_t *words = spv_link(in, n, &size, &ls, err, sizeof err);
    if (!words)
        return spirv_failure(ls, n > 1 ? "cannot link the SPIR-V modules" : "cannot build the SPIR-V module",
                             err, phBuildLog);
    ze_result_t r = load_spirv(words, size, out, phBuildLog);
    free(words);
    return r;
}

typedef struct {
    ze_structure_type_t stype;
    const void *pNext;
} lz_chain;

/* The program extension's descriptor chained to desc, or NULL. */
static const ze_module_program_exp_desc_t *program_desc(const ze_module_desc_t *desc)
{
    for (const lz_chain *h = desc->pNext; h; h = h->pNext)
        if (h->stype == ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC)
            return (const ze_module_program_exp_desc_t *)h;
    return NULL;
}

static int is_spirv(const void *bytes, size_t size)
{
    uint32_t magic = 0;
    if (size >= 4) memcpy(&magic, bytes, 4);
    return magic == SPIRV_MAGIC;
}

/* Specialization constants given without their ids or values. */
static int constants_missing(const ze_module_constants_t *c)
{
    if (!c || !c->numConstants) return 0;
    if (!c->pConstantIds || !c->pConstantValues) return 1;
    for (uint32_t i = 0; i < c->numConstants; i++)
        if (!c->pConstantValues[i]) return 1;
    return 0;
}

static spv_input spirv_input(const void *bytes, size_t size, const ze_module_constants_t *c)
{
    spv_input in = {bytes, size, 0, NULL, NULL};
    if (c) {
        in.nconst = c->numConstants;
        in.const_ids = c->pConstantIds;
        in.const_values = (const void *const *)c->pConstantValues;
    }
    return in;
}

/* Input i of the program extension, checked. */
static ze_result_t program_input(const ze_module_program_exp_desc_t *pd, uint32_t i, spv_input *in,
                                 ze_module_build_log_handle_t *phBuildLog)
{
    const ze_module_constants_t *c = pd->pConstants ? pd->pConstants[i] : NULL;
    *in = spirv_input(pd->pInputModules[i], pd->inputSizes[i], c);
    if (!in->bytes || constants_missing(c)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!in->size) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (is_spirv(in->bytes, in->size)) return ZE_RESULT_SUCCESS;
    char msg[128];
    snprintf(msg, sizeof msg, "levelzero-sim: input module %u is not a SPIR-V module (bad magic number)", i);
    make_log(msg, phBuildLog);
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
}

/* The program extension: its modules (desc's own input, flags and constants
 * are ignored, as the extension says), each checked, then linked. */
static ze_result_t build_program(const ze_module_desc_t *desc, const ze_module_program_exp_desc_t *pd,
                                 arsim_module **out, ze_module_build_log_handle_t *phBuildLog)
{
    if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV) {
        make_log("levelzero-sim: the module program extension links SPIR-V modules only", phBuildLog);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    if (!pd->inputSizes || !pd->pInputModules) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (pd->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    spv_input *in = calloc(pd->count, sizeof *in);
    if (!in) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    ze_result_t r = ZE_RESULT_SUCCESS;
    for (uint32_t i = 0; i < pd->count && r == ZE_RESULT_SUCCESS; i++)
        r = program_input(pd, i, &in[i], phBuildLog);
    if (r == ZE_RESULT_SUCCESS) r = link_spirv(in, pd->count, out, phBuildLog);
    free(in);
    return r;
}

/* A module from desc alone: SPIR-V (with its specialization constants) or
 * a native binary. */
static ze_result_t build_module(const ze_module_desc_t *desc, arsim_module **out,
                                ze_module_build_log_handle_t *phBuildLog)
{
    if (desc->format == ZE_MODULE_FORMAT_IL_SPIRV) {
        if (!is_spirv(desc->pInputModule, desc->inputSize)) {
            make_log("levelzero-sim: the input is not a SPIR-V module (bad magic number)", phBuildLog);
            return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
        }
        if (constants_missing(desc->pConstants)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
        spv_input in = spirv_input(desc->pInputModule, desc->inputSize, desc->pConstants);
        return link_spirv(&in, 1, out, phBuildLog);
    }
    /* The engine's loader keeps the image's memfd open for the module's
     * life, so two live modules never share a /proc/self/fd path. */
    arsim_status st = arsim_module_load(desc->pInputModule, desc->inputSize, out);
    if (st == ARSIM_OK) return ZE_RESULT_SUCCESS;
    char msg[256];
    snprintf(msg, sizeof msg,
             "levelzero-sim: the native binary (%zu bytes) is not a loadable host shared object "
             "built for the host-kernel ABI v%u (%s)",
             desc->inputSize, AR_HOST_ABI_VERSION, arsim_status_name(st));
    make_log(msg, phBuildLog);
    return st == ARSIM_ERR_OUT_OF_MEMORY ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY : ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
}

ZE_APIEXPORT ze_result_t zeModuleCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                        const ze_module_desc_t *desc, ze_module_handle_t *phModule,
                                        ze_module_build_log_handle_t *phBuildLog) {
    LZ_CHECK(hContext, LZ_T_CONTEXT);
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if (phBuildLog) *phBuildLog = NULL;
    if (!desc || !phModule) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->stype != ZE_STRUCTURE_TYPE_MODULE_DESC) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (desc->format > ZE_MODULE_FORMAT_NATIVE) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    const ze_module_program_exp_desc_t *pd = program_desc(desc);
    if (!pd && !desc->pInputModule) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!pd && desc->inputSize == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    arsim_module *am = NULL;
    ze_result_t r = pd ? build_program(desc, pd, &am, phBuildLog) : build_module(desc, &am, phBuildLog);
    if (r != ZE_RESULT_SUCCESS) return r;
    lz_module *m = calloc(1, sizeof *m);
    if (!m) {
        arsim_module_unload(am);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    m->base = (lz_obj){.type = LZ_T_MODULE, .refs = 1, .finalize = module_finalize};
    m->m = am;
    m->spirv = desc->format == ZE_MODULE_FORMAT_IL_SPIRV;
    if (!lz_register(&m->base)) {
        module_finalize(&m->base);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    r = make_log("", phBuildLog);
    if (r != ZE_RESULT_SUCCESS) {
        lz_unregister(&m->base);
        return r;
    }
    *phModule = (ze_module_handle_t)LZ_HANDLE(m);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeModuleDestroy(ze_module_handle_t hModule) {
    LZ_GET(m, lz_module, hModule, LZ_T_MODULE);
    /* Kernels created from it keep it loaded until they are destroyed. */
    lz_unregister(&m->base);
    lz_unref(&m->base);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeModuleBuildLogDestroy(ze_module_build_log_handle_t hModuleBuildLog) {
    LZ_GET(l, lz_build_log, hModuleBuildLog, LZ_T_LOG);
    lz_unregister(&l->base);
    lz_unref(&l->base);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t copy_string(const char *s, size_t *pSize, char *out) {
    if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    size_t need = strlen(s) + 1;
    if (*pSize == 0 || !out) {
        *pSize = need;
        return ZE_RESULT_SUCCESS;
    }
    size_t n = *pSize < need ? *pSize : need;
    memcpy(out, s, n - 1);
    out[n - 1] = '\0';
    *pSize = n;
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeModuleBuildLogGetString(ze_module_build_log_handle_t hModuleBuildLog, size_t *pSize,
                                                   char *pBuildLog) {
    LZ_GET(l, lz_build_log, hModuleBuildLog, LZ_T_LOG);
    ze_result_t r = copy_string(l->text, pSize, pBuildLog);
    lz_unref(&l->base);
    return r;
}

/* A SPIR-V module's kernels, in entry-point order.  A native module (a host
 * shared object) cannot list its kernels: UNSUPPORTED_FEATURE. */
ZE_APIEXPORT ze_result_t zeModuleGetKernelNames(ze_module_handle_t hModule, uint32_t *pCount, const char **pNames) {
    LZ_GET(m, lz_module, hModule, LZ_T_MODULE);
    const spv_program *prog = m->spirv ? arsim_module_foreign_ctx(m->m) : NULL;
    ze_result_t r = ZE_RESULT_SUCCESS;
    if (!pCount) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if (!prog) r = ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    else {
        uint32_t n = (uint32_t)spv_kernel_count(prog);
        if (*pCount == 0 || !pNames) *pCount = n;
        else {
            if (*pCount > n) *pCount = n;
            /* The names live as long as the module. */
            for (uint32_t i = 0; i < *pCount; i++) pNames[i] = spv_kernel_name(prog, i);
        }
    }
    lz_unref(&m->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeModuleGetProperties(ze_module_handle_t hModule, ze_module_properties_t *pModuleProperties) {
    LZ_GET(m, lz_module, hModule, LZ_T_MODULE);
    lz_unref(&m->base);
    if (!pModuleProperties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    /* No imports: every module is linked at creation (spv_link: an import
     * the module uses and no input exports is refused there). */
    pModuleProperties->flags = 0;
    return ZE_RESULT_SUCCESS;
}

/* Each module is linked when it is created (the program extension links
 * several), so none has imports left to resolve here: linking any set of
 * them succeeds, with an empty log.  (A SYCL build that allows unresolved
 * symbols, to link them here, is refused at zeModuleCreate, naming them.) */
ZE_APIEXPORT ze_result_t zeModuleDynamicLink(uint32_t numModules, ze_module_handle_t *phModules,
                                             ze_module_build_log_handle_t *phLinkLog) {
    if (phLinkLog) *phLinkLog = NULL;
    if (!phModules) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    for (uint32_t i = 0; i < numModules; i++)
        LZ_CHECK(phModules[i], LZ_T_MODULE);
    return make_log("", phLinkLog);
}

/* ----------------------------------------------------------------- kernel */

static void kernel_finalize(lz_obj *o) {
    lz_kernel *k = (lz_kernel *)o;
    if (k->module) lz_unref(&k->module->base);
    pthread_mutex_destroy(&k->lock);
    free(k->args);
    free(k->name);
    free(k);
}

ZE_APIEXPORT ze_result_t zeKernelCreate(ze_module_handle_t hModule, const ze_kernel_desc_t *desc,
                                        ze_kernel_handle_t *phKernel) {
    LZ_GET(m, lz_module, hModule, LZ_T_MODULE);
    ze_result_t r = ZE_RESULT_SUCCESS;
    const arsim_kernel *ak = NULL;
    if (!desc || !phKernel || !desc->pKernelName) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if (desc->stype != ZE_STRUCTURE_TYPE_KERNEL_DESC) r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    else if (desc->flags & ~3u) r = ZE_RESULT_ERROR_INVALID_ENUMERATION;
    else if (arsim_module_get_kernel(m->m, desc->pKernelName, &ak) != ARSIM_OK || !ak)
        r = ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    if (r != ZE_RESULT_SUCCESS) {
        lz_unref(&m->base);
        return r;
    }
    lz_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        lz_unref(&m->base);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    k->base = (lz_obj){.type = LZ_T_KERNEL, .refs = 1, .finalize = kernel_finalize};
    pthread_mutex_init(&k->lock, NULL);
    k->module = m; /* keeps the lookup's reference */
    k->k = ak;
    k->group[0] = k->group[1] = k->group[2] = 1;
    size_t total = 0;
    uint32_t np = ak->info->num_params;
    for (uint32_t i = 0; i < np && i < AR_KERNEL_MAX_PARAMS; i++) {
        k->offsets[i] = total;
        total += (ak->info->param_sizes[i] + 15u) & ~(size_t)15u;
    }
    k->args = calloc(1, total ? total : 1); /* unset arguments read as zero */
    k->name = strdup(desc->pKernelName);
    if (!k->args || !k->name || !lz_register(&k->base)) {
        kernel_finalize(&k->base);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    *phKernel = (ze_kernel_handle_t)LZ_HANDLE(k);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeKernelDestroy(ze_kernel_handle_t hKernel) {
    LZ_GET(k, lz_kernel, hKernel, LZ_T_KERNEL);
    lz_unregister(&k->base);
    lz_unref(&k->base);
    return ZE_RESULT_SUCCESS;
}

/* How parameter i of a kernel is passed (SPV_PARAM_*; host kernels: values). */
static int param_kind(const lz_kernel *k, uint32_t i) {
    return k->k->run == spv_kernel_run ? spv_kernel_param_kind(k->k->ctx, i) : SPV_PARAM_VALUE;
}

/* A __local pointer argument: argSize bytes of work-group local memory (the
 * value, which Level Zero passes as NULL, is not read).  Its slot holds the
 * size; the executor places it at launch. */
static ze_result_t set_local_arg(lz_kernel *k, uint32_t i, size_t argSize) {
    if (argSize == 0 || argSize > SPV_MAX_LOCAL_BYTES) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    uint64_t size = argSize;
    pthread_mutex_lock(&k->lock);
    memcpy(k->args + k->offsets[i], &size, sizeof size);
    k->set_mask[i / 64] |= 1ull << (i % 64);
    pthread_mutex_unlock(&k->lock);
    return ZE_RESULT_SUCCESS;
}

/* Whether argSize bytes at value set a parameter of size bytes: exactly its
 * size, or, for a plain value, more bytes whose extra ones only extend the
 * kept ones (zero or sign extension), so that the low bytes hold the same
 * integer.  Intel's compute-runtime keeps the low bytes of any longer
 * immediate (KernelImp::setArgImmediate), and oneMKL's sgemm_kernel passes
 * its uint offsets in 8 bytes; a value the cut would change (a double for a
 * float parameter) is refused, never truncated. */
static int arg_size_fits(int plain_value, const void *value, size_t argSize, size_t size) {
    if (argSize == size) return 1;
    if (argSize < size || size == 0 || !plain_value) return 0;
    if (!value) return 1;
    const unsigned char *bytes = value;
    unsigned char fill = (bytes[size - 1] & 0x80) ? 0xFF : 0x00;
    for (size_t i = size; i < argSize; i++)
        if (bytes[i] != fill) return 0;
    return 1;
}

ZE_APIEXPORT ze_result_t zeKernelSetArgumentValue(ze_kernel_handle_t hKernel, uint32_t argIndex, size_t argSize,
                                                  const void *pArgValue) {
    LZ_GET(k, lz_kernel, hKernel, LZ_T_KERNEL);
    ze_result_t r = ZE_RESULT_SUCCESS;
    const ar_kernel_info *info = k->k->info;
    if (argIndex >= info->num_params) r = ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
    else if (param_kind(k, argIndex) == SPV_PARAM_LOCAL) r = set_local_arg(k, argIndex, argSize);
    else if (!arg_size_fits(param_kind(k, argIndex) == SPV_PARAM_VALUE, pArgValue, argSize,
                            info->param_sizes[argIndex]))
        r = ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    else {
        size_t size = info->param_sizes[argIndex];
        pthread_mutex_lock(&k->lock);
        /* A NULL value sets the argument to zero (a null pointer). */
        if (pArgValue) memcpy(k->args + k->offsets[argIndex], pArgValue, size);
        else memset(k->args + k->offsets[argIndex], 0, size);
        k->set_mask[argIndex / 64] |= 1ull << (argIndex % 64);
        pthread_mutex_unlock(&k->lock);
    }
    lz_unref(&k->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeKernelSetGroupSize(ze_kernel_handle_t hKernel, uint32_t x, uint32_t y, uint32_t z) {
    LZ_GET(k, lz_kernel, hKernel, LZ_T_KERNEL);
    ze_result_t r = ZE_RESULT_SUCCESS;
    if (!x || !y || !z || x > LZ_MAX_GROUP_SIZE || y > LZ_MAX_GROUP_SIZE || z > 64 ||
        (uint64_t)x * y * z > LZ_MAX_GROUP_SIZE)
        r = ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    else {
        pthread_mutex_lock(&k->lock);
        k->group[0] = x;
        k->group[1] = y;
        k->group[2] = z;
        pthread_mutex_unlock(&k->lock);
    }
    lz_unref(&k->base);
    return r;
}

static uint32_t largest_divisor_at_most(uint32_t n, uint32_t limit) {
    if (limit == 0) return 1;
    for (uint32_t d = n < limit ? n : limit; d > 1; d--)
        if (n % d == 0) return d;
    return 1;
}

ZE_APIEXPORT ze_result_t zeKernelSuggestGroupSize(ze_kernel_handle_t hKernel, uint32_t gx, uint32_t gy, uint32_t gz,
                                                  uint32_t *x, uint32_t *y, uint32_t *z) {
    LZ_CHECK(hKernel, LZ_T_KERNEL);
    if (!x || !y || !z) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!gx || !gy || !gz) return ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION;
    /* Group sizes must divide the global size; aim for 256 work items. */
    const uint32_t target = 256;
    *x = largest_divisor_at_most(gx, target);
    *y = largest_divisor_at_most(gy, target / *x);
    *z = largest_divisor_at_most(gz, (target / *x) / *y < 64 ? (target / *x) / *y : 64);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeKernelGetProperties(ze_kernel_handle_t hKernel, ze_kernel_properties_t *pKernelProperties) {
    LZ_GET(k, lz_kernel, hKernel, LZ_T_KERNEL);
    ze_result_t r = ZE_RESULT_SUCCESS;
    if (!pKernelProperties) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else {
        /* Only the count is known; the rest reads as "no requirement". */
        void *next = pKernelProperties->pNext;
        ze_structure_type_t stype = pKernelProperties->stype;
        memset(pKernelProperties, 0, sizeof *pKernelProperties);
        pKernelProperties->stype = stype;
        pKernelProperties->pNext = next;
        pKernelProperties->numKernelArgs = k->k->info->num_params;
        pKernelProperties->maxSubgroupSize = k->k->run ? SPV_SUBGROUP_SIZE : 1;
        pKernelProperties->maxNumSubgroups = LZ_MAX_GROUP_SIZE;
    }
    lz_unref(&k->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeKernelGetName(ze_kernel_handle_t hKernel, size_t *pSize, char *pName) {
    LZ_GET(k, lz_kernel, hKernel, LZ_T_KERNEL);
    ze_result_t r = copy_string(k->name, pSize, pName);
    lz_unref(&k->base);
    return r;
}

/* Which allocations a kernel reaches through pointers it was not given: the
 * sim needs no residency, every live allocation is reachable, so the flags
 * are only recorded (and read back). */
ZE_APIEXPORT ze_result_t zeKernelSetIndirectAccess(ze_kernel_handle_t hKernel, ze_flags_t flags) {
    LZ_GET(k, lz_kernel, hKernel, LZ_T_KERNEL);
    const ze_flags_t known = ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST | ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE |
                             ZE_KERNEL_INDIRECT_ACCESS_FLAG_SHARED;
    ze_result_t r = ZE_RESULT_SUCCESS;
    if (flags & ~known) r = ZE_RESULT_ERROR_INVALID_ENUMERATION;
    else {
        pthread_mutex_lock(&k->lock);
        k->indirect = flags;
        pthread_mutex_unlock(&k->lock);
    }
    lz_unref(&k->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeKernelGetIndirectAccess(ze_kernel_handle_t hKernel, ze_flags_t *pFlags) {
    LZ_GET(k, lz_kernel, hKernel, LZ_T_KERNEL);
    if (pFlags) {
        pthread_mutex_lock(&k->lock);
        *pFlags = k->indirect;
        pthread_mutex_unlock(&k->lock);
    }
    lz_unref(&k->base);
    return pFlags ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
}
