/* PTX text -> tokens, and the parser's error reporting.
 *
 * A hand-written tokenizer for the PTX that nvcc and NVRTC write: names
 * (with the dots and '::' of opcodes and directives), numbers (including
 * 0f/0d float bit patterns), strings and punctuation; comments dropped.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_parse.h"

static int id_start(int c) { return isalpha(c) || c == '_' || c == '$' || c == '%' || c == '.'; }
static int id_char(int c) { return isalnum(c) || c == '_' || c == '$' || c == '.'; }

/* A state-space directive, which a type may follow with no space between. */
static int space_directive(const char *s, size_t n)
{
    static const char *const names[] = {".reg", ".param", ".local", ".shared", ".global", ".const"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && memcmp(s, names[i], n) == 0)
            return 1;
    return 0;
}

int ptx_lex(const char *src, lexer *lx, int *long_line)
{
    int line = 1;
    *long_line = 0;
    const char *p = src;
    for (;;) {
        while (*p && isspace((unsigned char)*p)) {
            if (*p == '\n')
                line++;
            p++;
        }
        if (!*p)
            break;
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            p += 2;
            while (*p && !(p[0] == '*' && p[1] == '/')) {
                if (*p == '\n')
                    line++;
                p++;
            }
            if (*p)
                p += 2;
            continue;
        }
        if (lx->n + 1 >= lx->cap) {
            size_t cap = lx->cap ? lx->cap * 2 : 4096;
            tok *t = realloc(lx->t, cap * sizeof *t);
            if (!t)
                return -1;
            lx->t = t;
            lx->cap = cap;
        }
        tok *t = &lx->t[lx->n++];
        t->line = line;
        t->s = p;
        unsigned char c = (unsigned char)*p;
        if (id_start(c)) {
            p++;
            for (;;) {
                if (c == '.' && *p == '.' && space_directive(t->s, (size_t)(p - t->s)))
                    break; /* ptxas reads `.reg.f32 f;` (cuda_fp16's inline asm) as `.reg .f32 f;` */
                if (id_char((unsigned char)*p))
                    p++;
                else if (p[0] == ':' && p[1] == ':' && id_char((unsigned char)p[2]))
                    p += 2; /* ld.global.L1::evict_last */
                else
                    break;
            }
            t->kind = TK_ID;
        } else if (isdigit(c)) {
            if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X' || p[1] == 'f' || p[1] == 'F' ||
                                p[1] == 'd' || p[1] == 'D')) {
                p += 2;
                while (isxdigit((unsigned char)*p))
                    p++;
            } else {
                while (isdigit((unsigned char)*p) || *p == '.' ||
                       ((*p == 'e' || *p == 'E') && (isdigit((unsigned char)p[1]) || p[1] == '-' || p[1] == '+')) ||
                       ((*p == '-' || *p == '+') && (p[-1] == 'e' || p[-1] == 'E')))
                    p++;
            }
            if (*p == 'U' || *p == 'u')
                p++;
            t->kind = TK_NUM;
        } else if (c == '"') {
            p++;
            while (*p && *p != '"' && *p != '\n')
                p++;
            if (*p == '"')
                p++;
            t->kind = TK_STR;
        } else {
            p++;
            t->kind = TK_PUNCT;
        }
        t->len = (int)(p - t->s);
        if (t->len >= PTX_NAME_MAX && !*long_line)
            *long_line = line;
    }
    lx->t[lx->n].kind = TK_EOF;
    lx->t[lx->n].line = line;
    lx->t[lx->n].s = p;
    lx->t[lx->n].len = 0;
    return 0;
}

int ptx_fail(parser *ps, int line, ptx_status st, const char *fmt, ...)
{
    if (ps->err != PTX_OK)
        return -1;
    ps->err = st;
    if (ps->log && ps->log_size) {
        int n = snprintf(ps->log, ps->log_size, "ptx line %d: ", line);
        if (n < 0)
            n = 0;
        if ((size_t)n < ps->log_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(ps->log + n, ps->log_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

int ptx_nomem(parser *ps) { return ptx_fail(ps, 0, PTX_ERR_OUT_OF_MEMORY, "out of memory"); }

int ptx_expect(parser *ps, char c)
{
    if (!is_p(cur(ps), c)) {
        char got[64];
        tokstr(cur(ps), got, sizeof got);
        return ptx_fail(ps, cur(ps)->line, PTX_ERR_INVALID, "expected '%c', found '%s'", c,
                    cur(ps)->kind == TK_EOF ? "end of text" : got);
    }
    ps->i++;
    return 0;
}
/* `.loc file line column [, function_name label [+ off], inlined_at file line column]`
 * and `.file index "name" [, timestamp, size]`: both end with their line. */
int ptx_line_directive(parser *ps)
{
    tok *d = cur(ps);
    int is_loc = is_id(d, ".loc");
    ps->i++;
    int nums = 0;
    while (cur(ps)->kind == TK_NUM && cur(ps)->line == d->line && nums < 3) {
        nums++;
        ps->i++;
    }
    if (nums < (is_loc ? 3 : 1))
        return ptx_fail(ps, d->line, PTX_ERR_INVALID, "malformed %s", is_loc ? ".loc" : ".file");
    if (!is_loc) {
        if (cur(ps)->kind != TK_STR || cur(ps)->line != d->line)
            return ptx_fail(ps, d->line, PTX_ERR_INVALID, "malformed .file");
        ps->i++;
    }
    /* The optional tail: ", name-or-number" pairs and "+ offset", on this line only. */
    while (cur(ps)->kind != TK_EOF && cur(ps)->line == d->line) {
        if (!is_p(cur(ps), ','))
            return ptx_fail(ps, d->line, PTX_ERR_INVALID, "unexpected text after %s",
                            is_loc ? ".loc" : ".file");
        ps->i++;
        while (cur(ps)->line == d->line &&
               (cur(ps)->kind == TK_ID || cur(ps)->kind == TK_NUM || is_p(cur(ps), '+')))
            ps->i++;
    }
    return 0;
}

int ptx_pragma(parser *ps)
{
    int line = cur(ps)->line;
    ps->i++;
    for (;;) {
        if (cur(ps)->kind != TK_STR)
            return ptx_fail(ps, line, PTX_ERR_INVALID, "malformed .pragma");
        ps->i++;
        if (!is_p(cur(ps), ','))
            break;
        ps->i++;
    }
    if (!is_p(cur(ps), ';'))
        return ptx_fail(ps, line, PTX_ERR_INVALID, "expected ';' after .pragma");
    ps->i++;
    return 0;
}

int ptx_parse_uint(tok *t, uint64_t *out)
{
    if (t->kind != TK_NUM)
        return -1;
    char buf[PTX_NAME_MAX];
    tokstr(t, buf, sizeof buf);
    char *end;
    *out = strtoull(buf, &end, 0);
    if (*end == 'U' || *end == 'u')
        end++;
    return *end ? -1 : 0;
}
