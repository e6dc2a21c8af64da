/* cuda-sim: context-independent loading (cuLibrary*, cuKernel*), the path
 * cuda.core's ObjectCode and Kernel take.
 *
 * A library is a module loaded through cuModuleLoadDataEx, so every image
 * kind that call accepts (PTX, host shared objects) loads here the same way
 * and is refused the same way.  The sim has one copy of device code for all
 * contexts, so a CUkernel is simply the HK_FUNCTION handle of the library
 * module's function: cuKernelGetFunction returns it unchanged, and
 * cuLaunchKernel accepts a CUkernel as a CUfunction as the driver does. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

typedef struct cu_library {
    uint64_t handle;
    CUmodule module;
} cu_library;

static cu_library *library_get(CUlibrary h)
{
    return arsim_handle_get((uint64_t)(uintptr_t)h, HK_LIBRARY);
}

static cu_function *kernel_get(CUkernel h)
{
    cu_function *f = arsim_handle_get((uint64_t)(uintptr_t)h, HK_FUNCTION);
    /* A CUfunction from cuModuleGetFunction is not a CUkernel. */
    return f && __atomic_load_n(&f->library, __ATOMIC_ACQUIRE) ? f : NULL;
}

static CUresult check_library_options(CUlibraryOption *options, void **values, unsigned n)
{
    if (n > 0 && (!options || !values))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n; i++) {
        /* Both options only tell the driver what it may keep: the sim copies
         * what it needs at load time, so they change nothing. */
        if (options[i] != CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE &&
            options[i] != CU_LIBRARY_BINARY_IS_PRESERVED)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* Loads the image as a module.  The driver needs no current context for a
 * library; the sim's module calls do, so without one the load runs in device
 * 0's primary context (modules belong to no context in the sim, so the
 * module outlives that retain). */
static CUresult load_module(const void *code, CUjit_option *jit, void **jit_values,
                            unsigned n_jit, CUmodule *out)
{
    CUcontext current = NULL;
    CUresult r = cuCtxGetCurrent(&current);
    if (r != CUDA_SUCCESS)
        return r;
    if (current)
        return cuModuleLoadDataEx(out, code, n_jit, jit, jit_values);
    CUcontext primary;
    r = cuDevicePrimaryCtxRetain(&primary, 0);
    if (r != CUDA_SUCCESS)
        return r;
    r = cuCtxPushCurrent_v2(primary);
    if (r == CUDA_SUCCESS) {
        r = cuModuleLoadDataEx(out, code, n_jit, jit, jit_values);
        CUcontext popped;
        cuCtxPopCurrent_v2(&popped);
    }
    cuDevicePrimaryCtxRelease_v2(0);
    return r;
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                           void **jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    CUSIM_TRY(cusim_check_init());
    if (!library || !code || (numJitOptions > 0 && (!jitOptions || !jitOptionsValues)))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_library_options(libraryOptions, libraryOptionValues, numLibraryOptions);
    if (r != CUDA_SUCCESS)
        return r;
    cu_library *lib = calloc(1, sizeof *lib);
    if (!lib)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = load_module(code, jitOptions, jitOptionsValues, numJitOptions, &lib->module);
    if (r != CUDA_SUCCESS) {
        free(lib);
        return r;
    }
    lib->handle = arsim_handle_new(HK_LIBRARY, lib);
    *library = (CUlibrary)(uintptr_t)lib->handle;
    return CUDA_SUCCESS;
}

