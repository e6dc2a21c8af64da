/* vprintf: the call behind CUDA C's printf and numba's print() in a kernel;
 * and __assertfail, behind a device assert() that fails.
 *
 * The call site passes the format string's generic address and the address
 * of an argument buffer the caller filled (CUDA's printf ABI: the arguments
 * after C's default promotions, so char and short as int and float as
 * double, each at an offset aligned to its own size).  The conversions of the
 * format say how to read that buffer.  Each lane's call is formatted here, on
 * the host, and handed whole to the driver's printf FIFO (the sink), which
 * writes the records out at the synchronisation points CUDA documents.
 *
 * The format is never handed to the host's printf as it stands: each
 * conversion is parsed here, checked, and rebuilt from its checked parts, and
 * the C library formats that one conversion with one value of the type it
 * names.  A conversion the sim cannot format (%n, wide characters, long
 * double, an unknown letter) fails the launch, naming it on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"

/* CUDA: "at most 32 arguments in addition to the format string"; a
 * conversion past them is written as it stands. */
#define MAX_ARGS 32
/* Field widths and precisions above this are refused, not formatted. */
#define MAX_FIELD 4096
/* A format or a %s string runs at most this far looking for its NUL. */
#define MAX_STRING 65536

static ptx_printf_sink g_sink;

void ptx_set_printf_sink(ptx_printf_sink sink) { __atomic_store_n(&g_sink, sink, __ATOMIC_RELEASE); }

typedef struct text {
    char *s;
    size_t len, cap;
} text;

static int text_room(text *t, size_t n)
{
    if (t->len + n + 1 <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + n + 1)
        cap *= 2;
    char *s = realloc(t->s, cap);
    if (!s)
        return -1;
    t->s = s;
    t->cap = cap;
    return 0;
}

static int text_put(text *t, const char *s, size_t n)
{
    if (text_room(t, n))
        return -1;
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = 0;
    return 0;
}

/* One lane's memory, as vprintf reads it. */
typedef struct lane_io {
    block_ctx *b;
    warp *w;
    frame *fr;
    int lane;
    uint64_t args; /* the argument buffer's generic address */
    size_t used;   /* bytes of it the conversions read so far */
    int nargs;
} lane_io;

/* The next argument of `size` bytes (4 or 8), at the next offset aligned to
 * its size; 0 or a negative E_* status (a fault, as the device's read is). */
static int next_arg(lane_io *io, size_t size, uint64_t *v)
{
    size_t off = (io->used + size - 1) & ~(size - 1);
    int rc = ptx_mem_read(io->b, io->w, io->fr, io->args + off, size, io->lane, v);
    if (rc)
        return rc;
    io->used = off + size;
    io->nargs++;
    return 0;
}

/* A NUL-terminated string at addr, at most max bytes: its bytes and length,
 * or NULL when addr is not readable or no NUL ends it within its memory. */
static const char *read_string(lane_io *io, uint64_t addr, size_t max, size_t *len)
{
    size_t avail;
    const uint8_t *p = ptx_mem_span(io->b, io->w, io->fr, addr, io->lane, &avail);
    if (!p)
        return NULL;
    size_t cap = avail < max ? avail : max;
    const uint8_t *nul = memchr(p, 0, cap);
    if (!nul && cap < max)
        return NULL; /* the memory ends before the string does */
    *len = nul ? (size_t)(nul - p) : cap;
    return (const char *)p;
}

/* One conversion specification: %[flags][width][.precision][length]conv. */
typedef struct spec {
    char flags[8];
    int nflags;
    int width, width_star;         /* width_star: from an int argument */
    int prec, prec_star, has_prec; /* prec -1: none */
    char length[3];                /* "", "hh", "h", "l", "ll", "j", "z", "t", "L" */
    char conv;
    size_t end; /* the index just past it in the format */
} spec;

static int read_number(const char *f, size_t n, size_t *i, int *out)
{
    long v = 0;
    while (*i < n && f[*i] >= '0' && f[*i] <= '9') {
        v = v * 10 + (f[*i] - '0');
        if (v > MAX_FIELD)
            return -1;
        (*i)++;
    }
    *out = (int)v;
    return 0;
}

