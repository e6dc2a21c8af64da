/* The last memory fault a kernel made (for arsim_last_fault and
 * arsim_fault_report), and the bounds check the interpreters make before
 * each load and store. */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <stdio.h>
#include <string.h>

/* The kernel running on this thread (set around each slice), for fault reports. */
static __thread const char *tls_kernel_name;
static __thread const char *tls_kernel_site;
static __thread int tls_kernel_device = -1;
/* Set by the application's thread just before it launches a kernel. */
static __thread const char *tls_launch_site;

static pthread_mutex_t g_fault_mu = PTHREAD_MUTEX_INITIALIZER;
static arsim_fault_info g_fault;
static const char *g_fault_site; /* the faulting kernel's launch site, or NULL */
static int g_fault_injected;     /* the fault was arsim_inject_fault's */
static int g_fault_misaligned;   /* the fault was arsim_fault_misaligned's */
static const char *g_fault_insn; /* the instruction that made the access, or NULL */
static int g_has_fault;
static _Atomic uint64_t g_fault_seq; /* faults recorded so far */
static _Atomic int g_process_wide;   /* arsim_set_sticky_process_wide */

void arsim_set_launch_site(const char *site) { tls_launch_site = site; }

const char *eng_take_launch_site(void)
{
    const char *site = tls_launch_site;
    tls_launch_site = NULL;
    return site;
}

void arsim_set_sticky_process_wide(int on) { atomic_store(&g_process_wide, on != 0); }

void eng_poison(sim_device *d, arsim_status code)
{
    if (!atomic_load(&g_process_wide)) {
        atomic_store_explicit(&d->sticky, code, memory_order_release);
        return;
    }
    for (int i = 0; i < eng_ndev; i++)
        atomic_store_explicit(&eng_dev[i].sticky, code, memory_order_release);
}

int arsim_lost_devices(void)
{
    eng_ensure_init();
    int n = 0;
    for (int i = 0; i < eng_ndev; i++)
        n += atomic_load_explicit(&eng_dev[i].sticky, memory_order_acquire) != 0;
    return n;
}

static __thread uintptr_t tls_hit_lo, tls_hit_hi;
static __thread uint64_t tls_hit_epoch;

void eng_fault_set_kernel(const char *name, const char *site, int device)
{
    tls_kernel_name = name;
    tls_kernel_site = site;
    tls_kernel_device = device;
}

static void place_in(arsim_fault_info *f, uintptr_t addr, const arsim_alloc *a)
{
    f->alloc_base = (uintptr_t)a->base;
    f->alloc_size = a->size;
    f->offset = (int64_t)(addr - (uintptr_t)a->base);
}

/* Fills the allocation nearest to addr (live, or else recently freed). */
static void describe_address(uintptr_t addr, arsim_fault_info *f)
{
    arsim_alloc a;
    uintptr_t dist;
    if (eng_mem_nearest(addr, &a, &dist))
        place_in(f, addr, &a);
    if (dist != 0 && eng_quarantine_find(addr, &a)) {
        place_in(f, addr, &a);
        f->freed = 1;
    }
}

/* Records a fault (see eng_record_fault); misaligned: arsim_fault_misaligned's,
 * insn the instruction that made the access where the executor says. */
static void record_fault(uintptr_t addr, int access, int size, int misaligned, const char *insn)
{
    arsim_fault_info f;
    memset(&f, 0, sizeof f);
    f.address = addr;
    f.access = access;
    f.size = size;
    f.device = tls_kernel_device;
    snprintf(f.kernel, sizeof f.kernel, "%s", tls_kernel_name ? tls_kernel_name : "?");
    if (addr)
        describe_address(addr, &f);
    pthread_mutex_lock(&g_fault_mu);
    g_fault = f;
    g_fault_site = tls_kernel_site;
    g_fault_injected = 0;
    g_fault_misaligned = misaligned;
    g_fault_insn = insn;
    g_has_fault = 1;
    atomic_fetch_add(&g_fault_seq, 1);
    pthread_mutex_unlock(&g_fault_mu);
    if (eng_sanitize) {
        char line[512];
        arsim_fault_report(line, sizeof line);
        fprintf(stderr, "aruntime sim sanitizer: %s\n", line);
    }
}

void eng_record_fault(uintptr_t addr, int access, int size)
{
    record_fault(addr, access, size, 0, NULL);
}

arsim_status arsim_fault_misaligned_by(const void *p, size_t n, int is_write, const char *insn)
{
    int access = is_write < 0 ? -1 : is_write ? 1 : 0;
    record_fault((uintptr_t)p, access, n > INT32_MAX ? INT32_MAX : (int)n, 1, insn);
    return ARSIM_ERR_MISALIGNED_ADDRESS;
}

arsim_status arsim_fault_misaligned(const void *p, size_t n, int is_write)
{
    return arsim_fault_misaligned_by(p, n, is_write, NULL);
}

uint64_t eng_fault_count(void) { return atomic_load(&g_fault_seq); }

