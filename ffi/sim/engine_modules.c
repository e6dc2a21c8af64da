/* Modules: host shared objects (dlopened) whose kernels run as native code,
 * and executor ("foreign") modules, whose kernels an interpreter runs. */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct kernel_node {
    arsim_kernel k;
    ar_kernel_info info_copy; /* foreign kernels: k.info points here */
    struct kernel_node *next;
};

struct arsim_module {
    _Atomic int refs;
    void *dl;
    /* The memfd an image was loaded from stays open for the module's life:
     * glibc matches dlopen paths by name, so a closed fd's number, reused by
     * the next load's "/proc/self/fd/N", would hand back this module. */
    int fd;
    pthread_mutex_t mu;
    struct kernel_node *kernels;
    void *foreign_ctx; /* executor modules: dl is NULL */
    void (*foreign_destroy)(void *ctx);
};

void eng_module_retain(arsim_module *m) { atomic_fetch_add(&m->refs, 1); }

void eng_module_release(arsim_module *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    struct kernel_node *n = m->kernels;
    while (n) {
        struct kernel_node *next = n->next;
        free((char *)n->k.name);
        free(n);
        n = next;
    }
    if (m->dl)
        dlclose(m->dl);
    if (m->foreign_destroy)
        m->foreign_destroy(m->foreign_ctx);
    if (m->fd >= 0)
        close(m->fd);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static arsim_status module_wrap(void *dl, int fd, arsim_module **out)
{
    arsim_module *m = calloc(1, sizeof *m);
    if (!m) {
        dlclose(dl);
        if (fd >= 0)
            close(fd);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    atomic_init(&m->refs, 1);
    m->dl = dl;
    m->fd = fd;
    pthread_mutex_init(&m->mu, NULL);
    *out = m;
    return ARSIM_OK;
}

arsim_status arsim_module_load_file(const char *path, arsim_module **out)
{
    if (!path || !out)
        return ARSIM_ERR_INVALID_VALUE;
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return ARSIM_ERR_INVALID_IMAGE;
    return module_wrap(dl, -1, out);
}

arsim_status arsim_module_load(const void *image, size_t size, arsim_module **out)
{
    if (!image || !out)
        return ARSIM_ERR_INVALID_VALUE;
    if (size < 4 || memcmp(image, "\177ELF", 4) != 0)
        return ARSIM_ERR_INVALID_IMAGE;
    /* dlopen wants a file: a memfd is one, without touching the disk.  Each
     * load gets a fresh inode, so two loads are two independent modules. */
    int fd = memfd_create("arsim-module", MFD_CLOEXEC);
    if (fd < 0)
        return ARSIM_ERR_OUT_OF_MEMORY;
    const char *p = image;
    size_t left = size;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return ARSIM_ERR_OUT_OF_MEMORY;
        }
        p += w;
        left -= (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        close(fd);
        return ARSIM_ERR_INVALID_IMAGE;
    }
    return module_wrap(dl, fd, out);
}

/* The module's kernel of that name, or NULL.  Caller holds m->mu. */
static struct kernel_node *find_kernel(const arsim_module *m, const char *name)
{
    for (struct kernel_node *n = m->kernels; n; n = n->next)
        if (strcmp(n->k.name, name) == 0)
            return n;
    return NULL;
}

/* A new kernel of that name, added to the module; NULL if out of memory.
 * Caller holds m->mu and fills in how it runs. */
static struct kernel_node *add_kernel(arsim_module *m, const char *name)
{
    struct kernel_node *n = calloc(1, sizeof *n);
    char *copy = strdup(name);
    if (!n || !copy) {
        free(n);
        free(copy);
        return NULL;
    }
    n->k.module = m;
    n->k.name = copy;
    n->next = m->kernels;
    m->kernels = n;
    return n;
}

arsim_status arsim_module_get_kernel(arsim_module *m, const char *name, const arsim_kernel **out)
{
    if (!m || !name || !out)
        return ARSIM_ERR_INVALID_VALUE;
    pthread_mutex_lock(&m->mu);
    struct kernel_node *found = find_kernel(m, name);
    if (found) {
        *out = &found->k;
        pthread_mutex_unlock(&m->mu);
        return ARSIM_OK;
    }
    size_t len = strlen(name);
    char *info_name = malloc(len + sizeof AR_KINFO_PREFIX);
    if (!info_name) {
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    if (!m->dl) { /* an executor module has only the kernels it was given */
        free(info_name);
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_NOT_FOUND;
    }
    memcpy(info_name, AR_KINFO_PREFIX, sizeof AR_KINFO_PREFIX - 1);
    memcpy(info_name + sizeof AR_KINFO_PREFIX - 1, name, len + 1);
    void *entry = dlsym(m->dl, name);
    const ar_kernel_info *info = dlsym(m->dl, info_name);
    free(info_name);
    if (!entry || !info || info->abi_version != AR_HOST_ABI_VERSION ||
        info->num_params > AR_KERNEL_MAX_PARAMS) {
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_NOT_FOUND;
    }
    struct kernel_node *n = add_kernel(m, name);
    if (!n) {
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    n->k.entry = (ar_kernel_entry)entry;
    n->k.info = info;
    *out = &n->k;
    pthread_mutex_unlock(&m->mu);
    return ARSIM_OK;
}

void arsim_module_unload(arsim_module *m) { eng_module_release(m); }

arsim_status arsim_module_create_foreign(void *ctx, void (*destroy)(void *ctx),
                                         arsim_module **out)
{
    if (!out)
        return ARSIM_ERR_INVALID_VALUE;
    arsim_module *m = calloc(1, sizeof *m);
    if (!m)
        return ARSIM_ERR_OUT_OF_MEMORY;
    atomic_init(&m->refs, 1);
    m->fd = -1;
    m->foreign_ctx = ctx;
    m->foreign_destroy = destroy;
    pthread_mutex_init(&m->mu, NULL);
    *out = m;
    return ARSIM_OK;
}

void *arsim_module_foreign_ctx(const arsim_module *m) { return m ? m->foreign_ctx : NULL; }

arsim_status arsim_module_add_foreign_kernel(arsim_module *m, const char *name,
                                             const ar_kernel_info *info,
                                             arsim_foreign_run run, void *kernel_ctx)
{
    if (!m || m->dl || !name || !info || !run || info->num_params > AR_KERNEL_MAX_PARAMS)
        return ARSIM_ERR_INVALID_VALUE;
    pthread_mutex_lock(&m->mu);
    if (find_kernel(m, name)) {
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_INVALID_VALUE;
    }
    struct kernel_node *n = add_kernel(m, name);
    if (!n) {
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    n->info_copy = *info;
    n->info_copy.abi_version = AR_HOST_ABI_VERSION;
    n->k.run = run;
    n->k.ctx = kernel_ctx;
    n->k.info = &n->info_copy;
    pthread_mutex_unlock(&m->mu);
    return ARSIM_OK;
}
