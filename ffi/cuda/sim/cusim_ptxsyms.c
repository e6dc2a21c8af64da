/* cuda-sim: the module-scope symbols of a PTX text, for the linker.
 *
 * The linker joins its PTX inputs into one module, so two inputs that both
 * define a variable of one name would silently share it.  This scanner finds
 * the module-scope variables each input defines (and whether it declares
 * external functions), reading only what lies outside function bodies; the
 * executor's parser still checks everything else. */
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

typedef struct scan {
    const char *p;
    char tok[256];
} scan;

static int id_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || c == '%' || c == '.';
}

/* The next token into s->tok: an identifier, directive or number, a quoted
 * string, or one punctuation character.  0 at the end of the text. */
static int next(scan *s)
{
    for (;;) {
        while (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')
            s->p++;
        if (s->p[0] == '/' && s->p[1] == '/') {
            while (*s->p && *s->p != '\n')
                s->p++;
        } else if (s->p[0] == '/' && s->p[1] == '*') {
            const char *e = strstr(s->p + 2, "*/");
            s->p = e ? e + 2 : s->p + strlen(s->p);
        } else {
            break;
        }
    }
    if (!*s->p)
        return 0;
    size_t n = 0;
    if (*s->p == '"') {
        s->p++;
        while (*s->p && *s->p != '"')
            s->p++;
        if (*s->p)
            s->p++;
        s->tok[n++] = '"';
    } else if (id_char(*s->p)) {
        while (id_char(*s->p)) {
            if (n + 1 < sizeof s->tok)
                s->tok[n++] = *s->p;
            s->p++;
        }
    } else {
        s->tok[n++] = *s->p++;
    }
    s->tok[n] = 0;
    return 1;
}

static int is(const scan *s, const char *t) { return strcmp(s->tok, t) == 0; }

/* Skips a brace-balanced block whose '{' is the current token. */
static void skip_block(scan *s)
{
    int depth = 1;
    while (depth > 0 && next(s))
        depth += is(s, "{") ? 1 : is(s, "}") ? -1 : 0;
}

/* A function: a prototype ends at ';', a definition after its body. */
static void skip_function(scan *s)
{
    int parens = 0;
    while (next(s)) {
        if (is(s, "("))
            parens++;
        else if (is(s, ")"))
            parens--;
        else if (parens == 0 && is(s, ";"))
            return;
        else if (parens == 0 && is(s, "{")) {
            skip_block(s);
            return;
        }
    }
}

static int add_name(cusim_ptx_syms *out, const char *name)
{
    char **grown = realloc(out->vars, (out->n + 1) * sizeof *grown);
    if (!grown)
        return -1;
    out->vars = grown;
    out->vars[out->n] = strdup(name);
    if (!out->vars[out->n])
        return -1;
    out->n++;
    return 0;
}

/* A variable declaration up to its ';': names follow the type, or a ','
 * outside brackets and initializers. */
static int scan_vars(scan *s, int record, cusim_ptx_syms *out)
{
    int nest = 0, want_name = 1;
    while (next(s)) {
        char c = s->tok[0];
        if (c == '{' || c == '[' || c == '(')
            nest++;
        else if (c == '}' || c == ']' || c == ')')
            nest--;
        else if (nest == 0 && c == ';')
            return 0;
        else if (nest == 0 && c == ',')
            want_name = 1;
        else if (nest == 0 && c == '=')
            want_name = 0;
        else if (nest == 0 && want_name && c != '.' && c != '"' && !(c >= '0' && c <= '9') &&
                 id_char(c)) {
            want_name = 0;
            if (record && add_name(out, s->tok))
                return -1;
        }
    }
    return 0;
}

int cusim_ptx_scan_syms(const char *text, cusim_ptx_syms *out)
{
    memset(out, 0, sizeof *out);
    scan s = {.p = text};
    int is_extern = 0;
    while (next(&s)) {
        if (is(&s, ".visible") || is(&s, ".weak") || is(&s, ".common")) {
            continue;
        } else if (is(&s, ".extern")) {
            is_extern = 1;
            continue;
        } else if (is(&s, ".entry") || is(&s, ".func")) {
            out->has_extern_func |= is_extern;
            skip_function(&s);
        } else if (is(&s, ".global") || is(&s, ".const") || is(&s, ".shared")) {
            /* An .extern .shared array is the launch's dynamic shared
             * memory: one window, rightly shared by every input. */
            if (scan_vars(&s, !is_extern, out)) {
                cusim_ptx_syms_free(out);
                return -1;
            }
        } else if (is(&s, "{")) {
            skip_block(&s); /* .section bodies */
        }
        is_extern = 0;
    }
    return 0;
}

void cusim_ptx_syms_free(cusim_ptx_syms *syms)
{
    for (size_t i = 0; i < syms->n; i++)
        free(syms->vars[i]);
    free(syms->vars);
    memset(syms, 0, sizeof *syms);
}