void eng_fault_after_kernel(uint64_t before, const char *name, const char *site, int device)
{
    pthread_mutex_lock(&g_fault_mu);
    int recorded = atomic_load(&g_fault_seq) != before;
    /* An executor's own threads do not know the kernel's name. */
    if (recorded && strcmp(g_fault.kernel, "?") == 0) {
        snprintf(g_fault.kernel, sizeof g_fault.kernel, "%s", name);
        g_fault_site = site;
        g_fault.device = device;
    }
    pthread_mutex_unlock(&g_fault_mu);
    if (!recorded)
        eng_record_fault(0, -1, 0); /* an executor that did not say where */
}

int arsim_last_fault(arsim_fault_info *out)
{
    pthread_mutex_lock(&g_fault_mu);
    int has = g_has_fault;
    if (has && out)
        *out = g_fault;
    pthread_mutex_unlock(&g_fault_mu);
    return has;
}

void eng_record_injected(const arsim_op *op, int device)
{
    eng_fault_set_kernel(op->kernel->name, op->site, device);
    eng_record_fault(0, -1, 0);
    eng_fault_set_kernel(NULL, NULL, -1);
    pthread_mutex_lock(&g_fault_mu);
    g_fault_injected = 1;
    pthread_mutex_unlock(&g_fault_mu);
}

/* "kernel NAME (launched at SITE)", or without the site where none was set. */
static void name_kernel(char *out, size_t n, const arsim_fault_info *f, const char *site)
{
    if (site)
        snprintf(out, n, "kernel %s (launched at %s)", f->kernel, site);
    else
        snprintf(out, n, "kernel %s", f->kernel);
}

int arsim_fault_report(char *buf, size_t n)
{
    arsim_fault_info f;
    pthread_mutex_lock(&g_fault_mu);
    int has = g_has_fault, injected = g_fault_injected, misaligned = g_fault_misaligned;
    const char *site = g_fault_site, *insn = g_fault_insn;
    f = g_fault;
    pthread_mutex_unlock(&g_fault_mu);
    if (!has) {
        if (buf && n)
            buf[0] = 0;
        return 0;
    }
    char who[400];
    name_kernel(who, sizeof who, &f, site);
    const char *what = f.access == 1 ? "write" : f.access == 0 ? "read" : "access";
    char size[96] = "";
    if (f.size > 0)
        snprintf(size, sizeof size, " of %d bytes%s%s", (int)f.size, insn ? " by " : "",
                 insn ? insn : "");
    else if (insn)
        snprintf(size, sizeof size, " by %s", insn);
    if (injected)
        return snprintf(buf, n, "%s: injected illegal address on device %d (arsim_inject_fault)",
                        who, (int)f.device);
    const char *bad = misaligned ? "misaligned" : "invalid";
    if (!f.address)
        return snprintf(buf, n, "%s: %s%s on device %d (no address known)", who,
                        misaligned ? "misaligned address" : "illegal address", size, (int)f.device);
    if (!f.alloc_base)
        return snprintf(buf, n, "%s: %s %s%s at 0x%llx on device %d, outside any allocation",
                        who, bad, what, size, (unsigned long long)f.address, (int)f.device);
    return snprintf(buf, n,
                    "%s: %s %s%s at 0x%llx on device %d, offset %lld of %s "
                    "allocation 0x%llx (%llu bytes)%s",
                    who, bad, what, size, (unsigned long long)f.address, (int)f.device,
                    (long long)f.offset, f.freed ? "freed" : "the", (unsigned long long)f.alloc_base,
                    (unsigned long long)f.alloc_size,
                    f.freed ? ": use after free"
                    : f.offset < 0 ? ": before its start"
                    : (uint64_t)f.offset >= f.alloc_size ? ": past its end"
                                                         : "");
}

void arsim_clear_faults(void)
{
    eng_ensure_init();
    pthread_mutex_lock(&g_fault_mu);
    g_has_fault = 0;
    pthread_mutex_unlock(&g_fault_mu);
    for (int i = 0; i < eng_ndev; i++)
        arsim_device_reset(i);
}

arsim_status arsim_check_access(const void *p, size_t n, int is_write)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    if (hi < lo)
        goto bad;
    uint64_t epoch = atomic_load_explicit(&eng_mem_epoch, memory_order_acquire);
    if (tls_hit_epoch == epoch && lo >= tls_hit_lo && hi <= tls_hit_hi)
        return ARSIM_OK;
    arsim_alloc a;
    if (arsim_mem_lookup(p, &a) == ARSIM_OK && n <= (uintptr_t)a.base + a.size - lo) {
        tls_hit_lo = (uintptr_t)a.base;
        tls_hit_hi = (uintptr_t)a.base + a.size;
        tls_hit_epoch = epoch;
        return ARSIM_OK;
    }
bad:
    eng_record_fault(lo, is_write < 0 ? -1 : is_write ? 1 : 0, n > INT32_MAX ? INT32_MAX : (int)n);
    return ARSIM_ERR_ILLEGAL_ADDRESS;
}
