/* cuda-sim: graphs as nodes and edges.  A graph is built by hand (the
 * cuGraphAdd*Node calls, cusim_graph_nodes.c) or by stream capture, which
 * adds one node per captured call after the capture's current dependencies.
 * Instantiation lays the nodes out in one order that respects every edge
 * (creation order where the edges leave a choice) and copies their ops into
 * one list: a launch runs on one queue, which is one of the orders the graph
 * allows.  Every structural change holds g_capture_mu, as captures do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

static cu_gnode *node_get(CUgraphNode h)
{
    return arsim_handle_get((uint64_t)(uintptr_t)h, HK_GRAPH_NODE);
}

static CUgraphNode node_handle(const cu_gnode *n) { return (CUgraphNode)(uintptr_t)n->handle; }

cu_graph *cusim_graph_new(void)
{
    cu_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->handle = arsim_handle_new(HK_GRAPH, g);
    if (!g->handle) {
        free(g);
        return NULL;
    }
    return g;
}

static void node_free(cu_gnode *n)
{
    arsim_handle_remove(n->handle, HK_GRAPH_NODE);
    arsim_graph_destroy(n->body);
    if (n->child)
        cusim_graph_free(n->child);
    for (unsigned i = 0; n->bodies && i < n->cond.size; i++)
        cusim_graph_free(n->bodies[i]);
    free(n->bodies);
    free(n->body_handles);
    if (n->mem)
        cusim_gmem_unref(n->mem);
    free(n->kargs);
    free(n->deps);
    free(n);
}

void cusim_graph_free(cu_graph *g)
{
    if (!g)
        return;
    arsim_handle_remove(g->handle, HK_GRAPH);
    for (size_t i = 0; i < g->n; i++)
        node_free(g->nodes[i]);
    free(g->nodes);
    cusim_urefs_release(g->urefs);
    free(g);
}

static int list_has(cu_gnode *const *list, size_t n, const cu_gnode *x)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == x)
            return 1;
    return 0;
}

static CUresult list_push(cu_gnode ***list, size_t *n, size_t *cap, cu_gnode *x)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 4;
        cu_gnode **l = realloc(*list, c * sizeof *l);
        if (!l)
            return CUDA_ERROR_OUT_OF_MEMORY;
        *list = l;
        *cap = c;
    }
    (*list)[(*n)++] = x;
    return CUDA_SUCCESS;
}

static int list_remove(cu_gnode **list, size_t *n, const cu_gnode *x)
{
    for (size_t i = 0; i < *n; i++) {
        if (list[i] == x) {
            memmove(&list[i], &list[i + 1], (*n - i - 1) * sizeof *list);
            (*n)--;
            return 1;
        }
    }
    return 0;
}

CUresult cusim_gnode_add(cu_graph *g, CUgraphNodeType type, arsim_graph *body,
                         cu_gnode *const *deps, size_t ndeps, cu_gnode **out)
{
    for (size_t i = 0; i < ndeps; i++) {
        /* Each dependency is a node of this graph, named once. */
        if (!deps[i] || deps[i]->graph != g || list_has(deps, i, deps[i])) {
            arsim_graph_destroy(body);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    cu_gnode *n = calloc(1, sizeof *n);
    if (!n || (ndeps && !(n->deps = malloc(ndeps * sizeof *n->deps)))) {
        free(n);
        arsim_graph_destroy(body);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (ndeps)
        memcpy(n->deps, deps, ndeps * sizeof *deps);
    n->ndeps = n->depcap = ndeps;
    n->graph = g;
    n->type = type;
    n->body = body;
    n->order = g->next_order++;
    if (list_push(&g->nodes, &g->n, &g->cap, n) != CUDA_SUCCESS ||
        !(n->handle = arsim_handle_new(HK_GRAPH_NODE, n))) {
        if (g->n && g->nodes[g->n - 1] == n)
            g->n--;
        n->body = NULL;
        arsim_graph_destroy(body);
        free(n->deps);
        free(n);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = n;
    return CUDA_SUCCESS;
}

/* CUDA forbids deleting nodes or edges of, and cloning, a graph that holds
 * graph memory nodes. */
static int holds_mem_nodes(const cu_graph *g)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->nodes[i]->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
            g->nodes[i]->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
            return 1;
    return 0;
}

/* ------------------------------------------------------------- capture */

cu_graph *cusim_capture_graph(cu_capture *cap)
{
    return arsim_handle_get(cap->graph_handle, HK_GRAPH);
}

CUresult cusim_capture_advance(cu_capture *cap, cu_gnode *node)
{
    cap->ndeps = 0;
    return list_push(&cap->deps, &cap->ndeps, &cap->depcap, node);
}

static CUgraphNodeType type_of_op(arsim_op_kind k)
{
    switch (k) {
    case ARSIM_OPK_COPY:
    case ARSIM_OPK_COPY2D: return CU_GRAPH_NODE_TYPE_MEMCPY;
    case ARSIM_OPK_MEMSET8:
    case ARSIM_OPK_FILL: return CU_GRAPH_NODE_TYPE_MEMSET;
    case ARSIM_OPK_KERNEL: return CU_GRAPH_NODE_TYPE_KERNEL;
    case ARSIM_OPK_HOST_FN:
    case ARSIM_OPK_RELEASE_FN: return CU_GRAPH_NODE_TYPE_HOST;
    case ARSIM_OPK_EVENT_RECORD: return CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    case ARSIM_OPK_EVENT_WAIT: return CU_GRAPH_NODE_TYPE_WAIT_EVENT;
    default: return CU_GRAPH_NODE_TYPE_EMPTY;
    }
}

CUresult cusim_capture_add_op(cu_capture *cap, arsim_op *op)
{
    cu_graph *g = cusim_capture_graph(cap);
    arsim_graph *body = NULL;
    if (!g || arsim_graph_create(&body) != ARSIM_OK) {
        arsim_op_free(op);
        return g ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    CUgraphNodeType type = type_of_op(arsim_op_kind_of(op));
    /* A captured host function is all its node's parameters. */
    CUDA_HOST_NODE_PARAMS host;
    int is_host = arsim_op_host_fn_of(op, &host.fn, &host.userData);
    if (arsim_graph_append(body, op) != ARSIM_OK) {
        arsim_graph_destroy(body);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    cu_gnode *n;
    CUSIM_TRY(cusim_gnode_add(g, type, body, cap->deps, cap->ndeps, &n));
    if (is_host) {
        n->p.host = host;
        n->has_params = 1;
    }
    return cusim_capture_advance(cap, n);
}

CUresult cusim_capture_add_mem(cu_capture *cap, CUgraphNodeType type, cu_gmem *m,
                               const CUmemPoolProps *pool)
{
    cu_graph *g = cusim_capture_graph(cap);
    if (!g)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    cu_gnode *n;
    CUSIM_TRY(cusim_gnode_add(g, type, NULL, cap->deps, cap->ndeps, &n));
    cusim_gmem_ref(m);
    n->mem = m;
    n->has_params = 1;
    if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        CUDA_MEM_ALLOC_NODE_PARAMS *p = &n->p.alloc;
        p->poolProps.allocType = pool->allocType;
        p->poolProps.location = pool->location;
        p->bytesize = cusim_gmem_size(m);
        p->dptr = cusim_gmem_ptr(m);
    }
    return cusim_capture_advance(cap, n);
}

/* A graph launched into a capture becomes a child graph node: a chain of
 * one node per op of the instantiated graph. */
CUresult cusim_capture_add_exec(cu_capture *cap, const arsim_graph *ops)
{
    cu_graph *g = cusim_capture_graph(cap);
    cu_graph *child = g ? cusim_graph_new() : NULL;
    if (!child)
        return g ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    child->owned = 1;
    cu_gnode *prev = NULL, *n;
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; r == CUDA_SUCCESS && i < arsim_graph_size(ops); i++) {
        arsim_graph *body = NULL;
        if (arsim_graph_create(&body) != ARSIM_OK ||
            arsim_graph_append(body, arsim_graph_op_clone(ops, i)) != ARSIM_OK) {
            arsim_graph_destroy(body);
            r = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        r = cusim_gnode_add(child, type_of_op(arsim_graph_op_kind(ops, i)), body, &prev,
                            prev ? 1 : 0, &n);
        prev = n;
    }
    if (r == CUDA_SUCCESS)
        r = cusim_gnode_add(g, CU_GRAPH_NODE_TYPE_GRAPH, NULL, cap->deps, cap->ndeps, &n);
    if (r != CUDA_SUCCESS) {
        cusim_graph_free(child);
        return r;
    }
    n->child = child;
    return cusim_capture_advance(cap, n);
}

/* ------------------------------------------------------------- copies */

static CUresult clone_bodies(const cu_gnode *src, cu_gnode *n)
{
    unsigned size = src->cond.size;
    n->bodies = calloc(size, sizeof *n->bodies);
    n->body_handles = calloc(size, sizeof *n->body_handles);
    n->cond = src->cond;
    n->cond.phGraph_out = n->body_handles;
    if (!n->bodies || !n->body_handles) {
        n->cond.size = 0; /* node_free frees what there is */
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (unsigned i = 0; i < size; i++) {
        CUresult r = cusim_graph_clone(src->bodies[i], &n->bodies[i]);
        if (r != CUDA_SUCCESS) {
            n->cond.size = i;
            return r;
        }
        n->bodies[i]->owned = 1;
        n->body_handles[i] = (CUgraph)(uintptr_t)n->bodies[i]->handle;
    }
    return CUDA_SUCCESS;
}

/* A copy of the argument values, as a kernelParams array followed by them. */
void **cusim_kernel_args_copy(const ar_kernel_info *info, void *const *params)
{
    size_t total = 0;
    for (uint32_t i = 0; i < info->num_params; i++)
        total += (info->param_sizes[i] + 7) & ~(size_t)7;
    void **argv = malloc(info->num_params * sizeof(void *) + total + 1);
    if (!argv)
        return NULL;
    char *at = (char *)(argv + info->num_params);
    for (uint32_t i = 0; i < info->num_params; i++) {
        memcpy(at, params[i], info->param_sizes[i]);
        argv[i] = at;
        at += (info->param_sizes[i] + 7) & ~(size_t)7;
    }
    return argv;
}

static CUresult clone_node(const cu_gnode *src, cu_graph *dst, cu_gnode **out)
{
    arsim_graph *body = NULL;
    if (src->body && arsim_graph_create(&body) != ARSIM_OK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (body && arsim_graph_append_graph(body, src->body) != ARSIM_OK) {
        arsim_graph_destroy(body);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    cu_gnode *n;
    CUSIM_TRY(cusim_gnode_add(dst, src->type, body, NULL, 0, &n));
    n->order = src->order;
    n->origin = src->handle;
    n->event = src->event;
    n->p = src->p;
    if (src->mem) {
        n->mem = src->mem;
        cusim_gmem_ref(n->mem);
    }
    if (src->child)
        CUSIM_TRY(cusim_graph_clone(src->child, &n->child));
    if (src->bodies)
        CUSIM_TRY(clone_bodies(src, n));
    /* What the original was made with holds for the copy: its *GetParams
     * answer the same (the kernel argument values copied, the copy's own). */
    n->has_params = src->has_params;
    if (src->type == CU_GRAPH_NODE_TYPE_KERNEL && src->kargs) {
        cu_function *fn = cusim_function_get(src->p.kernel.func);
        n->kargs = fn ? cusim_kernel_args_copy(fn->k->info, src->kargs) : NULL;
        if (!n->kargs)
            n->has_params = 0; /* its module is gone: say nothing rather than guess */
        n->p.kernel.kernelParams = n->kargs;
    } else if (src->type == CU_GRAPH_NODE_TYPE_KERNEL) {
        n->p.kernel.kernelParams = NULL;
    }
    *out = n;
    return CUDA_SUCCESS;
}

/* The node of copy that stands for node `of` of the original. */
static cu_gnode *counterpart(const cu_graph *orig, cu_graph *copy, const cu_gnode *of)
{
    for (size_t i = 0; i < orig->n; i++)
        if (orig->nodes[i] == of)
            return copy->nodes[i];
    return NULL;
}

CUresult cusim_graph_clone(const cu_graph *g, cu_graph **out)
{
    cu_graph *c = cusim_graph_new();
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = cusim_urefs_copy(g->urefs, &c->urefs);
    for (size_t i = 0; r == CUDA_SUCCESS && i < g->n; i++) {
        cu_gnode *n;
        r = clone_node(g->nodes[i], c, &n);
    }
    for (size_t i = 0; r == CUDA_SUCCESS && i < g->n; i++) {
        const cu_gnode *o = g->nodes[i];
        cu_gnode *n = c->nodes[i];
        for (size_t d = 0; r == CUDA_SUCCESS && d < o->ndeps; d++)
            r = list_push(&n->deps, &n->ndeps, &n->depcap, counterpart(g, c, o->deps[d]));
    }
    c->next_order = g->next_order;
    c->next_cond = g->next_cond;
    if (r != CUDA_SUCCESS) {
        cusim_graph_free(c);
        return r;
    }
    *out = c;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- layout */

/* g's nodes in an order that respects every edge, earliest-made first where
 * the edges allow; CUDA_ERROR_INVALID_VALUE if the edges make a cycle. */
static CUresult layout(const cu_graph *g, cu_gnode ***out)
{
    cu_gnode **order = malloc((g->n ? g->n : 1) * sizeof *order);
    char *placed = calloc(g->n ? g->n : 1, 1);
    if (!order || !placed) {
        free(order);
        free(placed);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t k = 0; k < g->n; k++) {
        size_t best = g->n;
        for (size_t i = 0; i < g->n; i++) {
            if (placed[i])
                continue;
            cu_gnode *n = g->nodes[i];
            int ready = 1;
            for (size_t d = 0; d < n->ndeps && ready; d++)
                ready = list_has(order, k, n->deps[d]);
            if (ready && (best == g->n || n->order < g->nodes[best]->order))
                best = i;
        }
        if (best == g->n) {
            free(order);
            free(placed);
            return CUDA_ERROR_INVALID_VALUE;
        }
        placed[best] = 1;
        order[k] = g->nodes[best];
    }
    free(placed);
    *out = order;
    return CUDA_SUCCESS;
}

static CUresult exec_note_mem(cu_gmem ***list, size_t *n, cu_gmem *m)
{
    cu_gmem **l = realloc(*list, (*n + 1) * sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *list = l;
    l[(*n)++] = m;
    cusim_gmem_ref(m);
    return CUDA_SUCCESS;
}

/* Appends node n's part of the shape: its type and how many edges reach it. */
static CUresult shape_add(cu_graph_exec *x, const cu_gnode *n)
{
    size_t len = x->shape ? strlen(x->shape) : 0;
    char *s = realloc(x->shape, len + 32);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    snprintf(s + len, 32, "%u:%zu%s;", (unsigned)n->type, n->ndeps, n->child ? "{" : "");
    x->shape = s;
    return CUDA_SUCCESS;
}

static CUresult flatten(const cu_graph *g, cu_graph_exec *x);

/* The body a conditional node runs at every launch (NULL: none), from its
 * condition's value (see cusim_cond_value). */
static CUresult conditional_body(const cu_gnode *n, const cu_graph **body)
{
    long long v = cusim_cond_value(n->cond.handle);
    *body = NULL;
    if (v < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (n->cond.type == CU_GRAPH_COND_TYPE_WHILE && v)
        return CUDA_ERROR_NOT_SUPPORTED; /* nothing could end the loop */
    if (n->cond.type == CU_GRAPH_COND_TYPE_IF)
        *body = v ? n->bodies[0] : n->cond.size == 2 ? n->bodies[1] : NULL;
    else if (n->cond.type == CU_GRAPH_COND_TYPE_SWITCH)
        *body = (unsigned long long)v < n->cond.size ? n->bodies[v] : NULL;
    return CUDA_SUCCESS;
}

static CUresult flatten(const cu_graph *g, cu_graph_exec *x)
{
    cu_gnode **order;
    CUSIM_TRY(layout(g, &order));
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; r == CUDA_SUCCESS && i < g->n; i++) {
        cu_gnode *n = order[i];
        r = shape_add(x, n);
        if (r != CUDA_SUCCESS)
            break;
        const cu_graph *body = NULL;
        if (n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && r == CUDA_SUCCESS)
            r = conditional_body(n, &body);
        if (r != CUDA_SUCCESS)
            break;
        if (n->child || body)
            r = flatten(n->child ? n->child : body, x);
        else if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            r = exec_note_mem(&x->allocs, &x->nallocs, n->mem);
        else if (n->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
            r = exec_note_mem(&x->frees, &x->nfrees, n->mem);
        else if (n->body && arsim_graph_append_graph(x->g, n->body) != ARSIM_OK)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    free(order);
    return r;
}

void cusim_exec_free(cu_graph_exec *x)
{
    arsim_graph_destroy(x->g);
    for (size_t i = 0; i < x->nallocs; i++)
        cusim_gmem_unref(x->allocs[i]);
    for (size_t i = 0; i < x->nfrees; i++)
        cusim_gmem_unref(x->frees[i]);
    free(x->allocs);
    free(x->frees);
    cusim_urefs_release(x->urefs);
    free(x->shape);
    free(x);
}

/* ------------------------------------------------------------- entry points */

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    CUSIM_TRY(cusim_check_init());
    if (!phGraph || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = cusim_graph_new();
    pthread_mutex_unlock(&g_capture_mu);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = (CUgraph)(uintptr_t)g->handle;
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
    CUSIM_TRY(cusim_check_init());
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hGraph, HK_GRAPH);
    CUresult r = !g ? CUDA_ERROR_INVALID_HANDLE
                 : g->capturing || g->owned ? CUDA_ERROR_ILLEGAL_STATE
                                            : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        cusim_graph_free(g);
    pthread_mutex_unlock(&g_capture_mu);
    cusim_uobj_flush();
    return r;
}

CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    CUSIM_TRY(cusim_check_init());
    if (!phGraphClone)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)originalGraph, HK_GRAPH);
    cu_graph *c = NULL;
    CUresult r = !g                  ? CUDA_ERROR_INVALID_HANDLE
                 : holds_mem_nodes(g) ? CUDA_ERROR_NOT_SUPPORTED
                                      : cusim_graph_clone(g, &c);
    pthread_mutex_unlock(&g_capture_mu);
    if (r == CUDA_SUCCESS)
        *phGraphClone = (CUgraph)(uintptr_t)c->handle;
    return r;
}

/* Writes up to *num handles of list (n of them) to out, NULL past the end,
 * and the count to *num; with out NULL, only the count. */
static void put_nodes(cu_gnode *const *list, size_t n, CUgraphNode *out, size_t *num)
{
    if (out) {
        for (size_t i = 0; i < *num; i++)
            out[i] = i < n ? node_handle(list[i]) : NULL;
        if (n < *num)
            *num = n;
        return;
    }
    *num = n;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    CUSIM_TRY(cusim_check_init());
    if (!numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hGraph, HK_GRAPH);
    if (g)
        put_nodes(g->nodes, g->n, nodes, numNodes);
    pthread_mutex_unlock(&g_capture_mu);
    return g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes)
{
    CUSIM_TRY(cusim_check_init());
    if (!numRootNodes)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hGraph, HK_GRAPH);
    cu_gnode **roots = g ? malloc((g->n ? g->n : 1) * sizeof *roots) : NULL;
    size_t n = 0;
    for (size_t i = 0; roots && i < g->n; i++)
        if (g->nodes[i]->ndeps == 0)
            roots[n++] = g->nodes[i];
    if (roots)
        put_nodes(roots, n, rootNodes, numRootNodes);
    pthread_mutex_unlock(&g_capture_mu);
    free(roots);
    return !g ? CUDA_ERROR_INVALID_HANDLE : roots ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult get_edges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                          CUgraphEdgeData *edgeData, size_t *numEdges)
{
    CUSIM_TRY(cusim_check_init());
    if (!numEdges || (!from) != (!to) || (edgeData && !from))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hGraph, HK_GRAPH);
    if (!g) {
        pthread_mutex_unlock(&g_capture_mu);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++) {
        cu_gnode *n = g->nodes[i];
        for (size_t d = 0; d < n->ndeps; d++, k++) {
            if (!from || k >= *numEdges)
                continue;
            from[k] = node_handle(n->deps[d]);
            to[k] = node_handle(n);
            if (edgeData)
                memset(&edgeData[k], 0, sizeof edgeData[k]); /* default edges only */
        }
    }
    for (size_t i = k; from && i < *numEdges; i++) {
        from[i] = to[i] = NULL;
        if (edgeData)
            memset(&edgeData[i], 0, sizeof edgeData[i]);
    }
    if (!from || k < *numEdges)
        *numEdges = k;
    pthread_mutex_unlock(&g_capture_mu);
    return CUDA_SUCCESS;
}

CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges)
{
    return get_edges(hGraph, from, to, NULL, numEdges);
}

CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                            CUgraphEdgeData *edgeData, size_t *numEdges)
{
    return get_edges(hGraph, from, to, edgeData, numEdges);
}

/* The dependencies of a node (dependents 0) or the nodes that depend on it. */
static CUresult node_neighbours(CUgraphNode hNode, int dependents, CUgraphNode *out,
                                CUgraphEdgeData *edgeData, size_t *num)
{
    CUSIM_TRY(cusim_check_init());
    if (!num)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_gnode *n = node_get(hNode);
    cu_gnode **list = NULL;
    size_t k = 0, cap = 0;
    CUresult r = n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    if (n && !dependents) {
        for (size_t i = 0; r == CUDA_SUCCESS && i < n->ndeps; i++)
            r = list_push(&list, &k, &cap, n->deps[i]);
    }
    for (size_t i = 0; n && dependents && r == CUDA_SUCCESS && i < n->graph->n; i++)
        if (list_has(n->graph->nodes[i]->deps, n->graph->nodes[i]->ndeps, n))
            r = list_push(&list, &k, &cap, n->graph->nodes[i]);
    if (r == CUDA_SUCCESS) {
        size_t want = *num;
        put_nodes(list, k, out, num);
        for (size_t i = 0; out && edgeData && i < want; i++)
            memset(&edgeData[i], 0, sizeof edgeData[i]);
    }
    pthread_mutex_unlock(&g_capture_mu);
    free(list);
    return r;
}

CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
                                    size_t *numDependencies)
{
    return node_neighbours(hNode, 0, dependencies, NULL, numDependencies);
}

CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies,
                                       CUgraphEdgeData *edgeData, size_t *numDependencies)
{
    return node_neighbours(hNode, 0, dependencies, edgeData, numDependencies);
}

CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes,
                                      size_t *numDependentNodes)
{
    return node_neighbours(hNode, 1, dependentNodes, NULL, numDependentNodes);
}

CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode *dependentNodes,
                                         CUgraphEdgeData *edgeData, size_t *numDependentNodes)
{
    return node_neighbours(hNode, 1, dependentNodes, edgeData, numDependentNodes);
}

/* Checks every edge first, so a bad one changes nothing. */
static CUresult edges_check(cu_graph *g, const CUgraphNode *from, const CUgraphNode *to,
                            const CUgraphEdgeData *edgeData, size_t n, int adding)
{
    for (size_t i = 0; i < n; i++) {
        cu_gnode *a = node_get(from[i]), *b = node_get(to[i]);
        if (!a || !b || a->graph != g || b->graph != g || a == b)
            return CUDA_ERROR_INVALID_VALUE;
        if (edgeData && (edgeData[i].type || edgeData[i].from_port || edgeData[i].to_port))
            return CUDA_ERROR_NOT_SUPPORTED; /* programmatic edges: not modelled */
        if (list_has(b->deps, b->ndeps, a) == adding)
            return CUDA_ERROR_INVALID_VALUE; /* adding one that exists, removing one that does not */
    }
    return CUDA_SUCCESS;
}

