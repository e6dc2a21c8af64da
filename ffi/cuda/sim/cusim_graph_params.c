/* cuda-sim: cuGraphInstantiateWithParams, the instantiation cuda.core's
 * GraphBuilder.complete() calls.  It is cuGraphInstantiateWithFlags plus
 * an optional upload and a result code.  The sim keeps a graph exec ready to
 * launch, so an upload only checks its stream. */
#include "cusim.h"

enum {
    FLAG_UPLOAD = 2,      /* CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD */
    RESULT_SUCCESS = 0,   /* CUDA_GRAPH_INSTANTIATE_SUCCESS */
    RESULT_ERROR = 1,     /* CUDA_GRAPH_INSTANTIATE_ERROR: the reason is the return value */
};

CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    CUSIM_TRY(cusim_check_init());
    if (!instantiateParams)
        return CUDA_ERROR_INVALID_VALUE;
    instantiateParams->hErrNode_out = NULL;
    instantiateParams->result_out = RESULT_ERROR;
    if (instantiateParams->flags & FLAG_UPLOAD) {
        cu_stream *s;
        CUSIM_TRY(cusim_resolve_stream(instantiateParams->hUploadStream, &s));
    }
    CUresult r = cuGraphInstantiateWithFlags(phGraphExec, hGraph,
                                             instantiateParams->flags & ~(cuuint64_t)FLAG_UPLOAD);
    if (r == CUDA_SUCCESS)
        instantiateParams->result_out = RESULT_SUCCESS;
    return r;
}

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    int saved = cusim_tls_ptds; /* the upload stream 0 is the per-thread stream */
    cusim_tls_ptds = 1;
    CUresult r = cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams);
    cusim_tls_ptds = saved;
    return r;
}
