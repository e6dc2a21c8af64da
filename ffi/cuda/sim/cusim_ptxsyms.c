/* cuda-sim: the module-scope definitions of PTX texts, and their resolution
 * across the linker's inputs.
 *
 * The linker joins its PTX inputs into one module, where a name means one
 * thing; a real linker keeps each input's names apart by their linkage.  So
 * before joining, the definitions are resolved as a linker resolves them
 * (the PTX ISA's linking directives):
 *
 * - no linking directive: the name is the input's own.  When another input
 *   defines it too, this input's copy is renamed throughout this input's
 *   text, so each input keeps its own variable or function;
 * - .visible: one definition; two are an error (multiply defined);
 * - .weak: a .visible or .common definition wins over it, else the first;
 * - .common (variables): the largest wins, and only it may be initialized.
 *
 * The losing definitions of a .weak or .common name are blanked (their
 * lines kept, so the error log's line numbers stay right), and the winning
 * variable's declaration takes the first one's place, before any input uses
 * it.  The scanner reads only what lies outside function bodies; the
 * executor's parser still checks everything else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

typedef struct scan {
    const char *text, *p;
    const char *at; /* where the current token starts */
    char tok[1100]; /* the executor's names are at most 1,023 characters */
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
    s->at = s->p;
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

static int add_def(cusim_ptx_syms *out, const cusim_ptx_def *d, const char *name)
{
    cusim_ptx_def *grown = realloc(out->defs, (out->n + 1) * sizeof *grown);
    if (!grown)
        return -1;
    out->defs = grown;
    out->defs[out->n] = *d;
    out->defs[out->n].name = strdup(name);
    if (!out->defs[out->n].name)
        return -1;
    out->n++;
    return 0;
}

/* A function: a prototype ends at ';', a definition after its body.  The
 * name follows the optional return list. */
static int scan_function(scan *s, cusim_ptx_def *d, int record, cusim_ptx_syms *out)
{
    int parens = 0;
    char name[sizeof s->tok] = "";
    while (next(s)) {
        if (is(s, "("))
            parens++;
        else if (is(s, ")"))
            parens--;
        else if (parens == 0 && !name[0] && s->tok[0] != '.' && id_char(s->tok[0]))
            snprintf(name, sizeof name, "%s", s->tok);
        else if (parens == 0 && is(s, ";"))
            return 0; /* a prototype defines nothing */
        else if (parens == 0 && is(s, "{")) {
            skip_block(s);
            d->end = (size_t)(s->p - s->text);
            return record && name[0] ? add_def(out, d, name) : 0;
        }
    }
    return 0;
}

static uint64_t type_size(const char *t)
{
    if (t[0] != '.' || !strchr("bsuf", t[1]))
        return 0;
    int bits = atoi(t + 2);
    return bits >= 8 && bits % 8 == 0 ? (uint64_t)bits / 8 : 0;
}

/* A variable declaration up to its ';': names follow the type, or a ','
 * outside brackets and initializers.  Sizes are the type's times the
 * array's dimensions (0 where the text does not say). */
static int scan_vars(scan *s, cusim_ptx_def *d, int record, cusim_ptx_syms *out)
{
    int nest = 0, want_name = 1;
    size_t first = out->n;
    uint64_t elem = 0;
    while (next(s)) {
        char c = s->tok[0];
        if (c == '{' || c == '[' || c == '(')
            nest++;
        else if (c == '}' || c == ']' || c == ')')
            nest--;
        if (nest == 1 && c >= '0' && c <= '9' && record && out->n > first)
            out->defs[out->n - 1].size *= strtoull(s->tok, NULL, 0);
        if (nest == 0 && c == ';') {
            for (size_t k = first; k < out->n; k++) {
                out->defs[k].end = (size_t)(s->p - s->text);
                out->defs[k].shared_stmt = out->n - first > 1;
            }
            return 0;
        }
        if (nest == 0 && c == '.' && type_size(s->tok))
            elem = type_size(s->tok);
        else if (nest == 0 && c == ',')
            want_name = 1;
        else if (nest == 0 && c == '=' && record && out->n > first)
            out->defs[out->n - 1].initialized = 1;
        else if (nest == 0 && c == '=')
            want_name = 0;
        else if (nest == 0 && want_name && c != '.' && c != '"' && !(c >= '0' && c <= '9') &&
                 id_char(c)) {
            want_name = 0;
            d->size = elem;
            if (record && add_def(out, d, s->tok))
                return -1;
        }
        if (c == '=')
            want_name = 0;
    }
    return 0;
}

