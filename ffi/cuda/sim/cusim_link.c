/* cuda-sim: the driver's JIT linker (cuLinkCreate, cuLinkAddData,
 * cuLinkAddFile, cuLinkComplete, cuLinkDestroy), the path numba-cuda takes
 * without nvJitLink and cuda.core's Linker takes with the driver backend.
 *
 * Inputs are PTX, fatbins holding PTX (cusim_fatbin.c), host objects with
 * such fatbins, and this driver's own linked images.  The executor loads one PTX module at a time and resolves
 * calls by name across the whole module, so linking joins the inputs' texts
 * into one module: an .extern .func in one input calls its definition in
 * another.  Names are resolved first as a linker resolves them by their
 * linkage (cusim_ptxsyms.c): each input keeps its own internal names, and
 * one definition of a .weak or .common name is kept.  What the executor
 * refuses is reported with the error naming the input and its line.
 *
 * The output, like a real driver's cubin for its own GPU, is an image only
 * this driver loads: a tagged header and the joined PTX text.  Host objects,
 * and libraries of them, link through the fatbins nvcc put in them.  Machine code for a real GPU
 * (cubins, fatbins with only SASS) is refused with CUDA_ERROR_NO_BINARY_FOR_GPU. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cusim.h"
#include "../../sim/ptx/ptx.h"

/* cuda.h's CUjit_option and CUjitInputType values this file reads. */
enum {
    JIT_THREADS_PER_BLOCK = 1,
    JIT_WALL_TIME = 2,
    JIT_INFO_LOG_BUFFER = 3,
    JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    JIT_ERROR_LOG_BUFFER = 5,
    JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    JIT_TARGET_FROM_CUCONTEXT = 8,
    JIT_TARGET = 9,
    JIT_LOG_VERBOSE = 12,
    JIT_NUM_OPTIONS = 35,
};
enum { IN_CUBIN, IN_PTX, IN_FATBINARY, IN_OBJECT, IN_LIBRARY, IN_NVVM, IN_NUM_TYPES };
enum { CUSIM_UNSUPPORTED_PTX_VERSION = 222 };

/* The linked image: this header, then the joined PTX text and a NUL.  The
 * first byte is not ASCII, so no loader mistakes it for PTX text. */
typedef struct link_image_header {
    char magic[8];
    uint32_t version;
    uint32_t ninputs;
    uint64_t text_size;
} link_image_header;
static const char IMAGE_MAGIC[8] = {'\xc5', 'c', 'u', 's', 'i', 'm', 'L', 'K'};
enum { IMAGE_VERSION = 1 };

typedef struct link_image {
    struct link_image *next;
    size_t size;
    unsigned char data[];
} link_image;

/* A caller's log buffer: messages accumulate for the life of the state, and
 * the bytes used go back in the option's value slot (slot -1: none). */
typedef struct link_log {
    char *buf;
    size_t size;
    size_t used;
    int slot;
} link_log;

typedef struct link_input {
    char *name;
    char *text;
    size_t len;
    cusim_ptx_syms syms;
} link_input;

typedef struct cu_link {
    uint64_t handle;
    int device_sm;
    void **values; /* the caller's option values, for the output options */
    int wall_slot;
    int verbose;
    double wall_ms;
    link_log info, err;
    link_input *in;
    size_t n, cap;
    link_image *images; /* every image made, alive until cuLinkDestroy */
    size_t n_linked;    /* inputs in images, the newest */
} cu_link;

