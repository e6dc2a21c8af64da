/* cuda-sim: building graphs by hand, one cuGraphAdd*Node per node type, and
 * reading a node's parameters back.  Each node holds the ops it runs, made
 * as the matching stream call would make them.  What the sim does not model
 * is refused when the node is made: copies of CUDA arrays or of more than one 2-D slice, kernel arguments
 * through `extra`, and graph memory nodes inside a child graph. */
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

#define NODE_DEV_KINDS (ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED | ARSIM_MEM_HOST | ARSIM_MEM_REGISTERED)

static cu_gnode *node_get(CUgraphNode h)
{
    return arsim_handle_get((uint64_t)(uintptr_t)h, HK_GRAPH_NODE);
}

/* Adds a node of type to graph hg after deps; takes body.  Caller holds
 * g_capture_mu. */
static CUresult add_node(CUgraphNode *ph, CUgraph hg, const CUgraphNode *deps, size_t ndeps,
                         CUgraphNodeType type, arsim_graph *body, cu_gnode **out)
{
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hg, HK_GRAPH);
    cu_gnode **dl = ndeps ? malloc(ndeps * sizeof *dl) : NULL;
    CUresult r = !ph || (ndeps && !deps) ? CUDA_ERROR_INVALID_VALUE
                 : !g                    ? CUDA_ERROR_INVALID_VALUE
                 : ndeps && !dl          ? CUDA_ERROR_OUT_OF_MEMORY
                                         : CUDA_SUCCESS;
    for (size_t i = 0; r == CUDA_SUCCESS && i < ndeps; i++)
        if (!(dl[i] = node_get(deps[i])))
            r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = cusim_gnode_add(g, type, body, dl, ndeps, out);
    else
        arsim_graph_destroy(body);
    free(dl);
    if (r == CUDA_SUCCESS)
        *ph = (CUgraphNode)(uintptr_t)(*out)->handle;
    return r;
}

/* A body of one op (NULL op: out of memory). */
static arsim_graph *body_of(arsim_op *op)
{
    arsim_graph *b = NULL;
    if (!op || arsim_graph_create(&b) != ARSIM_OK || arsim_graph_append(b, op) != ARSIM_OK) {
        if (!b)
            arsim_op_free(op);
        arsim_graph_destroy(b);
        return NULL;
    }
    return b;
}

CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                             const CUgraphNode *dependencies, size_t numDependencies)
{
    CUSIM_TRY(cusim_check_init());
    cu_gnode *n;
    pthread_mutex_lock(&g_capture_mu);
    CUresult r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
                          CU_GRAPH_NODE_TYPE_EMPTY, NULL, &n);
    if (r == CUDA_SUCCESS)
        n->has_params = 1;
    pthread_mutex_unlock(&g_capture_mu);
    return r;
}

/* ------------------------------------------------------------- kernels */