int cusim_ptx_scan_syms(const char *text, cusim_ptx_syms *out)
{
    memset(out, 0, sizeof *out);
    scan s = {.text = text, .p = text};
    int is_extern = 0, linkage = CUSIM_LINK_INTERNAL;
    size_t start = SIZE_MAX;
    while (next(&s)) {
        if (start == SIZE_MAX)
            start = (size_t)(s.at - text);
        int rc = 0;
        if (is(&s, ".visible") || is(&s, ".weak") || is(&s, ".common")) {
            linkage = is(&s, ".visible") ? CUSIM_LINK_VISIBLE
                      : is(&s, ".weak")  ? CUSIM_LINK_WEAK
                                         : CUSIM_LINK_COMMON;
            continue;
        } else if (is(&s, ".extern")) {
            is_extern = 1;
            continue;
        }
        cusim_ptx_def d = {.linkage = linkage, .start = start};
        if (is(&s, ".entry") || is(&s, ".func")) {
            out->has_extern_func |= is_extern;
            d.is_func = 1;
            rc = scan_function(&s, &d, !is_extern, out);
        } else if (is(&s, ".global") || is(&s, ".const") || is(&s, ".shared")) {
            /* An .extern .shared array is the launch's dynamic shared
             * memory: one window, rightly shared by every input. */
            rc = scan_vars(&s, &d, !is_extern, out);
        } else if (is(&s, "{")) {
            skip_block(&s); /* .section bodies */
        }
        if (rc) {
            cusim_ptx_syms_free(out);
            return -1;
        }
        is_extern = 0;
        linkage = CUSIM_LINK_INTERNAL;
        start = SIZE_MAX;
    }
    return 0;
}

void cusim_ptx_syms_free(cusim_ptx_syms *syms)
{
    for (size_t i = 0; i < syms->n; i++)
        free(syms->defs[i].name);
    free(syms->defs);
    memset(syms, 0, sizeof *syms);
}

/* ------------------------------------------------------------- resolution */

/* One edit of an input's text: [start, end) becomes with (NULL: blanks). */
typedef struct edit {
    size_t input, start, end;
    char *with; /* the winning declaration, copied from its input */
} edit;

/* An internal name of one input that another input defines too. */
typedef struct renaming {
    size_t input;
    char *from, to[1200];
} renaming;

typedef struct resolver {
    char **texts;
    const cusim_ptx_syms *syms;
    const char *const *names;
    size_t n;
    edit *edits;
    size_t nedits;
    renaming *renames;
    size_t nrenames;
    char *why;
    size_t why_size;
} resolver;

static int push_edit(resolver *r, size_t input, const cusim_ptx_def *x, const char *with,
                     size_t with_len)
{
    if (x->shared_stmt) {
        snprintf(r->why, r->why_size, "'%s' declares '%s' in one statement with other "
                 "variables, and another input defines it too: cuda-sim cannot drop it alone",
                 r->names[input], x->name);
        return -3;
    }
    edit *grown = realloc(r->edits, (r->nedits + 1) * sizeof *grown);
    if (!grown)
        return -2;
    r->edits = grown;
    edit *e = &r->edits[r->nedits++];
    *e = (edit){input, x->start, x->end, NULL};
    if (with && !(e->with = strndup(with, with_len)))
        return -2;
    return 0;
}

