/* cuda-sim: the PTX inside a fatbin, for the linker (cusim_link.c).
 *
 * A fatbin is a header followed by entries, each an entry header and a
 * payload: PTX text for a virtual architecture (compute_XX), or an ELF cubin
 * for a real GPU (sm_XX).  Only the PTX can run here.  nvcc 13 compresses
 * payloads with zstd by default; libzstd.so.1 is loaded on first need, so the
 * driver does not depend on it otherwise.
 *
 * The layout read here (all little-endian):
 *   file header:  u32 magic 0xBA55ED50, u16 version, u16 header size,
 *                 u64 size of the entries that follow
 *   entry header: +0 u16 kind (1 PTX, 2 ELF), +4 u32 header size,
 *                 +8 u64 payload size, +0x10 u32 compressed size,
 *                 +0x1c u32 architecture (80 for compute_80/sm_80),
 *                 +0x28 u64 flags, +0x38 u64 uncompressed size
 * and the payload follows the entry header. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

enum {
    FATBIN_MAGIC = 0xBA55ED50u,
    ENTRY_PTX = 1,
    ENTRY_ELF = 2,
    ENTRY_MIN_HEADER = 0x40,
    FLAG_COMPRESSED_LEGACY = 0x2000, /* CUDA 11/12's own LZ scheme */
    FLAG_COMPRESSED_ZSTD = 0x8000,
};

