/* Memory a launch declared read-only (engine.h, "memory declared read-only"):
 * the ranges travel from the launching thread to the kernel op, from the op
 * to the threads that run its slices, and a store into one becomes a report
 * that the front end turns into aruntime's HazardError. */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set by the application's thread just before it launches a kernel. */
static __thread arsim_readonly *tls_next_ro;
/* The running slice's ranges, and whether it stored into one. */
static __thread const arsim_readonly *tls_running_ro;
static __thread int tls_ro_violated;
/* The kernel of the running slice, for the report (set by run_slice). */
static __thread const char *tls_ro_kernel, *tls_ro_site;

/* The latest report: the op it belongs to has already failed with its own
 * code, which is what tells a reader that the report is about it. */
#define REPORT_LEN 512
static pthread_mutex_t g_ro_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_report[REPORT_LEN];

int arsim_set_launch_readonly(const uint64_t *pairs, uint32_t n)
{
    free(tls_next_ro);
    tls_next_ro = NULL;
    if (n == 0)
        return 0;
    if (n > ARSIM_MAX_READONLY || !pairs)
        return -1;
    arsim_readonly *ro = calloc(1, sizeof *ro);
    if (!ro)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t lo = pairs[2 * i], len = pairs[2 * i + 1];
        if (len == 0 || lo + len < lo) {
            free(ro);
            return -1;
        }
        ro->lo[i] = lo;
        ro->hi[i] = lo + len;
    }
    ro->n = n;
    tls_next_ro = ro;
    return 0;
}

arsim_readonly *eng_take_launch_readonly(void)
{
    arsim_readonly *ro = tls_next_ro;
    tls_next_ro = NULL;
    return ro;
}

arsim_readonly *eng_readonly_copy(const arsim_readonly *ro, int *failed)
{
    if (!ro)
        return NULL;
    arsim_readonly *copy = malloc(sizeof *copy);
    if (!copy) {
        *failed = 1;
        return NULL;
    }
    memcpy(copy, ro, sizeof *copy);
    return copy;
}

void eng_readonly_enter(const arsim_readonly *ro, const char *kernel, const char *site)
{
    tls_running_ro = ro;
    tls_ro_violated = 0;
    tls_ro_kernel = kernel;
    tls_ro_site = site;
}

int eng_readonly_leave(void)
{
    int violated = tls_ro_violated;
    tls_running_ro = NULL;
    tls_ro_violated = 0;
    return violated;
}

const arsim_readonly *arsim_running_readonly(void) { return tls_running_ro; }

void arsim_readonly_violation(const arsim_readonly *ro, uint32_t i, uint64_t p, size_t n)
{
    if (tls_ro_violated)
        return; /* the slice stops at its first: one report each */
    tls_ro_violated = 1;
    pthread_mutex_lock(&g_ro_mu);
    snprintf(g_report, REPORT_LEN,
             "kernel '%s'%s%s stored %zu byte%s at %#llx, byte %llu of the %llu-byte range "
             "at %#llx that its launch declared read-only (reads=)",
             tls_ro_kernel ? tls_ro_kernel : "?", tls_ro_site ? " launched at " : "",
             tls_ro_site ? tls_ro_site : "", n, n == 1 ? "" : "s", (unsigned long long)p,
             (unsigned long long)(p - ro->lo[i]), (unsigned long long)(ro->hi[i] - ro->lo[i]),
             (unsigned long long)ro->lo[i]);
    pthread_mutex_unlock(&g_ro_mu);
}

int arsim_readonly_report(char *buf, size_t n)
{
    pthread_mutex_lock(&g_ro_mu);
    int len = snprintf(buf, n, "%s", g_report);
    pthread_mutex_unlock(&g_ro_mu);
    return len;
}