static CUresult kernel_check(const CUDA_KERNEL_NODE_PARAMS *p, cu_function **fn)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    /* A CUkernel is its library's function handle here (cusim_library.c). */
    *fn = cusim_function_get(p->func ? p->func : (CUfunction)(void *)p->kern);
    if (!*fn)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p->gridDimX || !p->gridDimY || !p->gridDimZ || !p->blockDimX || !p->blockDimY ||
        !p->blockDimZ || p->gridDimY > 65535 || p->gridDimZ > 65535 || p->blockDimX > 1024 ||
        p->blockDimY > 1024 || p->blockDimZ > 64 ||
        (unsigned long long)p->blockDimX * p->blockDimY * p->blockDimZ > 1024 ||
        p->sharedMemBytes > (unsigned)cusim_func_max_dynamic_shared(*fn))
        return CUDA_ERROR_INVALID_VALUE;
    if (p->extra)
        return CUDA_ERROR_NOT_SUPPORTED; /* arguments through `extra`: not modelled here */
    if ((*fn)->k->info->num_params && !p->kernelParams)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                 const CUgraphNode *dependencies, size_t numDependencies,
                                 const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    CUSIM_TRY(cusim_check_init());
    cu_function *fn;
    CUSIM_TRY(kernel_check(nodeParams, &fn));
    const CUDA_KERNEL_NODE_PARAMS *p = nodeParams;
    void **argv = cusim_kernel_args_copy(fn->k->info, p->kernelParams);
    ar_dim3 grid = {p->gridDimX, p->gridDimY, p->gridDimZ};
    ar_dim3 block = {p->blockDimX, p->blockDimY, p->blockDimZ};
    arsim_op *op = argv ? arsim_op_kernel(fn->k, grid, block, p->sharedMemBytes, argv) : NULL;
    cu_ctx *c; /* its printf records go to the context current when the node is made */
    if (cusim_current_ctx(&c) == CUDA_SUCCESS)
        arsim_op_set_tag(op, c->handle);
    arsim_graph *body = argv ? body_of(op) : NULL;
    if (!body) {
        free(argv);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    cu_gnode *n;
    pthread_mutex_lock(&g_capture_mu);
    CUresult r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
                          CU_GRAPH_NODE_TYPE_KERNEL, body, &n);
    if (r == CUDA_SUCCESS) {
        n->p.kernel = *p;
        n->p.kernel.func = (CUfunction)(uintptr_t)fn->handle;
        n->p.kernel.kernelParams = argv;
        n->kargs = argv;
        n->has_params = 1;
    }
    pthread_mutex_unlock(&g_capture_mu);
    if (r != CUDA_SUCCESS)
        free(argv);
    return r;
}

/* ------------------------------------------------------------- memsets and copies */

static arsim_graph *memset_body(const CUDA_MEMSET_NODE_PARAMS *p)
{
    unsigned char pattern[4];
    memcpy(pattern, &p->value, sizeof pattern); /* little-endian: the low bytes first */
    size_t row = p->width * p->elementSize;
    arsim_graph *b = NULL;
    if (arsim_graph_create(&b) != ARSIM_OK)
        return NULL;
    for (size_t y = 0; y < p->height; y++) {
        void *dst = (char *)(uintptr_t)p->dst + y * p->pitch;
        if (arsim_graph_append(b, arsim_op_fill(dst, pattern, p->elementSize, row)) != ARSIM_OK) {
            arsim_graph_destroy(b);
            return NULL;
        }
    }
    return b;
}

CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies, size_t numDependencies,
                              const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
    CUSIM_TRY(cusim_check_init());
    const CUDA_MEMSET_NODE_PARAMS *p = memsetParams;
    if (!p || (ctx && !cusim_ctx_from_handle(ctx)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) || !p->width ||
        !p->height || (p->height > 1 && p->pitch < p->width * p->elementSize))
        return CUDA_ERROR_INVALID_VALUE;
    size_t span = (p->height - 1) * p->pitch + p->width * p->elementSize;
    if (!arsim_mem_range_ok((void *)(uintptr_t)p->dst, span, NODE_DEV_KINDS))
        return CUDA_ERROR_INVALID_VALUE;
    arsim_graph *body = memset_body(p);
    if (!body)
        return CUDA_ERROR_OUT_OF_MEMORY;
    cu_gnode *n;
    pthread_mutex_lock(&g_capture_mu);
    CUresult r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
                          CU_GRAPH_NODE_TYPE_MEMSET, body, &n);
    if (r == CUDA_SUCCESS) {
        n->p.memset = *p;
        n->has_params = 1;
    }
    pthread_mutex_unlock(&g_capture_mu);
    return r;
}

static int on_device(const void *p)
{
    arsim_alloc a;
    return arsim_mem_lookup(p, &a) == ARSIM_OK && (a.kind & (ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED));
}

/* One side of a copy: its first byte, or NULL (arrays are refused). */
static const char *copy_side(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x,
                             size_t y, size_t z, size_t pitch, size_t height)
{
    const char *base = type == CU_MEMORYTYPE_HOST ? host
                       : type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED
                           ? (const char *)(uintptr_t)dev
                           : NULL;
    return base ? base + (z * height + y) * pitch + x : NULL;
}