static CUresult change_edges(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                             const CUgraphEdgeData *edgeData, size_t n, int adding)
{
    CUSIM_TRY(cusim_check_init());
    if (n && (!from || !to))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hGraph, HK_GRAPH);
    CUresult r = !g                              ? CUDA_ERROR_INVALID_HANDLE
                 : !adding && holds_mem_nodes(g) ? CUDA_ERROR_INVALID_VALUE
                                                 : edges_check(g, from, to, edgeData, n, adding);
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        cu_gnode *a = node_get(from[i]), *b = node_get(to[i]);
        if (adding)
            r = list_push(&b->deps, &b->ndeps, &b->depcap, a);
        else
            list_remove(b->deps, &b->ndeps, a);
    }
    pthread_mutex_unlock(&g_capture_mu);
    return r;
}

CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                size_t numDependencies)
{
    return change_edges(hGraph, from, to, NULL, numDependencies, 1);
}

CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                   const CUgraphEdgeData *edgeData, size_t numDependencies)
{
    return change_edges(hGraph, from, to, edgeData, numDependencies, 1);
}

CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from,
                                   const CUgraphNode *to, size_t numDependencies)
{
    return change_edges(hGraph, from, to, NULL, numDependencies, 0);
}

CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                      const CUgraphNode *to, const CUgraphEdgeData *edgeData,
                                      size_t numDependencies)
{
    return change_edges(hGraph, from, to, edgeData, numDependencies, 0);
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    CUSIM_TRY(cusim_check_init());
    if (!type)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_gnode *n = node_get(hNode);
    if (n)
        *type = n->type;
    pthread_mutex_unlock(&g_capture_mu);
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuGraphDestroyNode(CUgraphNode hNode)
{
    CUSIM_TRY(cusim_check_init());
    pthread_mutex_lock(&g_capture_mu);
    cu_gnode *n = node_get(hNode);
    if (!n || holds_mem_nodes(n->graph)) {
        pthread_mutex_unlock(&g_capture_mu);
        return n ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    }
    cu_graph *g = n->graph;
    list_remove(g->nodes, &g->n, n);
    for (size_t i = 0; i < g->n; i++)
        list_remove(g->nodes[i]->deps, &g->nodes[i]->ndeps, n);
    if (g->capturing)
        list_remove(g->capturing->deps, &g->capturing->ndeps, n);
    node_free(n);
    pthread_mutex_unlock(&g_capture_mu);
    cusim_uobj_flush(); /* a child or body graph may have held user objects */
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags)
{
    CUSIM_TRY(cusim_check_init());
    if (!phGraphExec)
        return CUDA_ERROR_INVALID_VALUE;
    /* Upload and device launch change nothing here; auto-free-on-launch
     * frees what the last launch left allocated (cusim_gmem_launch). */
    cu_graph_exec *x = calloc(1, sizeof *x);
    if (!x || arsim_graph_create(&x->g) != ARSIM_OK) {
        free(x);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hGraph, HK_GRAPH);
    CUresult r = !g ? CUDA_ERROR_INVALID_HANDLE
                 : g->capturing ? CUDA_ERROR_ILLEGAL_STATE
                                : flatten(g, x);
    if (r == CUDA_SUCCESS)
        r = cusim_urefs_copy(g->urefs, &x->urefs);
    x->auto_free = (flags & 1) != 0; /* CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH */
    pthread_mutex_unlock(&g_capture_mu);
    if (r == CUDA_SUCCESS && !(x->handle = arsim_handle_new(HK_GRAPH_EXEC, x)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r != CUDA_SUCCESS) {
        cusim_exec_free(x);
        return r;
    }
    *phGraphExec = (CUgraphExec)(uintptr_t)x->handle;
    return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    CUSIM_TRY(cusim_check_init());
    cu_graph_exec *x = arsim_handle_remove((uint64_t)(uintptr_t)hGraphExec, HK_GRAPH_EXEC);
    if (!x)
        return CUDA_ERROR_INVALID_HANDLE;
    /* Launches already submitted run copies of the ops and hold their own
     * references to its memory and user objects: safe to free now. */
    cusim_exec_free(x);
    cusim_uobj_flush();
    return CUDA_SUCCESS;
}

CUresult cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode,
                                CUgraph hClonedGraph)
{
    CUSIM_TRY(cusim_check_init());
    if (!phNode)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hClonedGraph, HK_GRAPH);
    cu_gnode *found = NULL;
    for (size_t i = 0; g && !found && i < g->n; i++)
        if (g->nodes[i]->origin == (uint64_t)(uintptr_t)hOriginalNode)
            found = g->nodes[i];
    if (found)
        *phNode = node_handle(found);
    pthread_mutex_unlock(&g_capture_mu);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static const char *type_name(CUgraphNodeType t)
{
    static const char *const names[] = {"kernel", "memcpy", "memset", "host", "graph",
                                        "empty", "wait_event", "event_record", "ext_sem_signal",
                                        "ext_sem_wait", "mem_alloc", "mem_free"};
    return t < sizeof names / sizeof names[0] ? names[t] : "node";
}

static void dot_nodes(FILE *f, const cu_graph *g)
{
    for (size_t i = 0; i < g->n; i++) {
        const cu_gnode *n = g->nodes[i];
        fprintf(f, "  n%llu [label=\"%s %llu\"];\n", (unsigned long long)n->handle,
                type_name(n->type), (unsigned long long)n->handle);
        for (size_t d = 0; d < n->ndeps; d++)
            fprintf(f, "  n%llu -> n%llu;\n", (unsigned long long)n->deps[d]->handle,
                    (unsigned long long)n->handle);
        if (n->child)
            dot_nodes(f, n->child);
    }
}

/* The graph in Graphviz's DOT language: one vertex per node, named by type
 * (the flags choose detail CUDA adds; the sim writes the same for all). */
CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
{
    CUSIM_TRY(cusim_check_init());
    (void)flags;
    if (!path)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hGraph, HK_GRAPH);
    FILE *f = g ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "digraph cuda_sim_graph_%llu {\n", (unsigned long long)g->handle);
        dot_nodes(f, g);
        fputs("}\n", f);
    }
    pthread_mutex_unlock(&g_capture_mu);
    if (!g)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!f || fclose(f) != 0)
        return CUDA_ERROR_OPERATING_SYSTEM;
    return CUDA_SUCCESS;
}

