// The loader's own API (level_zero/loader/ze_loader.h).  Only the loader
// exports it; a directly loaded driver does not.

typedef struct _zel_version {
    int major;
    int minor;
    int patch;
} zel_version_t;

// ZEL_COMPONENT_STRING_SIZE = 64
typedef struct zel_component_version {
    char component_name[64];
    ze_api_version_t spec_version;
    zel_version_t component_lib_version;
} zel_component_version_t;

ze_result_t zelLoaderGetVersions(size_t* num_elems, zel_component_version_t* versions);
