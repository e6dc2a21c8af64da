/* A few CUDA driver entry points, enough to open a CudaDriver, for tests of
 * the binding's plumbing: library lookup, the error table, sticky errors and
 * symbols a driver lacks.  Build with -DINIT_RESULT=34 for a stub library. */
#include <stddef.h>
#include <string.h>

typedef unsigned int CUresult;
#ifndef INIT_RESULT
#define INIT_RESULT 0
#endif

static CUresult next_result;
static int calls;
static int ctx_storage;

void fake_set_next_result(CUresult r) { next_result = r; }
int fake_calls(void) { return calls; }

CUresult cuInit(unsigned int flags) { return INIT_RESULT; }

CUresult cuGetErrorName(CUresult e, const char **p) {
    switch (e) {
    case 2: *p = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
    case 34: *p = "CUDA_ERROR_STUB_LIBRARY"; return 0;
    case 700: *p = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0;
    }
    return 1;
}

CUresult cuGetErrorString(CUresult e, const char **p) {
    switch (e) {
    case 2: *p = "out of memory"; return 0;
    case 34: *p = "CUDA driver is a stub library"; return 0;
    case 700: *p = "an illegal memory access was encountered"; return 0;
    }
    return 1;
}

CUresult cuDriverGetVersion(int *v) { *v = 12000; return 0; }
CUresult cuDeviceGetCount(int *c) { *c = 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return 0; }
CUresult cuDeviceGetName(char *name, int len, int dev) {
    strncpy(name, "Fake CUDA device", (size_t)len);
    return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) { *bytes = (size_t)1 << 30; return 0; }
CUresult cuDeviceGetAttribute(int *v, unsigned int attr, int dev) {
    *v = attr == 16 ? 4 : attr == 75 ? 8 : 0;
    return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { *ctx = &ctx_storage; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return 0; }
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) {
    CUresult r = next_result;
    calls++;
    next_result = 0;
    if (r == 0) *p = 0x100000;
    return r;
}

CUresult cuMemFree_v2(unsigned long long p) { calls++; return 0; }