/* Parses the specification starting at f[at] == '%'; 0, or -1 with why. */
static int parse_spec(const char *f, size_t n, size_t at, spec *s, char *why, size_t wn)
{
    memset(s, 0, sizeof *s);
    s->prec = -1;
    size_t i = at + 1;
    while (i < n && f[i] && strchr("-+ #0", f[i])) {
        if (s->nflags < (int)sizeof s->flags - 1)
            s->flags[s->nflags++] = f[i];
        i++;
    }
    if (i < n && f[i] == '*') {
        s->width_star = 1;
        i++;
    } else if (read_number(f, n, &i, &s->width)) {
        snprintf(why, wn, "a field width over %d", MAX_FIELD);
        return -1;
    }
    if (i < n && f[i] == '.') {
        i++;
        s->has_prec = 1;
        if (i < n && f[i] == '*') {
            s->prec_star = 1;
            i++;
        } else if (read_number(f, n, &i, &s->prec)) {
            snprintf(why, wn, "a precision over %d", MAX_FIELD);
            return -1;
        }
    }
    static const char *const lengths[] = {"hh", "ll", "h", "l", "j", "z", "t", "L"};
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
        size_t ln = strlen(lengths[k]);
        if (i + ln <= n && memcmp(f + i, lengths[k], ln) == 0) {
            memcpy(s->length, lengths[k], ln);
            i += ln;
            break;
        }
    }
    s->conv = i < n ? f[i] : 0;
    s->end = i < n ? i + 1 : n;
    int len = (int)(s->end - at);
    if (!s->conv || !strchr("diouxXcspeEfFgGaA", s->conv)) {
        snprintf(why, wn, "conversion '%.*s'", len > 16 ? 16 : len, f + at);
        return -1;
    }
    int is_float = strchr("eEfFgGaA", s->conv) != NULL;
    if (s->length[0] == 'L' || (is_float && s->length[0] && strcmp(s->length, "l")) ||
        ((s->conv == 'c' || s->conv == 's' || s->conv == 'p') && s->length[0])) {
        snprintf(why, wn, "conversion '%.*s' (its length modifier)", len > 16 ? 16 : len, f + at);
        return -1;
    }
    return 0;
}

/* The conversion, rebuilt from its checked parts, formatted with one value. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int emit(text *out, const spec *s, int width, int prec, uint64_t v, const char *str,
                size_t str_len)
{
    char host[48];
    int k = snprintf(host, sizeof host, "%%%s", s->flags);
    if (width < 0) /* C: a negative width from '*' is the '-' flag */
        k += snprintf(host + k, sizeof host - (size_t)k, "-");
    if (width)
        k += snprintf(host + k, sizeof host - (size_t)k, "%d", width < 0 ? -width : width);
    if (prec >= 0)
        k += snprintf(host + k, sizeof host - (size_t)k, ".%d", prec);
    int is_int = strchr("diouxX", s->conv) != NULL, wide = s->length[0] && strcmp(s->length, "h") &&
                                                          strcmp(s->length, "hh");
    snprintf(host + k, sizeof host - (size_t)k, "%s%c",
             is_int ? (wide ? "ll" : s->length) : "", s->conv);
    char *tmp = NULL;
    if (s->conv == 's') {
        tmp = malloc(str_len + 1);
        if (!tmp)
            return -1;
        memcpy(tmp, str, str_len);
        tmp[str_len] = 0;
    }
    int n;
    if (s->conv == 's')
        n = snprintf(NULL, 0, host, tmp);
    else if (s->conv == 'p')
        n = snprintf(NULL, 0, host, (void *)(uintptr_t)v);
    else if (strchr("eEfFgGaA", s->conv))
        n = snprintf(NULL, 0, host, sim_f64(v));
    else if (is_int && wide)
        n = snprintf(NULL, 0, host, (long long)v);
    else
        n = snprintf(NULL, 0, host, (int)(uint32_t)v);
    if (n < 0 || text_room(out, (size_t)n)) {
        free(tmp);
        return -1;
    }
    char *at = out->s + out->len;
    size_t room = (size_t)n + 1;
    if (s->conv == 's')
        snprintf(at, room, host, tmp);
    else if (s->conv == 'p')
        snprintf(at, room, host, (void *)(uintptr_t)v);
    else if (strchr("eEfFgGaA", s->conv))
        snprintf(at, room, host, sim_f64(v));
    else if (is_int && wide)
        snprintf(at, room, host, (long long)v);
    else
        snprintf(at, room, host, (int)(uint32_t)v);
    out->len += (size_t)n;
    free(tmp);
    return 0;
}
#pragma GCC diagnostic pop

/* One conversion with its arguments; 0, -1 with why, or an E_* status. */
static int convert(lane_io *io, const spec *s, text *out, char *why, size_t wn)
{
    uint64_t v = 0;
    int rc, width = s->width, prec = s->has_prec ? s->prec : -1;
    if (s->width_star) {
        if ((rc = next_arg(io, 4, &v)))
            return rc;
        width = (int32_t)v;
        if (width > MAX_FIELD || width < -MAX_FIELD) {
            snprintf(why, wn, "a field width of %d (over %d)", width, MAX_FIELD);
            return -1;
        }
    }
    if (s->prec_star) {
        if ((rc = next_arg(io, 4, &v)))
            return rc;
        prec = (int32_t)v < 0 ? -1 : (int32_t)v;
        if (prec > MAX_FIELD) {
            snprintf(why, wn, "a precision of %d (over %d)", prec, MAX_FIELD);
            return -1;
        }
    }
    int wide = strchr("eEfFgGaAsp", s->conv) || (s->length[0] && strcmp(s->length, "h") &&
                                                 strcmp(s->length, "hh"));
    if ((rc = next_arg(io, wide ? 8 : 4, &v)))
        return rc;
    if (s->conv == 's' && v) {
        size_t len;
        const char *str = read_string(io, v, prec >= 0 ? (size_t)prec : MAX_STRING, &len);
        if (!str) {
            snprintf(why, wn, "a %%s string at 0x%llx that is not readable or has no NUL "
                     "within %d bytes", (unsigned long long)v, MAX_STRING);
            return -1;
        }
        return emit(out, s, width, prec, 0, str, len);
    }
    if (s->conv == 's') /* a NULL string, as the host's C library prints it */
        return emit(out, s, width, prec, 0, "(null)", 6);
    return emit(out, s, width, prec, v, NULL, 0);
}