static int push_rename(resolver *r, size_t input, const char *name)
{
    renaming *grown = realloc(r->renames, (r->nrenames + 1) * sizeof *grown);
    if (!grown)
        return -2;
    r->renames = grown;
    renaming *m = &r->renames[r->nrenames++];
    m->input = input;
    m->from = (char *)name;
    snprintf(m->to, sizeof m->to, "%s$cusim%zu", name, input);
    return 0;
}

/* Every identifier token `from` of text, as `to`; a new text, or NULL. */
static char *rename_in(const char *text, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), count = 0;
    for (const char *p = strstr(text, from); p; p = strstr(p + fl, from))
        count++;
    char *out = malloc(strlen(text) + count * (tl > fl ? tl - fl : 0) + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p = text; *p;) {
        /* Comments and strings (.file names) are copied as they stand. */
        if ((p[0] == '/' && (p[1] == '/' || p[1] == '*')) || p[0] == '"') {
            const char *e = p[0] == '"' ? strchr(p + 1, '"')
                            : p[1] == '/' ? strchr(p, '\n') : strstr(p + 2, "*/");
            e = e ? e + (p[0] == '/' && p[1] == '*' ? 2 : 1) : p + strlen(p);
            memcpy(o, p, (size_t)(e - p));
            o += e - p;
            p = e;
        } else if (strncmp(p, from, fl) == 0 && (p == text || !id_char(p[-1])) &&
                   (!id_char(p[fl]) || p[fl] == '.')) {
            memcpy(o, to, tl);
            o += tl;
            p += fl;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    return out;
}

/* The definitions of one name, across the inputs: each as (input, def). */
#define MAX_DEFS 256
typedef struct named {
    size_t input[MAX_DEFS];
    const cusim_ptx_def *def[MAX_DEFS];
    size_t n;
} named;

static void collect(const resolver *r, const char *name, named *out)
{
    out->n = 0;
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = 0; k < r->syms[i].n && out->n < MAX_DEFS; k++)
            if (strcmp(r->syms[i].defs[k].name, name) == 0) {
                out->input[out->n] = i;
                out->def[out->n++] = &r->syms[i].defs[k];
            }
}

/* Which linked definition of a name wins: its index, -1 when only inputs'
 * own (internal) definitions have it, -2 with why when a linker would
 * refuse them. */
static int winner(resolver *r, const named *d)
{
    int win = -1, strong = -1;
    for (size_t k = 0; k < d->n; k++) {
        const cusim_ptx_def *x = d->def[k];
        if (x->linkage == CUSIM_LINK_INTERNAL)
            continue;
        if (x->linkage == CUSIM_LINK_VISIBLE && strong >= 0) {
            snprintf(r->why, r->why_size, "'%s' and '%s' both define '%s' (multiple definition)",
                     r->names[d->input[strong]], r->names[d->input[k]], x->name);
            return -2;
        }
        const cusim_ptx_def *w = win < 0 ? NULL : d->def[win];
        if (x->linkage == CUSIM_LINK_VISIBLE)
            strong = (int)k;
        if (!w || x->linkage == CUSIM_LINK_VISIBLE ||
            (w->linkage == CUSIM_LINK_WEAK && x->linkage == CUSIM_LINK_COMMON) ||
            (w->linkage == CUSIM_LINK_COMMON && x->linkage == CUSIM_LINK_COMMON &&
             (x->size > w->size || (x->size == w->size && x->initialized && !w->initialized))))
            win = strong >= 0 ? strong : (int)k;
    }
    for (size_t k = 0; win >= 0 && k < d->n; k++) {
        const cusim_ptx_def *x = d->def[k];
        if (x->linkage == CUSIM_LINK_COMMON && x->initialized && (int)k != win) {
            snprintf(r->why, r->why_size, "'%s' initializes the .common '%s', which '%s' "
                     "defines too, as large or larger", r->names[d->input[k]], x->name,
                     r->names[d->input[win]]);
            return -2;
        }
    }
    return win;
}