static cu_link *link_get(CUlinkState h)
{
    return arsim_handle_get((uint64_t)(uintptr_t)h, HK_LINK);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Appends one message, separated from the previous by a newline. */
__attribute__((format(printf, 2, 3))) static void log_add(link_log *l, const char *fmt, ...)
{
    if (!l->buf || l->size < 2 || l->used + 1 >= l->size)
        return;
    if (l->used) {
        l->buf[l->used++] = '\n';
        l->buf[l->used] = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->buf + l->used, l->size - l->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        l->used += (size_t)n < l->size - l->used ? (size_t)n : l->size - l->used - 1;
}

/* Writes the output options back, as cuda.h documents for the log sizes and
 * CU_JIT_WALL_TIME (a float stored in the value slot). */
static void publish(cu_link *lk)
{
    if (lk->info.slot >= 0)
        lk->values[lk->info.slot] = (void *)(uintptr_t)lk->info.used;
    if (lk->err.slot >= 0)
        lk->values[lk->err.slot] = (void *)(uintptr_t)lk->err.used;
    if (lk->wall_slot >= 0) {
        float ms = (float)lk->wall_ms;
        void *v = NULL;
        memcpy(&v, &ms, sizeof ms);
        lk->values[lk->wall_slot] = v;
    }
}

/* Every option must be one cuda.h defines; an input's options must be
 * compiler options only, as cuLinkAddData documents. */
static CUresult check_options(unsigned n, const CUjit_option *opts, void **values, int for_input)
{
    if (n && (!opts || !values))
        return CUDA_ERROR_INVALID_VALUE;
    int threads = 0, target = 0;
    for (unsigned i = 0; i < n; i++) {
        CUjit_option o = opts[i];
        if (o >= (CUjit_option)JIT_NUM_OPTIONS) /* unsigned: a negative int is past it too */
            return CUDA_ERROR_INVALID_VALUE;
        if (for_input && (o == JIT_WALL_TIME || o == JIT_INFO_LOG_BUFFER ||
                          o == JIT_ERROR_LOG_BUFFER || o == JIT_TARGET_FROM_CUCONTEXT ||
                          o == JIT_TARGET))
            return CUDA_ERROR_INVALID_VALUE;
        threads |= o == JIT_THREADS_PER_BLOCK;
        target |= o == JIT_TARGET;
    }
    /* cuda.h: CU_JIT_THREADS_PER_BLOCK "cannot be combined with CU_JIT_TARGET". */
    return threads && target ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* Reads the options cuLinkCreate keeps.  The rest tune code generation or
 * name symbols to relocate, which an interpreter of joined PTX has no use
 * for (an unresolved external variable is refused at load). */
static void read_options(cu_link *lk, unsigned n, const CUjit_option *opts, void **values)
{
    lk->info.slot = lk->err.slot = lk->wall_slot = -1;
    lk->values = values;
    for (unsigned i = 0; i < n; i++) {
        switch (opts[i]) {
        case JIT_INFO_LOG_BUFFER: lk->info.buf = values[i]; break;
        case JIT_ERROR_LOG_BUFFER: lk->err.buf = values[i]; break;
        case JIT_INFO_LOG_BUFFER_SIZE_BYTES:
            lk->info.size = (unsigned)(uintptr_t)values[i];
            lk->info.slot = (int)i;
            break;
        case JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
            lk->err.size = (unsigned)(uintptr_t)values[i];
            lk->err.slot = (int)i;
            break;
        case JIT_LOG_VERBOSE: lk->verbose = (int)(intptr_t)values[i] != 0; break;
        case JIT_WALL_TIME: lk->wall_slot = (int)i; break;
        default: break;
        }
    }
    if (lk->info.buf && lk->info.size)
        lk->info.buf[0] = 0;
    if (lk->err.buf && lk->err.size)
        lk->err.buf[0] = 0;
}

CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options, void **optionValues,
                         CUlinkState *stateOut)
{
    cu_ctx *c;
    CUresult r = cusim_current_ctx(&c); /* the target is the current context's device */
    if (r != CUDA_SUCCESS)
        return r;
    if (!stateOut)
        return CUDA_ERROR_INVALID_VALUE;
    CUSIM_TRY(check_options(numOptions, options, optionValues, 0));
    int major = 0, minor = 0;
    cuDeviceGetAttribute(&major, 75, c->device); /* COMPUTE_CAPABILITY_MAJOR */
    cuDeviceGetAttribute(&minor, 76, c->device);
    cu_link *lk = calloc(1, sizeof *lk);
    if (!lk)
        return CUDA_ERROR_OUT_OF_MEMORY;
    lk->device_sm = major * 10 + minor;
    read_options(lk, numOptions, options, optionValues);
    lk->handle = arsim_handle_new(HK_LINK, lk);
    if (!lk->handle) {
        free(lk);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *stateOut = (CUlinkState)(uintptr_t)lk->handle;
    return CUDA_SUCCESS;
}

CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
                      CUlinkState *stateOut)
{
    return cuLinkCreate_v2(numOptions, options, optionValues, stateOut);
}

static CUresult ptx_result(ptx_status st)
{
    switch (st) {
    case PTX_OK: return CUDA_SUCCESS;
    case PTX_ERR_VERSION: return CUSIM_UNSUPPORTED_PTX_VERSION;
    case PTX_ERR_OUT_OF_MEMORY: return CUDA_ERROR_OUT_OF_MEMORY;
    default: return CUDA_ERROR_INVALID_PTX;
    }
}

/* Loads one input alone, as the driver compiles each PTX input when it is
 * added.  An input that calls functions of other inputs cannot load alone:
 * its errors wait for cuLinkComplete, which loads the joined module. */
static CUresult check_alone(cu_link *lk, const char *text, const cusim_ptx_syms *syms,
                            const char *name)
{
    char msg[512];
    arsim_module *m = NULL;
    ptx_status st = ptx_module_load(text, &m, msg, sizeof msg);
    if (st == PTX_OK) {
        arsim_module_unload(m);
        return CUDA_SUCCESS;
    }
    if (st == PTX_ERR_INVALID && syms->has_extern_func)
        return CUDA_SUCCESS;
    log_add(&lk->err, "%s: %s", name, msg);
    return ptx_result(st);
}

static CUresult add_ptx(cu_link *lk, const char *data, size_t size, const char *name)
{
    size_t len = strnlen(data, size); /* PTX ends at its NUL, if size counts one */
    char *text = malloc(len + 1);
    if (!text)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(text, data, len);
    text[len] = 0;
    if (!ptx_looks_like(text)) {
        log_add(&lk->err, "%s: not PTX text (no .version directive)", name);
        free(text);
        return CUDA_ERROR_INVALID_PTX;
    }
    link_input in = {.text = text, .len = len, .name = strdup(name)};
    CUresult r = in.name ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && cusim_ptx_scan_syms(text, &in.syms) != 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        r = check_alone(lk, text, &in.syms, name);
    if (r == CUDA_SUCCESS && lk->n == lk->cap) {
        size_t cap = lk->cap ? lk->cap * 2 : 4;
        link_input *grown = realloc(lk->in, cap * sizeof *grown);
        if (grown) {
            lk->in = grown;
            lk->cap = cap;
        } else {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (r != CUDA_SUCCESS) {
        cusim_ptx_syms_free(&in.syms);
        free(in.name);
        free(text);
        return r;
    }
    lk->in[lk->n++] = in;
    if (lk->verbose)
        log_add(&lk->info, "cuda-sim linker: added PTX '%s' (%zu bytes)", name, len);
    return CUDA_SUCCESS;
}

static CUresult add_fatbin(cu_link *lk, const void *data, size_t size, const char *name)
{
    char why[256], *ptx = NULL;
    CUresult r = cusim_fatbin_ptx(data, size, lk->device_sm, &ptx, why, sizeof why);
    if (r != CUDA_SUCCESS) {
        log_add(&lk->err, "%s: fatbin refused: %s", name, why);
        return r;
    }
    r = add_ptx(lk, ptx, strlen(ptx), name);
    free(ptx);
    return r;
}

/* A host object's device code: each fatbin in its fatbin section. */
static CUresult add_object(cu_link *lk, const void *data, size_t size, const char *name)
{
    size_t off, len;
    int found = cusim_object_fatbins(data, size, &off, &len);
    if (found != 0) {
        log_add(&lk->err, found < 0 ? "%s: not a host object (ELF64)"
                                    : "%s: the object holds no device code (.nv_fatbin)", name);
        return found < 0 ? CUDA_ERROR_INVALID_IMAGE : CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    const unsigned char *p = (const unsigned char *)data + off, *end = p + len;
    int added = 0;
    while (p < end) {
        size_t n = cusim_fatbin_size(p, (size_t)(end - p));
        if (n == 0) {
            p++; /* alignment padding between fatbins */
            continue;
        }
        CUSIM_TRY(add_fatbin(lk, p, n, name));
        added++;
        p += n;
    }
    if (!added) {
        log_add(&lk->err, "%s: the object's fatbin section holds no fatbin", name);
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    return CUDA_SUCCESS;
}

/* A static library (ar archive): every member object that holds device
 * code is linked, as the driver links a library's relocatable code. */
static CUresult add_library(cu_link *lk, const void *data, size_t size, const char *name)
{
    const char *b = data;
    if (size < 8 || memcmp(b, "!<arch>\n", 8) != 0) {
        log_add(&lk->err, "%s: not a library (ar archive)", name);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    int added = 0;
    for (size_t at = 8; at + 60 <= size;) {
        char field[11] = {0};
        memcpy(field, b + at + 48, 10); /* the member's size, decimal */
        char *end;
        unsigned long long n = strtoull(field, &end, 10);
        if (end == field || n > size - at - 60) {
            log_add(&lk->err, "%s: a library member runs past the end of the archive", name);
            return CUDA_ERROR_INVALID_IMAGE;
        }
        const char *member = b + at + 60;
        size_t off, len;
        if (cusim_object_fatbins(member, (size_t)n, &off, &len) == 0) {
            CUSIM_TRY(add_object(lk, member, (size_t)n, name));
            added++;
        }
        at += 60 + (size_t)n + (n & 1); /* members are 2-byte aligned */
    }
    if (!added) {
        log_add(&lk->err, "%s: no member of the library holds device code", name);
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    return CUDA_SUCCESS;
}

static CUresult add_input(cu_link *lk, CUjitInputType type, const void *data, size_t size,
                          const char *name)
{
    switch (type) {
    case IN_PTX: return add_ptx(lk, data, size, name);
    case IN_FATBINARY: return add_fatbin(lk, data, size, name);
    case IN_CUBIN:
        /* This driver's own image is its cubin: it links again. */
        if (size > sizeof(link_image_header) && cusim_link_image_ptx(data))
            return add_ptx(lk, cusim_link_image_ptx(data),
                           size - sizeof(link_image_header), name);
        log_add(&lk->err, "%s: a cubin (machine code for a GPU) cannot run here; cuda-sim "
                          "links PTX and fatbins that hold PTX", name);
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    case IN_OBJECT: return add_object(lk, data, size, name);
    case IN_LIBRARY: return add_library(lk, data, size, name);
    case IN_NVVM:
        log_add(&lk->err, "%s: NVVM IR (LTO) needs a compiler cuda-sim does not have; link "
                          "PTX instead", name);
        return CUDA_ERROR_NOT_SUPPORTED;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

static void default_name(const cu_link *lk, const char *name, char *buf, size_t size)
{
    if (name && *name)
        snprintf(buf, size, "%s", name);
    else
        snprintf(buf, size, "input %zu", lk->n + 1);
}

CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
                          const char *name, unsigned int numOptions, CUjit_option *options,
                          void **optionValues)
{
    CUSIM_TRY(cusim_check_init());
    cu_link *lk = link_get(state);
    if (!lk)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!data || size == 0 || type < 0 || type >= IN_NUM_TYPES)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_options(numOptions, options, optionValues, 1);
    if (r != CUDA_SUCCESS)
        return r;
    char label[256];
    default_name(lk, name, label, sizeof label);
    double t0 = now_ms();
    r = add_input(lk, type, data, size, label);
    lk->wall_ms += now_ms() - t0;
    publish(lk);
    return r;
}

CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
                       const char *name, unsigned int numOptions, CUjit_option *options,
                       void **optionValues)
{
    return cuLinkAddData_v2(state, type, data, size, name, numOptions, options, optionValues);
}

/* The whole file, with a NUL after it so PTX is a C string. */
static CUresult read_whole(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return CUDA_ERROR_FILE_NOT_FOUND;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *buf = n >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)n + 1) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf)
        return n < 0 ? CUDA_ERROR_FILE_NOT_FOUND : CUDA_ERROR_OUT_OF_MEMORY;
    if (got != (size_t)n) {
        free(buf);
        return CUDA_ERROR_FILE_NOT_FOUND;
    }
    buf[got] = 0;
    *out = buf;
    *len = got;
    return CUDA_SUCCESS;
}

CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
                          unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    CUSIM_TRY(cusim_check_init());
    cu_link *lk = link_get(state);
    if (!lk)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!path || type < 0 || type >= IN_NUM_TYPES)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_options(numOptions, options, optionValues, 1);
    if (r != CUDA_SUCCESS)
        return r;
    char *data;
    size_t len;
    r = read_whole(path, &data, &len);
    if (r == CUDA_ERROR_FILE_NOT_FOUND)
        log_add(&lk->err, "%s: cannot read the file", path);
    if (r == CUDA_SUCCESS && len == 0) {
        free(data);
        log_add(&lk->err, "%s: the file is empty", path);
        r = type == IN_PTX ? CUDA_ERROR_INVALID_PTX : CUDA_ERROR_INVALID_IMAGE;
    } else if (r == CUDA_SUCCESS) {
        double t0 = now_ms();
        r = add_input(lk, type, data, len, path);
        lk->wall_ms += now_ms() - t0;
        free(data);
    }
    publish(lk);
    return r;
}

CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
                       unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    return cuLinkAddFile_v2(state, type, path, numOptions, options, optionValues);
}

/* The inputs' texts, their names resolved as a linker resolves them
 * (cusim_ptxsyms.c), one after another, and the line each starts at (the
 * resolution keeps every line where it was).  NULL with *r set on failure. */
static char *join_inputs(cu_link *lk, int *first_line, CUresult *r)
{
    char **texts = calloc(lk->n, sizeof *texts);
    const char **names = calloc(lk->n, sizeof *names);
    cusim_ptx_syms *syms = calloc(lk->n, sizeof *syms);
    char *text = NULL, why[512];
    int rc = texts && names && syms ? 0 : -2;
    for (size_t i = 0; i < lk->n && !rc; i++) {
        texts[i] = strdup(lk->in[i].text);
        names[i] = lk->in[i].name;
        syms[i] = lk->in[i].syms;
        rc = texts[i] ? 0 : -2;
    }
    if (!rc)
        rc = cusim_ptx_resolve(texts, syms, names, lk->n, why, sizeof why);
    size_t total = 1;
    for (size_t i = 0; i < lk->n && !rc; i++)
        total += strlen(texts[i]) + 1;
    if (!rc && !(text = malloc(total)))
        rc = -2;
    char *p = text;
    int line = 1;
    for (size_t i = 0; i < lk->n && !rc; i++) {
        size_t len = strlen(texts[i]);
        first_line[i] = line;
        memcpy(p, texts[i], len);
        p += len;
        *p++ = '\n';
        for (size_t k = 0; k < len; k++)
            line += texts[i][k] == '\n';
        line++;
    }
    if (p)
        *p = 0;
    if (rc == -1 || rc == -3)
        log_add(&lk->err, "cuda-sim linker: %s", why);
    *r = rc == 0 ? CUDA_SUCCESS : rc == -1 ? CUDA_ERROR_INVALID_IMAGE
         : rc == -3 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; texts && i < lk->n; i++)
        free(texts[i]);
    free(texts);
    free(names);
    free(syms); /* the scans themselves stay with their inputs */
    return text;
}

