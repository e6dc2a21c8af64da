/* Modules, build logs and kernels.
 *
 * A SPIR-V module (ZE_MODULE_FORMAT_IL_SPIRV) runs on the SPIR-V executor
 * (ffi/sim/spirv): decoded and checked here, at creation, so that anything
 * it does not support fails with ZE_RESULT_ERROR_MODULE_BUILD_FAILURE (bytes
 * that are not valid SPIR-V: ZE_RESULT_ERROR_INVALID_NATIVE_BINARY) and a
 * build log naming the instruction.  A native module
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

/* Compiles a SPIR-V module for the executor; on failure, the build log says
 * why (the executor's message names the instruction and its word offset). */
static ze_result_t load_spirv(const void *image, size_t size, arsim_module **out,
                              ze_module_build_log_handle_t *phBuildLog)
{
    char err[512];
    spv_load_status ls = SPV_LOAD_OK;
    spv_program *prog = spv_program_load(image, size, &ls, err, sizeof err);
    if (!prog) {
        char msg[640];
        snprintf(msg, sizeof msg, "levelzero-sim: cannot build the SPIR-V module: %s", err);
        make_log(msg, phBuildLog);
        if (ls == SPV_LOAD_NO_MEMORY)
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        return ls == SPV_LOAD_MALFORMED ? ZE_RESULT_ERROR_INVALID_NATIVE_BINARY
                                        : ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
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

ZE_APIEXPORT ze_result_t zeModuleCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                        const ze_module_desc_t *desc, ze_module_handle_t *phModule,
                                        ze_module_build_log_handle_t *phBuildLog) {
    LZ_CHECK(hContext, LZ_T_CONTEXT);
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if (phBuildLog) *phBuildLog = NULL;
    if (!desc || !phModule || !desc->pInputModule) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->stype != ZE_STRUCTURE_TYPE_MODULE_DESC) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (desc->format > ZE_MODULE_FORMAT_NATIVE) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (desc->inputSize == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (desc->format == ZE_MODULE_FORMAT_IL_SPIRV) {
        uint32_t magic = 0;
        if (desc->inputSize >= 4) memcpy(&magic, desc->pInputModule, 4);
        if (magic != SPIRV_MAGIC) {
            make_log("levelzero-sim: the input is not a SPIR-V module (bad magic number)", phBuildLog);
            return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
        }
    }
    arsim_module *am = NULL;
    arsim_status st;
    if (desc->format == ZE_MODULE_FORMAT_IL_SPIRV) {
        ze_result_t r = load_spirv(desc->pInputModule, desc->inputSize, &am, phBuildLog);
        if (r != ZE_RESULT_SUCCESS)
            return r;
        st = ARSIM_OK;
    } else {
        /* The engine's loader keeps the image's memfd open for the module's
         * life, so two live modules never share a /proc/self/fd path. */
        st = arsim_module_load(desc->pInputModule, desc->inputSize, &am);
    }
    if (st != ARSIM_OK) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "levelzero-sim: the native binary (%zu bytes) is not a loadable host shared object "
                 "built for the host-kernel ABI v%u (%s)",
                 desc->inputSize, AR_HOST_ABI_VERSION, arsim_status_name(st));
        make_log(msg, phBuildLog);
        return st == ARSIM_ERR_OUT_OF_MEMORY ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
                                             : ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    }
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
    ze_result_t r = make_log("", phBuildLog);
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
    /* No imports: a module calling what it does not define is refused at
     * creation (ffi/sim/spirv/README.md), so there is nothing to link. */
    pModuleProperties->flags = 0;
    return ZE_RESULT_SUCCESS;
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

ZE_APIEXPORT ze_result_t zeKernelSetArgumentValue(ze_kernel_handle_t hKernel, uint32_t argIndex, size_t argSize,
                                                  const void *pArgValue) {
    LZ_GET(k, lz_kernel, hKernel, LZ_T_KERNEL);
    ze_result_t r = ZE_RESULT_SUCCESS;
    const ar_kernel_info *info = k->k->info;
    if (argIndex >= info->num_params) r = ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
    else if (param_kind(k, argIndex) == SPV_PARAM_LOCAL) r = set_local_arg(k, argIndex, argSize);
    else if (argSize != info->param_sizes[argIndex]) r = ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    else {
        pthread_mutex_lock(&k->lock);
        /* A NULL value sets the argument to zero (a null pointer). */
        if (pArgValue) memcpy(k->args + k->offsets[argIndex], pArgValue, argSize);
        else memset(k->args + k->offsets[argIndex], 0, argSize);
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