static CUresult copy_body(const CUDA_MEMCPY3D *c, arsim_graph **out)
{
    if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY ||
        c->Depth > 1)
        return CUDA_ERROR_NOT_SUPPORTED; /* CUDA arrays, 3-D copies: not modelled */
    const char *src = copy_side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes,
                                c->srcY, c->srcZ, c->srcPitch, c->srcHeight);
    char *dst = (char *)copy_side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes,
                                  c->dstY, c->dstZ, c->dstPitch, c->dstHeight);
    size_t h = c->Height ? c->Height : 1;
    if (!src || !dst || !c->WidthInBytes ||
        (h > 1 && (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes)))
        return CUDA_ERROR_INVALID_VALUE;
    int sd = on_device(src), dd = on_device(dst);
    arsim_copy_dir dir = sd && dd ? ARSIM_COPY_D2D
                         : sd     ? ARSIM_COPY_D2H
                         : dd     ? ARSIM_COPY_H2D
                                  : ARSIM_COPY_H2H;
    if ((sd && !arsim_mem_range_ok(src, (h - 1) * c->srcPitch + c->WidthInBytes, NODE_DEV_KINDS)) ||
        (dd && !arsim_mem_range_ok(dst, (h - 1) * c->dstPitch + c->WidthInBytes, NODE_DEV_KINDS)))
        return CUDA_ERROR_INVALID_VALUE;
    arsim_op *op = h == 1 ? arsim_op_copy(dst, src, c->WidthInBytes, dir)
                          : arsim_op_copy2d(dst, c->dstPitch, src, c->srcPitch, c->WidthInBytes,
                                            h, dir);
    *out = body_of(op);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies, size_t numDependencies,
                              const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    CUSIM_TRY(cusim_check_init());
    if (!copyParams || (ctx && !cusim_ctx_from_handle(ctx)))
        return CUDA_ERROR_INVALID_VALUE;
    arsim_graph *body;
    CUSIM_TRY(copy_body(copyParams, &body));
    cu_gnode *n;
    pthread_mutex_lock(&g_capture_mu);
    CUresult r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
                          CU_GRAPH_NODE_TYPE_MEMCPY, body, &n);
    if (r == CUDA_SUCCESS) {
        n->p.copy = *copyParams;
        n->has_params = 1;
    }
    pthread_mutex_unlock(&g_capture_mu);
    return r;
}

/* ------------------------------------------------------------- host, events, child graphs */

CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                            const CUgraphNode *dependencies, size_t numDependencies,
                            const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    CUSIM_TRY(cusim_check_init());
    if (!nodeParams || !nodeParams->fn)
        return CUDA_ERROR_INVALID_VALUE;
    arsim_graph *body = body_of(arsim_op_host_fn(nodeParams->fn, nodeParams->userData));
    if (!body)
        return CUDA_ERROR_OUT_OF_MEMORY;
    cu_gnode *n;
    pthread_mutex_lock(&g_capture_mu);
    CUresult r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
                          CU_GRAPH_NODE_TYPE_HOST, body, &n);
    if (r == CUDA_SUCCESS) {
        n->p.host = *nodeParams;
        n->has_params = 1;
    }
    pthread_mutex_unlock(&g_capture_mu);
    return r;
}