/* Replaces an executable graph's work with hGraph's, when hGraph has the
 * shape it was made from (node types and edges, in layout order); a change
 * of shape, or graph memory on either side, fails and changes nothing. */
static CUresult exec_update(cu_graph_exec *x, const cu_graph *g, CUgraphExecUpdateResult *why)
{
    cu_graph_exec *y = calloc(1, sizeof *y);
    if (!y || arsim_graph_create(&y->g) != ARSIM_OK) {
        free(y);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult r = flatten(g, y);
    if (r == CUDA_SUCCESS && (x->nallocs || x->nfrees || y->nallocs || y->nfrees)) {
        *why = CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
        r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    } else if (r == CUDA_SUCCESS && strcmp(x->shape ? x->shape : "", y->shape ? y->shape : "")) {
        *why = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    if (r == CUDA_SUCCESS)
        r = cusim_urefs_copy(g->urefs, &y->urefs);
    if (r == CUDA_SUCCESS) {
        /* Launches in flight run copies: swapping the lists under them is safe. */
        arsim_graph *ops = x->g;
        cu_uref *urefs = x->urefs;
        x->g = y->g;
        x->urefs = y->urefs;
        y->g = ops;
        y->urefs = urefs;
    }
    cusim_exec_free(y);
    return r;
}

CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                              CUgraphExecUpdateResultInfo *resultInfo)
{
    CUSIM_TRY(cusim_check_init());
    if (!resultInfo)
        return CUDA_ERROR_INVALID_VALUE;
    memset(resultInfo, 0, sizeof *resultInfo);
    pthread_mutex_lock(&g_capture_mu);
    cu_graph_exec *x = arsim_handle_get((uint64_t)(uintptr_t)hGraphExec, HK_GRAPH_EXEC);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hGraph, HK_GRAPH);
    CUgraphExecUpdateResult why = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    CUresult r = !x || !g ? CUDA_ERROR_INVALID_VALUE
                 : g->capturing ? CUDA_ERROR_ILLEGAL_STATE
                                : exec_update(x, g, &why);
    pthread_mutex_unlock(&g_capture_mu);
    cusim_uobj_flush();
    resultInfo->result = why;
    return r;
}