/* Reads the whole file, NUL-terminated so PTX text is a C string. */
static CUresult read_file(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return CUDA_ERROR_FILE_NOT_FOUND;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    CUresult r = CUDA_SUCCESS;
    for (;;) {
        if (cap - len < 65536) {
            cap = cap ? cap * 2 : 65536;
            char *grown = realloc(buf, cap + 1);
            if (!grown) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            buf = grown;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f))
                r = CUDA_ERROR_FILE_NOT_FOUND;
            break;
        }
    }
    fclose(f);
    if (r != CUDA_SUCCESS) {
        free(buf);
        return r;
    }
    buf[len] = 0;
    *out = buf;
    return CUDA_SUCCESS;
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions,
                               CUlibraryOption *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions)
{
    CUSIM_TRY(cusim_check_init());
    if (!library || !fileName)
        return CUDA_ERROR_INVALID_VALUE;
    char *code;
    CUresult r = read_file(fileName, &code);
    if (r != CUDA_SUCCESS)
        return r;
    r = cuLibraryLoadData(library, code, jitOptions, jitOptionsValues, numJitOptions,
                          libraryOptions, libraryOptionValues, numLibraryOptions);
    free(code); /* the module copied what it runs */
    return r;
}

CUresult cuLibraryUnload(CUlibrary library)
{
    CUSIM_TRY(cusim_check_init());
    cu_library *lib = arsim_handle_remove((uint64_t)(uintptr_t)library, HK_LIBRARY);
    if (!lib)
        return CUDA_ERROR_INVALID_HANDLE;
    /* Its kernels' handles go with the module; pending launches keep the code. */
    CUresult r = cuModuleUnload(lib->module);
    free(lib);
    return r;
}

CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    CUSIM_TRY(cusim_check_init());
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    cu_library *lib = library_get(library);
    if (!lib)
        return CUDA_ERROR_INVALID_HANDLE;
    *pMod = lib->module;
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    CUSIM_TRY(cusim_check_init());
    cu_library *lib = library_get(library);
    if (!lib)
        return CUDA_ERROR_INVALID_HANDLE;
    return cuModuleGetGlobal_v2(dptr, bytes, lib->module, name);
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    CUSIM_TRY(cusim_check_init());
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    cu_library *lib = library_get(library);
    if (!lib)
        return CUDA_ERROR_INVALID_HANDLE;
    CUfunction fh;
    CUSIM_TRY(cuModuleGetFunction(&fh, lib->module, name));
    cu_function *f = arsim_handle_get((uint64_t)(uintptr_t)fh, HK_FUNCTION);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE; /* unloaded meanwhile */
    __atomic_store_n(&f->library, lib->handle, __ATOMIC_RELEASE);
    *pKernel = (CUkernel)(uintptr_t)f->handle;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c)); /* the function of the current context */
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    cu_function *f = kernel_get(kernel);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *pFunc = (CUfunction)(uintptr_t)f->handle;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
    CUSIM_TRY(cusim_check_init());
    if (!pLib)
        return CUDA_ERROR_INVALID_VALUE;
    cu_function *f = kernel_get(kernel);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *pLib = (CUlibrary)(uintptr_t)__atomic_load_n(&f->library, __ATOMIC_ACQUIRE);
    return CUDA_SUCCESS;
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    CUSIM_TRY(cusim_check_init());
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    cu_function *f = kernel_get(hfunc);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->k->name;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                              size_t *paramSize)
{
    CUSIM_TRY(cusim_check_init());
    if (!kernel_get(kernel))
        return CUDA_ERROR_INVALID_HANDLE;
    return cuFuncGetParamInfo((CUfunction)kernel, paramIndex, paramOffset, paramSize);
}

static CUresult check_kernel_device(CUkernel kernel, CUdevice dev)
{
    CUSIM_TRY(cusim_check_init());
    if (dev < 0 || dev >= arsim_device_count())
        return CUDA_ERROR_INVALID_DEVICE;
    return kernel_get(kernel) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    CUresult r = check_kernel_device(kernel, dev);
    return r != CUDA_SUCCESS ? r : cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}

CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    CUresult r = check_kernel_device(kernel, dev);
    return r != CUDA_SUCCESS ? r : cuFuncSetAttribute((CUfunction)kernel, attrib, val);
}

CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
    CUresult r = check_kernel_device(kernel, dev);
    return r != CUDA_SUCCESS ? r : cuFuncSetCacheConfig((CUfunction)kernel, config);
}