static CUresult add_event_node(CUgraphNode *ph, CUgraph hg, const CUgraphNode *deps,
                               size_t ndeps, CUevent event, CUgraphNodeType type)
{
    CUSIM_TRY(cusim_check_init());
    cu_event *e = arsim_handle_get((uint64_t)(uintptr_t)event, HK_EVENT);
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    arsim_op *op = type == CU_GRAPH_NODE_TYPE_EVENT_RECORD ? arsim_op_event_record(e->ev)
                                                           : arsim_op_event_wait(e->ev);
    arsim_graph *body = body_of(op);
    if (!body)
        return CUDA_ERROR_OUT_OF_MEMORY;
    cu_gnode *n;
    pthread_mutex_lock(&g_capture_mu);
    CUresult r = add_node(ph, hg, deps, ndeps, type, body, &n);
    if (r == CUDA_SUCCESS) {
        n->event = event;
        n->has_params = 1;
    }
    pthread_mutex_unlock(&g_capture_mu);
    if (r == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_EVENT_RECORD)
        e->recorded = 1; /* it will be, before anyone can wait for it */
    return r;
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                   const CUgraphNode *dependencies, size_t numDependencies,
                                   CUevent event)
{
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event,
                          CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                 const CUgraphNode *dependencies, size_t numDependencies,
                                 CUevent event)
{
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event,
                          CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

static int has_mem_nodes(const cu_graph *g)
{
    for (size_t i = 0; i < g->n; i++) {
        const cu_gnode *n = g->nodes[i];
        if (n->mem || (n->child && has_mem_nodes(n->child)))
            return 1;
        for (unsigned b = 0; n->bodies && b < n->cond.size; b++)
            if (has_mem_nodes(n->bodies[b]))
                return 1;
    }
    return 0;
}

CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                  const CUgraphNode *dependencies, size_t numDependencies,
                                  CUgraph childGraph)
{
    CUSIM_TRY(cusim_check_init());
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *child = arsim_handle_get((uint64_t)(uintptr_t)childGraph, HK_GRAPH);
    cu_graph *copy = NULL;
    CUresult r = !child || child->capturing ? CUDA_ERROR_INVALID_VALUE
                 : has_mem_nodes(child)     ? CUDA_ERROR_NOT_SUPPORTED
                                            : cusim_graph_clone(child, &copy);
    cu_gnode *n;
    if (r == CUDA_SUCCESS)
        r = add_node(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_GRAPH,
                     NULL, &n);
    if (r == CUDA_SUCCESS) {
        copy->owned = 1;
        n->child = copy;
        n->has_params = 1;
    } else if (copy) {
        cusim_graph_free(copy);
    }
    pthread_mutex_unlock(&g_capture_mu);
    return r;
}

/* ------------------------------------------------------------- graph memory */

static CUresult alloc_kind(const CUDA_MEM_ALLOC_NODE_PARAMS *p, int *device, arsim_mem_kind *kind)
{
    const CUmemPoolProps *pp = &p->poolProps;
    if (pp->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return CUDA_ERROR_INVALID_VALUE; /* graph memory cannot be shared */
    int loc_dev = pp->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    if (loc_dev && (pp->location.id < 0 || pp->location.id >= arsim_device_count()))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = loc_dev ? pp->location.id : -1;
    if (pp->allocType == CU_MEM_ALLOCATION_TYPE_PINNED && loc_dev)
        *kind = ARSIM_MEM_DEVICE;
    else if (pp->allocType == CU_MEM_ALLOCATION_TYPE_PINNED && pp->location.type == 2)
        *kind = ARSIM_MEM_HOST; /* CU_MEM_LOCATION_TYPE_HOST */
    else if (pp->allocType == 2 && loc_dev)
        *kind = ARSIM_MEM_MANAGED; /* CU_MEM_ALLOCATION_TYPE_MANAGED */
    else
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < p->accessDescCount; i++) {
        const CUmemAccessDesc *d = &p->accessDescs[i];
        if (d->location.type != CU_MEM_LOCATION_TYPE_DEVICE || d->location.id < 0 ||
            d->location.id >= arsim_device_count() || d->flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                const CUgraphNode *dependencies, size_t numDependencies,
                                CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    CUSIM_TRY(cusim_check_init());
    CUDA_MEM_ALLOC_NODE_PARAMS *p = nodeParams;
    if (!p || !p->bytesize || (p->accessDescCount && !p->accessDescs))
        return CUDA_ERROR_INVALID_VALUE;
    int device;
    arsim_mem_kind kind;
    CUSIM_TRY(alloc_kind(p, &device, &kind));
    size_t descs = p->accessDescCount * sizeof *p->accessDescs;
    void *copy = descs ? malloc(descs) : NULL;
    cu_gmem *m = NULL;
    CUresult r = descs && !copy ? CUDA_ERROR_OUT_OF_MEMORY
                                : cusim_gmem_new(device, kind, p->bytesize, &m);
    cu_gnode *n;
    pthread_mutex_lock(&g_capture_mu);
    if (r == CUDA_SUCCESS)
        r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
                     CU_GRAPH_NODE_TYPE_MEM_ALLOC, NULL, &n);
    if (r == CUDA_SUCCESS) {
        if (descs)
            memcpy(copy, p->accessDescs, descs);
        p->dptr = cusim_gmem_ptr(m);
        n->mem = m;
        n->p.alloc = *p;
        n->p.alloc.accessDescs = copy;
        n->kargs = copy;
        n->has_params = 1;
    }
    pthread_mutex_unlock(&g_capture_mu);
    if (r != CUDA_SUCCESS) {
        free(copy);
        if (m)
            cusim_gmem_unref(m);
    }
    return r;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                               const CUgraphNode *dependencies, size_t numDependencies,
                               CUdeviceptr dptr)
{
    CUSIM_TRY(cusim_check_init());
    cu_gmem *m = cusim_gmem_of(dptr);
    if (!m)
        return CUDA_ERROR_INVALID_VALUE; /* only graph memory is freed by a graph */
    cu_gnode *n;
    pthread_mutex_lock(&g_capture_mu);
    CUresult r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
                          CU_GRAPH_NODE_TYPE_MEM_FREE, NULL, &n);
    if (r == CUDA_SUCCESS) {
        cusim_gmem_ref(m);
        n->mem = m;
        n->has_params = 1;
    }
    pthread_mutex_unlock(&g_capture_mu);
    return r;
}