/* The executor names a line of the joined text; the log names the input.
 * A call no input defines is what the driver's linker calls an undefined
 * reference, and is said in its words. */
static void log_joined_error(cu_link *lk, const char *msg, const int *first_line)
{
    static const char external[] = "call of external function '";
    int line;
    int at = 0;
    if (sscanf(msg, "ptx line %d: %n", &line, &at) == 1 && at > 0 && line >= 1) {
        size_t i = lk->n - 1;
        while (i > 0 && first_line[i] > line)
            i--;
        const char *what = msg + at;
        int undefined = strncmp(what, external, sizeof external - 1) == 0;
        const char *name = undefined ? what + sizeof external - 1 : NULL;
        const char *end = name ? strchr(name, '\'') : NULL;
        if (end)
            log_add(&lk->err, "error   : Undefined reference to '%.*s' in '%s'",
                    (int)(end - name), name, lk->in[i].name);
        else
            log_add(&lk->err, "%s: ptx line %d: %s", lk->in[i].name, line - first_line[i] + 1,
                    what);
    } else {
        log_add(&lk->err, "cuda-sim linker: %s", msg);
    }
}

static CUresult make_image(cu_link *lk, const char *text)
{
    size_t len = strlen(text);
    link_image *img = malloc(sizeof *img + sizeof(link_image_header) + len + 1);
    if (!img)
        return CUDA_ERROR_OUT_OF_MEMORY;
    link_image_header h = {.version = IMAGE_VERSION, .ninputs = (uint32_t)lk->n, .text_size = len};
    memcpy(h.magic, IMAGE_MAGIC, sizeof h.magic);
    memcpy(img->data, &h, sizeof h);
    memcpy(img->data + sizeof h, text, len + 1);
    img->size = sizeof h + len + 1;
    img->next = lk->images;
    lk->images = img;
    lk->n_linked = lk->n;
    return CUDA_SUCCESS;
}