/* Formats one call; 0, -1 with why (refused), or an E_* status. */
static int format(lane_io *io, const char *f, size_t n, text *out, char *why, size_t wn)
{
    size_t i = 0;
    while (i < n) {
        const char *pct = memchr(f + i, '%', n - i);
        size_t plain = pct ? (size_t)(pct - (f + i)) : n - i;
        if (text_put(out, f + i, plain))
            return E_FAIL;
        i += plain;
        if (i >= n)
            break;
        if (i + 1 < n && f[i + 1] == '%') {
            if (text_put(out, "%", 1))
                return E_FAIL;
            i += 2;
            continue;
        }
        spec s;
        if (parse_spec(f, n, i, &s, why, wn))
            return -1;
        int needs = 1 + s.width_star + s.prec_star;
        int rc = io->nargs + needs > MAX_ARGS ? text_put(out, f + i, s.end - i)
                                              : convert(io, &s, out, why, wn);
        if (rc)
            return rc;
        i = s.end;
    }
    return 0;
}

int ptx_exec_vprintf(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    const pcall *c = &fr->f->calls[in->aux];
    ptx_printf_sink sink = __atomic_load_n(&g_sink, __ATOMIC_ACQUIRE);
    text out = {0};
    int rc = 0;
    FOR_LANES(m, {
        uint8_t *pf = fr->pf + (size_t)l * fr->f->frame_bytes;
        uint64_t fmt = sim_load_n(pf + c->arg_off[0], 8);
        lane_io io = {b, w, fr, l, sim_load_n(pf + c->arg_off[1], 8), 0, 0};
        int32_t ret = -1; /* CUDA: -1 for a NULL format */
        char why[160] = "";
        if (fmt) {
            size_t n;
            const char *f = read_string(&io, fmt, MAX_STRING, &n);
            out.len = 0;
            if (!f)
                snprintf(why, sizeof why, "a format at 0x%llx that is not readable or has no "
                         "NUL within %d bytes", (unsigned long long)fmt, MAX_STRING);
            else if (!sink)
                snprintf(why, sizeof why, "no printf FIFO (the driver set no sink)");
            else
                rc = format(&io, f, n, &out, why, sizeof why);
            if (rc < -1 && rc != E_FAIL)
                break; /* a fault reading the arguments, recorded as a kernel's */
            if (rc || why[0]) {
                fprintf(stderr, "cuda-sim: kernel %s: vprintf refused: %s\n", b->entry->name,
                        why[0] ? why : "out of memory");
                rc = E_FAIL;
                break;
            }
            /* What the record takes in the FIFO: a header and the format's
             * address, then the argument buffer, in 8-byte units. */
            sink(out.s ? out.s : "", out.len, 16 + ((io.used + 7) & ~(size_t)7));
            ret = io.nargs;
        }
        if (c->nrets)
            sim_store_n(pf + c->ret_off[0], 4, (uint32_t)ret);
    });
    free(out.s);
    return rc;
}

/* A failed assert(): each lane's message goes to stderr as CUDA words it,
 * and the launch fails with the sticky ARSIM_ERR_ASSERT, which poisons the
 * device as CUDA_ERROR_ASSERT poisons a GPU's context. */
int ptx_exec_assertfail(block_ctx *b, warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    const pcall *c = &fr->f->calls[in->aux];
    FOR_LANES(m, {
        const uint8_t *pf = fr->pf + (size_t)l * fr->f->frame_bytes;
        lane_io io = {b, w, fr, l, 0, 0, 0};
        const char *parts[3];
        size_t lens[3];
        static const int which[3] = {0, 1, 3}; /* message, file, function */
        for (int k = 0; k < 3; k++) {
            parts[k] = read_string(&io, sim_load_n(pf + c->arg_off[which[k]], 8), 4096, &lens[k]);
            if (!parts[k]) {
                parts[k] = "?";
                lens[k] = 1;
            }
        }
        uint32_t line = (uint32_t)sim_load_n(pf + c->arg_off[2], 4);
        fprintf(stderr, "%.*s:%u: %.*s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%.*s` "
                "failed.\n", (int)lens[1], parts[1], line, (int)lens[2], parts[2], b->ctaid[0],
                b->ctaid[1], b->ctaid[2], w->tid[0][l], w->tid[1][l], w->tid[2][l], (int)lens[0],
                parts[0]);
    });
    return E_ASSERT;
}