/* A conditional node and its body graphs.  Its condition at a launch is
 * its handle's default value (cusim_cond_value), so instantiation picks the
 * body it runs; a while loop whose condition is not zero could never end,
 * and is refused there. */
static CUresult add_conditional(CUgraphNode *ph, CUgraph hg, const CUgraphNode *deps,
                                size_t ndeps, CUDA_CONDITIONAL_NODE_PARAMS *c)
{
    unsigned max = c->type == CU_GRAPH_COND_TYPE_IF       ? 2
                   : c->type == CU_GRAPH_COND_TYPE_WHILE  ? 1
                   : c->type == CU_GRAPH_COND_TYPE_SWITCH ? ~0u
                                                          : 0;
    if (!c->size || c->size > max || (c->ctx && !cusim_ctx_from_handle(c->ctx)))
        return CUDA_ERROR_INVALID_VALUE;
    cu_graph **bodies = calloc(c->size, sizeof *bodies);
    CUgraph *handles = calloc(c->size, sizeof *handles);
    cu_gnode *n = NULL;
    pthread_mutex_lock(&g_capture_mu);
    CUresult r = !bodies || !handles ? CUDA_ERROR_OUT_OF_MEMORY
                 : cusim_cond_value(c->handle) < 0 ? CUDA_ERROR_INVALID_VALUE
                                                   : CUDA_SUCCESS;
    for (unsigned i = 0; r == CUDA_SUCCESS && i < c->size; i++) {
        bodies[i] = cusim_graph_new();
        if (!bodies[i])
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            bodies[i]->owned = 1;
            handles[i] = (CUgraph)(uintptr_t)bodies[i]->handle;
        }
    }
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hg, HK_GRAPH);
    uint64_t root = g ? (g->root ? g->root : g->handle) : 0;
    if (r == CUDA_SUCCESS && g && c->handle >> 16 != root)
        r = CUDA_ERROR_INVALID_VALUE; /* a condition made for another graph */
    for (unsigned i = 0; r == CUDA_SUCCESS && i < c->size; i++)
        bodies[i]->root = root;
    if (r == CUDA_SUCCESS)
        r = add_node(ph, hg, deps, ndeps, CU_GRAPH_NODE_TYPE_CONDITIONAL, NULL, &n);
    if (r == CUDA_SUCCESS) {
        n->bodies = bodies;
        n->body_handles = handles;
        n->cond = *c;
        n->cond.phGraph_out = handles;
        n->has_params = 1;
        c->phGraph_out = handles;
    }
    for (unsigned i = 0; r != CUDA_SUCCESS && bodies && i < c->size; i++)
        cusim_graph_free(bodies[i]);
    pthread_mutex_unlock(&g_capture_mu);
    if (r != CUDA_SUCCESS) {
        free(bodies);
        free(handles);
    }
    return r;
}