static CUresult link_inputs(cu_link *lk)
{
    int *first_line = malloc(lk->n * sizeof *first_line);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    char *text = first_line ? join_inputs(lk, first_line, &r) : NULL;
    if (r == CUDA_SUCCESS) {
        char msg[512];
        arsim_module *m = NULL;
        ptx_status st = ptx_module_load(text, &m, msg, sizeof msg);
        if (st == PTX_OK)
            arsim_module_unload(m);
        else
            log_joined_error(lk, msg, first_line);
        r = ptx_result(st);
    }
    if (r == CUDA_SUCCESS)
        r = make_image(lk, text);
    if (r == CUDA_SUCCESS)
        log_add(&lk->info, "cuda-sim linker: linked %zu input%s into one module (%zu bytes of PTX)",
                lk->n, lk->n == 1 ? "" : "s", strlen(text));
    free(text);
    free(first_line);
    return r;
}

CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    CUSIM_TRY(cusim_check_init());
    cu_link *lk = link_get(state);
    if (!lk)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!cubinOut)
        return CUDA_ERROR_INVALID_VALUE;
    if (lk->n == 0) {
        log_add(&lk->err, "cuda-sim linker: nothing to link (no input was added)");
        publish(lk);
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Inputs added since the last image make a new one; older images stay
     * valid until cuLinkDestroy, as the state owns them. */
    if (!lk->images || lk->n_linked != lk->n) {
        double t0 = now_ms();
        CUresult r = link_inputs(lk);
        lk->wall_ms += now_ms() - t0;
        publish(lk);
        if (r != CUDA_SUCCESS)
            return r;
    }
    *cubinOut = lk->images->data;
    if (sizeOut)
        *sizeOut = lk->images->size;
    return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState state)
{
    CUSIM_TRY(cusim_check_init());
    cu_link *lk = arsim_handle_remove((uint64_t)(uintptr_t)state, HK_LINK);
    if (!lk)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < lk->n; i++) {
        cusim_ptx_syms_free(&lk->in[i].syms);
        free(lk->in[i].name);
        free(lk->in[i].text);
    }
    free(lk->in);
    for (link_image *img = lk->images; img;) {
        link_image *next = img->next;
        free(img);
        img = next;
    }
    free(lk);
    return CUDA_SUCCESS;
}

const char *cusim_link_image_ptx(const void *image)
{
    link_image_header h;
    const char *b = image;
    for (size_t i = 0; i < sizeof IMAGE_MAGIC; i++) /* stops at a short image's NUL */
        if (b[i] != IMAGE_MAGIC[i])
            return NULL;
    memcpy(&h, image, sizeof h);
    const char *text = (const char *)image + sizeof h;
    if (h.version != IMAGE_VERSION || text[h.text_size] != 0)
        return NULL;
    return text;
}