/* One name that several inputs define: its renames and edits. */
static int resolve_name(resolver *r, const named *d)
{
    int win = winner(r, d);
    if (win == -2)
        return -1;
    int first_linked = -1, kept = 0;
    const cusim_ptx_def *w = win >= 0 ? d->def[win] : NULL;
    for (size_t k = 0; k < d->n; k++) {
        const cusim_ptx_def *x = d->def[k];
        int rc = 0;
        if (x->linkage == CUSIM_LINK_INTERNAL) {
            /* Each input keeps its own; the first keeps the name, unless
             * a linked definition has it. */
            if (w || kept++)
                rc = push_rename(r, d->input[k], x->name);
        } else if (first_linked < 0) {
            first_linked = (int)k;
            /* The winning variable is declared where the name first is. */
            if ((int)k != win && !w->is_func)
                rc = push_edit(r, d->input[k], x, r->texts[d->input[win]] + w->start,
                               w->end - w->start);
            else if ((int)k != win)
                rc = push_edit(r, d->input[k], x, NULL, 0);
        } else if ((int)k != win || !w->is_func) {
            /* A function stays where it is defined: calls resolve late. */
            rc = push_edit(r, d->input[k], x, NULL, 0);
        }
        if (rc)
            return rc;
    }
    return 0;
}

static int by_input_then_offset_down(const void *a, const void *b)
{
    const edit *x = a, *y = b;
    if (x->input != y->input)
        return x->input < y->input ? -1 : 1;
    return x->start > y->start ? -1 : x->start < y->start;
}

/* Applies one input's edits, last first, keeping every line where it was. */
static int apply_edit(char **text, const edit *e)
{
    size_t len = strlen(*text);
    size_t wl = e->with ? strlen(e->with) : 0;
    char *out = malloc(len + wl + 1);
    if (!out)
        return -2;
    memcpy(out, *text, e->start);
    char *o = out + e->start;
    for (size_t i = 0; i < wl; i++)
        *o++ = e->with[i] == '\n' ? ' ' : e->with[i];
    for (size_t i = e->start; i < e->end; i++)
        if ((*text)[i] == '\n' || !e->with)
            *o++ = (*text)[i] == '\n' ? '\n' : ' ';
    memcpy(o, *text + e->end, len - e->end + 1);
    free(*text);
    *text = out;
    return 0;
}

int cusim_ptx_resolve(char **texts, const cusim_ptx_syms *syms, const char *const *names,
                      size_t n, char *why, size_t why_size)
{
    resolver r = {texts, syms, names, n, NULL, 0, NULL, 0, why, why_size};
    why[0] = 0;
    int rc = 0;
    named *d = malloc(sizeof *d);
    if (!d)
        return -2;
    for (size_t i = 0; i < n && !rc; i++)
        for (size_t k = 0; k < syms[i].n && !rc; k++) {
            collect(&r, syms[i].defs[k].name, d);
            if (d->n > 1 && d->def[0] == &syms[i].defs[k])
                rc = resolve_name(&r, d);
        }
    free(d);
    qsort(r.edits, r.nedits, sizeof *r.edits, by_input_then_offset_down);
    for (size_t k = 0; k < r.nedits; k++) {
        if (!rc)
            rc = apply_edit(&texts[r.edits[k].input], &r.edits[k]);
        free(r.edits[k].with);
    }
    for (size_t k = 0; k < r.nrenames && !rc; k++) {
        char *t = rename_in(texts[r.renames[k].input], r.renames[k].from, r.renames[k].to);
        if (!t)
            rc = -2;
        else {
            free(texts[r.renames[k].input]);
            texts[r.renames[k].input] = t;
        }
    }
    free(r.edits);
    free(r.renames);
    return rc;
}