/* cuGraphAddNode's generic form: empty and conditional nodes (the one kind
 * only this form makes); the others through their own calls above. */
CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                           const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData,
                           size_t numDependencies, CUgraphNodeParams *nodeParams)
{
    CUSIM_TRY(cusim_check_init());
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; dependencyData && i < numDependencies; i++)
        if (dependencyData[i].type || dependencyData[i].from_port || dependencyData[i].to_port)
            return CUDA_ERROR_NOT_SUPPORTED;
    if (nodeParams->type == CU_GRAPH_NODE_TYPE_EMPTY)
        return cuGraphAddEmptyNode(phGraphNode, hGraph, dependencies, numDependencies);
    if (nodeParams->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
        return add_conditional(phGraphNode, hGraph, dependencies, numDependencies,
                               (CUDA_CONDITIONAL_NODE_PARAMS *)(void *)nodeParams->reserved1);
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                        const CUgraphNode *dependencies, size_t numDependencies,
                        CUgraphNodeParams *nodeParams)
{
    return cuGraphAddNode_v2(phGraphNode, hGraph, dependencies, NULL, numDependencies,
                             nodeParams);
}

/* ------------------------------------------------------------- reading back */

/* The node behind h if it is of type and was made with parameters. */
static CUresult node_of(CUgraphNode h, CUgraphNodeType type, const void *out, cu_gnode **n)
{
    CUSIM_TRY(cusim_check_init());
    *n = node_get(h);
    if (!*n)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!out || (*n)->type != type)
        return CUDA_ERROR_INVALID_VALUE;
    /* A captured kernel, copy or memset keeps only its ops: saying nothing
     * beats answering with parameters it was not made with. */
    return (*n)->has_params ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    cu_gnode *n;
    CUSIM_TRY(node_of(hNode, CU_GRAPH_NODE_TYPE_KERNEL, nodeParams, &n));
    *nodeParams = n->p.kernel;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    cu_gnode *n;
    CUSIM_TRY(node_of(hNode, CU_GRAPH_NODE_TYPE_MEMSET, nodeParams, &n));
    *nodeParams = n->p.memset;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams)
{
    cu_gnode *n;
    CUSIM_TRY(node_of(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, nodeParams, &n));
    *nodeParams = n->p.copy;
    return CUDA_SUCCESS;
}

CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams)
{
    cu_gnode *n;
    CUSIM_TRY(node_of(hNode, CU_GRAPH_NODE_TYPE_HOST, nodeParams, &n));
    *nodeParams = n->p.host;
    return CUDA_SUCCESS;
}

CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph)
{
    cu_gnode *n;
    CUSIM_TRY(node_of(hNode, CU_GRAPH_NODE_TYPE_GRAPH, phGraph, &n));
    *phGraph = (CUgraph)(uintptr_t)n->child->handle;
    return CUDA_SUCCESS;
}

CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    cu_gnode *n;
    CUSIM_TRY(node_of(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event_out, &n));
    *event_out = n->event;
    return CUDA_SUCCESS;
}

CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    cu_gnode *n;
    CUSIM_TRY(node_of(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event_out, &n));
    *event_out = n->event;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    cu_gnode *n;
    CUSIM_TRY(node_of(hNode, CU_GRAPH_NODE_TYPE_MEM_ALLOC, params_out, &n));
    *params_out = n->p.alloc;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
    cu_gnode *n;
    CUSIM_TRY(node_of(hNode, CU_GRAPH_NODE_TYPE_MEM_FREE, dptr_out, &n));
    *dptr_out = cusim_gmem_ptr(n->mem);
    return CUDA_SUCCESS;
}

/* The generic read-back: conditional nodes, which have no call of their own. */
CUresult cuGraphNodeGetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
    cu_gnode *n;
    CUSIM_TRY(node_of(hNode, CU_GRAPH_NODE_TYPE_CONDITIONAL, nodeParams, &n));
    memset(nodeParams, 0, sizeof *nodeParams);
    nodeParams->type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    memcpy(nodeParams->reserved1, &n->cond, sizeof n->cond);
    return CUDA_SUCCESS;
}