static uint64_t rd(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

typedef size_t (*zstd_decompress_fn)(void *, size_t, const void *, size_t);
typedef unsigned (*zstd_is_error_fn)(size_t);

/* Decompresses a zstd payload into a NUL-terminated buffer. */
static CUresult unzstd(const unsigned char *src, size_t n, size_t out_size, char **out,
                       char *why, size_t why_size)
{
    static void *lib; /* kept for the process: the driver is never unloaded */
    if (!__atomic_load_n(&lib, __ATOMIC_ACQUIRE)) {
        void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(why, why_size, "its PTX is zstd-compressed and libzstd.so.1 is not installed "
                                    "(install it, or build the fatbin with nvcc -no-compress)");
            return CUDA_ERROR_NOT_SUPPORTED;
        }
        void *expected = NULL;
        if (!__atomic_compare_exchange_n(&lib, &expected, h, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            dlclose(h);
    }
    zstd_decompress_fn dec = (zstd_decompress_fn)dlsym(lib, "ZSTD_decompress");
    zstd_is_error_fn is_error = (zstd_is_error_fn)dlsym(lib, "ZSTD_isError");
    if (!dec || !is_error) {
        snprintf(why, why_size, "libzstd.so.1 lacks ZSTD_decompress");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    char *buf = malloc(out_size + 1);
    if (!buf)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t got = dec(buf, out_size, src, n);
    if (is_error(got) || got != out_size) {
        free(buf);
        snprintf(why, why_size, "its compressed PTX is corrupt");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    buf[got] = 0;
    *out = buf;
    return CUDA_SUCCESS;
}

/* The entry's payload as NUL-terminated text (PTX ends at its first NUL). */
static CUresult entry_text(const unsigned char *e, size_t avail, char **out, char *why,
                           size_t why_size)
{
    size_t hsize = (size_t)rd(e + 4, 4);
    uint64_t payload = rd(e + 8, 8), compressed = rd(e + 0x10, 4);
    uint64_t flags = rd(e + 0x28, 8), plain = rd(e + 0x38, 8);
    if (payload > avail - hsize || compressed > payload) {
        snprintf(why, why_size, "an entry runs past the end of the fatbin");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    const unsigned char *p = e + hsize;
    if (flags & FLAG_COMPRESSED_LEGACY) {
        snprintf(why, why_size, "its PTX is compressed with the pre-CUDA-13 scheme, which cuda-sim "
                                "cannot read (build the fatbin with nvcc -no-compress)");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (flags & FLAG_COMPRESSED_ZSTD) {
        if (compressed < 4 || rd(p, 4) != 0xFD2FB528u || plain == 0 || plain > (1u << 30)) {
            snprintf(why, why_size, "an entry is marked compressed in an unknown format");
            return CUDA_ERROR_NOT_SUPPORTED;
        }
        return unzstd(p, (size_t)compressed, (size_t)plain, out, why, why_size);
    }
    char *buf = malloc((size_t)payload + 1);
    if (!buf)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(buf, p, (size_t)payload);
    buf[payload] = 0;
    *out = buf;
    return CUDA_SUCCESS;
}

CUresult cusim_fatbin_ptx(const void *data, size_t size, int device_sm, char **ptx_out, char *why,
                          size_t why_size)
{
    const unsigned char *b = data;
    why[0] = 0;
    if (size < 16 || rd(b, 4) != FATBIN_MAGIC) {
        snprintf(why, why_size, "not a fatbin");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    size_t hsize = (size_t)rd(b + 6, 2);
    uint64_t body = rd(b + 8, 8);
    if (hsize < 16 || hsize > size || body > size - hsize) {
        snprintf(why, why_size, "the fatbin header gives a size past its end");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    const unsigned char *best = NULL, *end = b + hsize + body;
    int best_arch = -1, n_ptx = 0, n_elf = 0, newest_ptx = 0, elf_arch = 0;
    for (const unsigned char *e = b + hsize; e < end;) {
        size_t avail = (size_t)(end - e);
        size_t eh = avail >= ENTRY_MIN_HEADER ? (size_t)rd(e + 4, 4) : 0;
        if (eh < ENTRY_MIN_HEADER || eh > avail || rd(e + 8, 8) > avail - eh) {
            snprintf(why, why_size, "a fatbin entry runs past the end of the fatbin");
            return CUDA_ERROR_INVALID_IMAGE;
        }
        int kind = (int)rd(e, 2), arch = (int)rd(e + 0x1c, 4);
        if (kind == ENTRY_PTX) {
            n_ptx++;
            newest_ptx = arch > newest_ptx ? arch : newest_ptx;
            /* As the driver: the newest PTX the device can run. */
            if (arch <= device_sm && arch > best_arch) {
                best = e;
                best_arch = arch;
            }
        } else if (kind == ENTRY_ELF) {
            n_elf++;
            elf_arch = arch;
        }
        e += eh + (size_t)rd(e + 8, 8);
    }
    if (!best && n_ptx) {
        snprintf(why, why_size, "its PTX is for compute_%d, newer than this device (sm_%d)",
                 newest_ptx, device_sm);
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    if (!best) {
        if (n_elf)
            snprintf(why, why_size, "it holds only GPU machine code (a cubin for sm_%d), which "
                                    "cannot run here; cuda-sim runs PTX (build with "
                                    "-gencode arch=compute_%d,code=compute_%d)",
                     elf_arch, elf_arch, elf_arch);
        else
            snprintf(why, why_size, "it holds no PTX");
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    return entry_text(best, (size_t)(end - best), ptx_out, why, why_size);
}

/* ------------------------------------------------------------- host objects */

size_t cusim_fatbin_size(const void *data, size_t avail)
{
    const unsigned char *b = data;
    if (avail < 16 || rd(b, 4) != FATBIN_MAGIC)
        return 0;
    uint64_t hsize = rd(b + 6, 2), body = rd(b + 8, 8);
    return hsize >= 16 && hsize <= avail && body <= avail - hsize ? (size_t)(hsize + body) : 0;
}

int cusim_object_fatbins(const void *data, size_t size, size_t *off, size_t *len)
{
    const unsigned char *b = data;
    /* An ELF64 little-endian object: nvcc puts the device code of a
     * translation unit in .nv_fatbin, or __nv_relfatbin with -rdc. */
    if (size < 64 || memcmp(b, "\x7f" "ELF\x02\x01", 6) != 0)
        return -1;
    uint64_t shoff = rd(b + 0x28, 8);
    size_t shentsize = (size_t)rd(b + 0x3a, 2), shnum = (size_t)rd(b + 0x3c, 2);
    size_t shstrndx = (size_t)rd(b + 0x3e, 2);
    if (shentsize < 64 || shstrndx >= shnum || shoff > size || shnum > (size - shoff) / shentsize)
        return -1;
    const unsigned char *strtab = b + shoff + shstrndx * shentsize;
    uint64_t str_off = rd(strtab + 0x18, 8), str_size = rd(strtab + 0x20, 8);
    if (str_off > size || str_size > size - str_off)
        return -1;
    for (size_t i = 0; i < shnum; i++) {
        const unsigned char *sh = b + shoff + i * shentsize;
        uint64_t name = rd(sh, 4), s_off = rd(sh + 0x18, 8), s_size = rd(sh + 0x20, 8);
        if (name >= str_size || s_off > size || s_size > size - s_off)
            continue;
        const char *nm = (const char *)b + str_off + name;
        size_t room = (size_t)(str_size - name);
        if (strncmp(nm, ".nv_fatbin", room) == 0 || strncmp(nm, "__nv_relfatbin", room) == 0) {
            *off = (size_t)s_off;
            *len = (size_t)s_size;
            return 0;
        }
    }
    return 1;
}
