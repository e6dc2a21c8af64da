/* cuda-sim: cuGetExportTable, the driver's private-interface lookup.
 *
 * NVIDIA's own libraries ask the driver for undocumented function tables by
 * UUID.  libnvrtc (13.x) dlopens libcuda.so.1, calls cuInit(0), then
 * cuGetExportTable with one UUID (da9151d3-3ae6-cc41-a5c0-4f26d533e328);
 * nothing else.  A driver without the symbol made it call through NULL.
 * The sim has no private tables: every request gets CUDA_ERROR_NOT_SUPPORTED
 * with *ppExportTable cleared, which libnvrtc takes as "no such interface"
 * and compiles without it (it accepts INVALID_VALUE and NOT_FOUND as well;
 * NOT_SUPPORTED says best that the sim lacks the interface, not the caller
 * erred). */
#include "cusim.h"

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    if (!ppExportTable || !pExportTableId)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}
