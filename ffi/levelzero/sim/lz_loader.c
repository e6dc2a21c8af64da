/* levelzero-sim as a self-contained Level Zero loader: libze_loader.so.1.
 *
 * SYCL's Unified Runtime carries the loader's static front end ("ze_lib"),
 * which dlopens libze_loader.so.1 and takes everything from it: the loader's
 * own entry points below, then every DDI table (z*Get*ProcAddrTable), then
 * zeInitDrivers.  This library answers as a loader whose one driver is the
 * sim: it is linked to libze_aruntime_sim.so (found next to its folder), so
 * the driver's ze* entry points and table getters resolve through it, and
 * the same sim serves every client of the process.
 *
 * The version it reports as component "loader" is the loader interface it
 * implements (1.18, of API 1.11: zeInitDrivers and the driver check with a
 * type descriptor), not Intel's loader; a second component names levelzero-sim.
 * There is no tracing layer and no sysman: those entry points say so. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "lz_api.h"
#include "lz_internal.h"

/* The loader's own types (ze_loader.h of the level-zero loader). */
typedef struct {
    int major;
    int minor;
    int patch;
} zel_version_t;

#define ZEL_COMPONENT_STRING_SIZE 64
typedef struct {
    char component_name[ZEL_COMPONENT_STRING_SIZE];
    ze_api_version_t spec_version;
    zel_version_t component_lib_version;
} zel_component_version_t;

/* zel_handle_type_t: ZEL_HANDLE_DRIVER (0) ... ZEL_HANDLE_PHYSICAL_MEM (13). */
#define ZEL_HANDLE_TYPE_LAST 13

/* The loader interface this library implements, and the API of its tables. */
#define LZ_LOADER_MAJOR 1
#define LZ_LOADER_MINOR 18
#define LZ_LOADER_SPEC ZE_MAKE_VERSION(1, 11)

static const zel_component_version_t k_components[] = {
    {"loader", LZ_LOADER_SPEC, {LZ_LOADER_MAJOR, LZ_LOADER_MINOR, 0}},
    {"levelzero-sim", ZE_API_VERSION_1_4, {1, 0, 0}},
};
#define N_COMPONENTS (sizeof k_components / sizeof k_components[0])

/* ------------------------------------------------------------ versions */

ZE_APIEXPORT ze_result_t zelLoaderGetVersionsInternal(size_t *num_elems,
                                                      zel_component_version_t *versions) {
    if (!num_elems) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!versions) {
        *num_elems = N_COMPONENTS;
        return ZE_RESULT_SUCCESS;
    }
    if (*num_elems < N_COMPONENTS) return ZE_RESULT_ERROR_INVALID_SIZE;
    memcpy(versions, k_components, sizeof k_components);
    *num_elems = N_COMPONENTS;
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zelLoaderGetVersions(size_t *num_elems, zel_component_version_t *versions) {
    return zelLoaderGetVersionsInternal(num_elems, versions);
}

