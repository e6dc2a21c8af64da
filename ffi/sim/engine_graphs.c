/* Graphs: op lists recorded by a queue's capture (or built by hand) and
 * replayed onto a queue, each op cloned so the graph can run again. */
#include "engine_internal.h"

#include <stdlib.h>

struct arsim_graph {
    arsim_op **ops;
    size_t n, cap;
};

arsim_status arsim_graph_create(arsim_graph **out)
{
    if (!out)
        return ARSIM_ERR_INVALID_VALUE;
    *out = calloc(1, sizeof(arsim_graph));
    return *out ? ARSIM_OK : ARSIM_ERR_OUT_OF_MEMORY;
}

arsim_status arsim_graph_append(arsim_graph *g, arsim_op *op)
{
    if (!op)
        return ARSIM_ERR_OUT_OF_MEMORY;
    if (!g) {
        arsim_op_free(op);
        return ARSIM_ERR_INVALID_VALUE;
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        arsim_op **ops = realloc(g->ops, cap * sizeof *ops);
        if (!ops) {
            arsim_op_free(op);
            return ARSIM_ERR_OUT_OF_MEMORY;
        }
        g->ops = ops;
        g->cap = cap;
    }
    g->ops[g->n++] = op;
    return ARSIM_OK;
}

size_t arsim_graph_size(const arsim_graph *g) { return g ? g->n : 0; }

void arsim_graph_destroy(arsim_graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++)
        arsim_op_free(g->ops[i]);
    free(g->ops);
    free(g);
}

arsim_status arsim_graph_clone(const arsim_graph *g, arsim_graph **out)
{
    if (!g || !out)
        return ARSIM_ERR_INVALID_VALUE;
    arsim_graph *c;
    arsim_status st = arsim_graph_create(&c);
    if (st != ARSIM_OK)
        return st;
    for (size_t i = 0; i < g->n; i++) {
        st = arsim_graph_append(c, eng_op_clone(g->ops[i]));
        if (st != ARSIM_OK) {
            arsim_graph_destroy(c);
            return st;
        }
    }
    *out = c;
    return ARSIM_OK;
}

arsim_status arsim_graph_append_graph(arsim_graph *dst, const arsim_graph *src)
{
    if (!dst || !src)
        return ARSIM_ERR_INVALID_VALUE;
    for (size_t i = 0; i < src->n; i++) {
        arsim_status st = arsim_graph_append(dst, eng_op_clone(src->ops[i]));
        if (st != ARSIM_OK)
            return st;
    }
    return ARSIM_OK;
}

arsim_op_kind arsim_graph_op_kind(const arsim_graph *g, size_t i)
{
    return g && i < g->n ? arsim_op_kind_of(g->ops[i]) : (arsim_op_kind)0;
}

arsim_op *arsim_graph_op_clone(const arsim_graph *g, size_t i)
{
    return g && i < g->n ? eng_op_clone(g->ops[i]) : NULL;
}

arsim_status arsim_queue_submit_graph(arsim_queue *q, const arsim_graph *g)
{
    if (!q || !g)
        return ARSIM_ERR_INVALID_VALUE;
    for (size_t i = 0; i < g->n; i++) {
        arsim_status st = arsim_queue_submit(q, eng_op_clone(g->ops[i]), NULL);
        if (st != ARSIM_OK)
            return st;
    }
    return ARSIM_OK;
}
