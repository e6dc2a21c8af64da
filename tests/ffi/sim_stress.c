/* A multi-threaded stress of the software CUDA driver: streams, events,
 * kernels, host functions, capture and graph replay, and stream-ordered
 * allocations of varying sizes from one shared pool, from several threads at
 * once, without data races of its own.  tests/ffi/test_cuda_sim_sanitizers.py
 * builds it with the driver's sources under ThreadSanitizer and under
 * AddressSanitizer.  Argument: the host-kernel shared object. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cusim.h"

#define THREADS 6
#define ITERATIONS 150
#define GRAPH_EVERY 10

#define CK(x)                                                                       \
    do {                                                                            \
        CUresult r_ = (x);                                                          \
        if (r_ != CUDA_SUCCESS) {                                                   \
            fprintf(stderr, "%s:%d %s = %d\n", __FILE__, __LINE__, #x, (int)r_);    \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static CUcontext g_ctx;
static void *g_image;
static CUmemoryPool g_pool;

static void count(void *p) { __atomic_fetch_add((int *)p, 1, __ATOMIC_RELAXED); }

static void *worker(void *arg)
{
    (void)arg;
    CK(cuCtxSetCurrent(g_ctx));
    CUmodule mod;
    CUfunction fill;
    CK(cuModuleLoadData(&mod, g_image));
    CK(cuModuleGetFunction(&fill, mod, "fill_f32"));
    CUdeviceptr d;
    CK(cuMemAlloc_v2(&d, 4096));
    static __thread char host[4096];
    int counter = 0;
    CUstream other;
    CK(cuStreamCreate(&other, 0));
    for (int i = 0; i < ITERATIONS; i++) {
        CUstream s;
        CUevent e, done;
        CK(cuStreamCreate(&s, 0));
        CK(cuEventCreate(&e, i % 3 == 0 ? CU_EVENT_BLOCKING_SYNC : 0));
        CK(cuEventCreate(&done, 0));
        unsigned n = 1024;
        float v = (float)i;
        void *args[] = {&n, &v, &d};
        CK(cuLaunchKernel(fill, 4, 1, 1, 256, 1, 1, 0, s, args, NULL));
        CK(cuLaunchHostFunc(s, count, &counter));
        CK(cuEventRecord(e, s));
        CK(cuStreamWaitEvent(other, e, 0));
        CK(cuMemcpyDtoHAsync_v2(host, d, 4096, other));
        /* Pool memory: blocks freed here are refitted for other sizes, by
         * this stream at once and by the other threads' once the free ran. */
        CUdeviceptr pd;
        unsigned pn = 256u * (unsigned)(1 + (i * 7) % 13);
        CK(cuMemAllocFromPoolAsync(&pd, pn * sizeof(float), g_pool, i % 2 ? other : s));
        void *pargs[] = {&pn, &v, &pd};
        CK(cuLaunchKernel(fill, (pn + 255) / 256, 1, 1, 256, 1, 1, 0, i % 2 ? other : s, pargs,
                          NULL));
        CK(cuMemFreeAsync(pd, i % 2 ? other : s));
        if (i % GRAPH_EVERY == 0) {
            CUgraph g;
            CUgraphExec x;
            CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
            CK(cuMemsetD8Async(d, 1, 16, s));
            CK(cuLaunchHostFunc(s, count, &counter));
            CK(cuStreamEndCapture(s, &g));
            CK(cuGraphInstantiateWithFlags(&x, g, 0));
            CK(cuGraphLaunch(x, other));
            CK(cuGraphLaunch(x, other));
            CK(cuGraphExecDestroy(x));
            CK(cuGraphDestroy(g));
        }
        CK(cuEventRecord(done, other));
        CK(cuStreamDestroy_v2(s));
        CK(cuEventSynchronize(done));
        CK(cuEventQuery(e));
        CK(cuEventDestroy_v2(e));
        CK(cuEventDestroy_v2(done));
    }
    CK(cuStreamSynchronize(other));
    CK(cuStreamDestroy_v2(other));
    CK(cuMemFree_v2(d));
    CK(cuModuleUnload(mod));
    int expect = ITERATIONS + 2 * ((ITERATIONS + GRAPH_EVERY - 1) / GRAPH_EVERY);
    if (__atomic_load_n(&counter, __ATOMIC_RELAXED) != expect) {
        fprintf(stderr, "host functions ran %d times, not %d\n", counter, expect);
        exit(1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 2;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    g_image = malloc((size_t)size);
    if (!g_image || fread(g_image, 1, (size_t)size, f) != (size_t)size)
        return 2;
    fclose(f);
    CK(cuInit(0));
    CK(cuDevicePrimaryCtxRetain(&g_ctx, 0));
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CK(cuMemPoolCreate(&g_pool, &props));
    cuuint64_t keep = 64u << 20;
    CK(cuMemPoolSetAttribute(g_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuCtxSynchronize());
    CK(cuMemPoolDestroy(g_pool));
    CK(cuDevicePrimaryCtxRelease_v2(0));
    free(g_image);
    puts("ok");
    return 0;
}