ZE_APIEXPORT ze_result_t zelGetLoaderVersion(zel_component_version_t *version) {
    if (!version) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *version = k_components[0];
    return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------ start-up */

/* Nothing to find or load: the driver is linked in. */
ZE_APIEXPORT ze_result_t zeLoaderInit(void) { return ZE_RESULT_SUCCESS; }

/* The tracing layer's library: there is none. */
ZE_APIEXPORT void *zeLoaderGetTracingHandle(void) { return NULL; }

/* The front end's check of which drivers can start (loader 1.18's form, with
 * the type descriptor of zeInitDrivers).  One driver, never removed: the
 * front end's tables need no second fill. */
ZE_APIEXPORT ze_result_t zelLoaderDriverCheck(ze_init_flags_t flags, ze_init_driver_type_desc_t *desc,
                                              void *globalInitStored, void *sysmanGlobalInitStored,
                                              bool *requireDdiReinit, bool sysmanOnly) {
    if (!requireDdiReinit) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *requireDdiReinit = false;
    if (sysmanOnly) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE; /* no sysman */
    if (!desc) return zeInit(flags);
    uint32_t count = 0;
    return zeInitDrivers(&count, NULL, desc);
}

/* ------------------------------------------------------------ handles */

/* With no layer between the client and the driver, the client's handles are
 * the driver's: translation is the identity, after checking the type. */
ZE_APIEXPORT ze_result_t zelLoaderTranslateHandleInternal(int handleType, void *handleIn,
                                                          void **handleOut) {
    if (!handleOut) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (handleType < 0 || handleType > ZEL_HANDLE_TYPE_LAST) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    *handleOut = handleIn;
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zelLoaderTranslateHandle(int handleType, void *handleIn, void **handleOut) {
    return zelLoaderTranslateHandleInternal(handleType, handleIn, handleOut);
}

ZE_APIEXPORT bool zelCheckIsLoaderInTearDown(void) { return false; }

/* ------------------------------------------------------------ entry points */

/* The front end sets each slot of its dispatch tables to the loader's export
 * of that name (after taking the DDI tables), and calls a NULL slot: it
 * caches the pointer at the first call, answers UNSUPPORTED_FEATURE, then
 * jumps to NULL at the second.  So every Level Zero entry point has an
 * export here: the driver's own through libze_aruntime_sim.so, and for the
 * rest (lz_loader_unsupported.def) one that answers UNSUPPORTED_FEATURE.
 * Each returns ze_result_t and ignores its arguments, which the x86-64 and
 * AArch64 calling conventions allow. */
#define LZ_UNSUPPORTED(name) \
    ZE_APIEXPORT ze_result_t name(void) { return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE; }
#include "lz_loader_unsupported.def"
#undef LZ_UNSUPPORTED

/* ------------------------------------------------------------ DDI tables */

/* Tables the front end asks for beyond the driver's own getters: API the sim
 * has none of.  The table stays as the caller passed it (zeroed: "not
 * supported" by the loaders' convention). */
static ze_result_t empty_table(ze_api_version_t version, void *table) {
    if (!table) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (ZE_MAJOR_VERSION(version) != 1) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
    return ZE_RESULT_SUCCESS;
}

#define EMPTY_TABLE(name) \
    ZE_APIEXPORT ze_result_t name(ze_api_version_t version, void *table) { return empty_table(version, table); }

EMPTY_TABLE(zeGetCommandListExpProcAddrTable)
EMPTY_TABLE(zeGetDriverExpProcAddrTable)
EMPTY_TABLE(zeGetMemExpProcAddrTable)
EMPTY_TABLE(zeGetExecutableGraphProcAddrTable)
EMPTY_TABLE(zeGetGraphProcAddrTable)
EMPTY_TABLE(zeGetRTASBuilderExpProcAddrTable)
EMPTY_TABLE(zeGetRTASBuilderProcAddrTable)
EMPTY_TABLE(zeGetRTASParallelOperationExpProcAddrTable)
EMPTY_TABLE(zeGetRTASParallelOperationProcAddrTable)
EMPTY_TABLE(zerGetGlobalProcAddrTable)
EMPTY_TABLE(zesGetDeviceExpProcAddrTable)
EMPTY_TABLE(zesGetDriverExpProcAddrTable)
EMPTY_TABLE(zesGetFirmwareExpProcAddrTable)
EMPTY_TABLE(zesGetGlobalProcAddrTable)
EMPTY_TABLE(zesGetOverclockProcAddrTable)
EMPTY_TABLE(zesGetRasExpProcAddrTable)
EMPTY_TABLE(zesGetVFManagementExpProcAddrTable)
EMPTY_TABLE(zetGetCommandListExpProcAddrTable)
EMPTY_TABLE(zetGetDeviceExpProcAddrTable)
EMPTY_TABLE(zetGetMetricDecoderExpProcAddrTable)
EMPTY_TABLE(zetGetMetricExpProcAddrTable)
EMPTY_TABLE(zetGetMetricProgrammableExpProcAddrTable)
EMPTY_TABLE(zetGetMetricTracerExpProcAddrTable)
EMPTY_TABLE(zelGetTracerApiProcAddrTable)
