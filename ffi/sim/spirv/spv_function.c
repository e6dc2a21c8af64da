/* SPIR-V loader: compiling one function into the register form.  Pass 1
 * gives every parameter and result its slots (spv_promote.c keeps some
 * Function variables in slots); pass 2 hands each instruction to its
 * family's handler (spv_opcodes.def says which); last, branches get their
 * targets, through a stub of phi copies where the target block has phis. */
#include <stdlib.h>

#include "spv_load.h"

/* ------------------------------------------------------- control flow */

/* Debug info, structured-control hints, lifetimes, fences. */
static void c_nop(loader *L, fnctx *c)
{
    (void)L;
    (void)c;
}

static void c_label(loader *L, fnctx *c)
{
    c->cur_label = word(L, c->at, 1);
    id(L, c->cur_label)->cidx = L->p->ncode;
}

static void c_branch(loader *L, fnctx *c)
{
    spv_ins *i = spvl_emit(L, X_JMP, 1, 0, 0, 0, 0, 0, 0);
    spvl_branch_to(L, &c->fs, (uint32_t)(i - L->p->code), 0, 0, c->cur_label, word(L, c->at, 1));
}

static void c_branchconditional(loader *L, fnctx *c)
{
    spv_ins *i = spvl_emit(L, X_BR, 1, 0, 0, spvl_slot(L, word(L, c->at, 1)), 0, 0, 0);
    uint32_t ix = (uint32_t)(i - L->p->code);
    spvl_branch_to(L, &c->fs, ix, 1, 0, c->cur_label, word(L, c->at, 2));
    spvl_branch_to(L, &c->fs, ix, 2, 0, c->cur_label, word(L, c->at, 3));
}

/* aux = count, default pc, then (lo, hi, pc) per case. */
static void c_switch(loader *L, fnctx *c)
{
    uint32_t at = c->at;
    uint32_t sel = word(L, at, 1);
    uint32_t sw = scalar(L, value_type(L, sel))->width;
    uint32_t lit = sw == 64 ? 2 : 1;
    uint32_t ncase = (c->cnt - 3) / (lit + 1);
    uint32_t list = spvl_aux_push(L, ncase);
    uint32_t def = spvl_aux_push(L, 0);
    spvl_branch_to(L, &c->fs, def, 0, 1, c->cur_label, word(L, at, 2));
    for (uint32_t k = 0; k < ncase; k++) {
        uint32_t base = 3 + k * (lit + 1);
        /* Literals of narrow types may come sign-extended: keep the
         * selector's width, as the selector is kept. */
        uint64_t v = word(L, at, base) | (lit == 2 ? (uint64_t)word(L, at, base + 1) << 32 : 0);
        v &= sim_mask(sw);
        spvl_aux_push(L, (uint32_t)v);
        spvl_aux_push(L, (uint32_t)(v >> 32));
        uint32_t tgt = spvl_aux_push(L, 0);
        spvl_branch_to(L, &c->fs, tgt, 0, 1, c->cur_label, word(L, at, base + lit));
    }
    spvl_emit(L, X_SWITCH, 1, (uint8_t)sw, 0, spvl_slot(L, sel), list, 0, 0);
}

static void c_return(loader *L, fnctx *c)
{
    (void)c;
    spvl_emit(L, X_RET, 0, 0, 0, SPV_NONE, 0, 0, 0);
}

static void c_returnvalue(loader *L, fnctx *c)
{
    uint32_t v = word(L, c->at, 1);
    spvl_emit(L, X_RET, (uint8_t)comps(L, value_type(L, v)), 0, 0, spvl_slot(L, v), 0, 0, 0);
}

static void c_unreachable(loader *L, fnctx *c)
{
    (void)c;
    spvl_emit(L, X_UNREACHABLE, 1, 0, 0, 0, 0, 0, 0);
}

static void c_call(loader *L, fnctx *c)
{
    uint32_t callee = word(L, c->at, 3);
    idrec *cr = id(L, callee);
    if (cr->kind != K_FUNC)
        MALFORMED("call of a non-function");
    if (cr->cidx == SPV_NONE)
        UNSUPPORTED("call of function %u, which the module imports but does not define", callee);
    uint32_t list = L->p->naux;
    for (uint32_t i = 4; i < c->cnt; i++) {
        uint32_t arg = L->w[c->at + i];
        spvl_aux_push(L, spvl_slot(L, arg));
        spvl_aux_push(L, comps(L, value_type(L, arg)));
    }
    spvl_emit(L, X_CALL, (uint8_t)(c->cnt - 4), 0, c->r ? c->d : SPV_NONE, cr->cidx, list, 0, 0);
}

/* ------------------------------------------------------------ dispatch */

static spvl_compile_fn *const k_compile[F_COUNT] = {
    [F_NOP] = c_nop,
    [F_LABEL] = c_label,
    [F_PHI] = c_nop, /* its copies are made on the incoming edges */
    [F_UNDEF] = spvl_c_undef,
    [F_VARIABLE] = spvl_c_variable,
    [F_LOAD] = spvl_c_load,
    [F_STORE] = spvl_c_store,
    [F_COPYMEMORY] = spvl_c_copymemory,
    [F_COPYMEMORYSIZED] = spvl_c_copymemorysized,
    [F_ACCESSCHAIN] = spvl_c_accesschain,
    [F_ATOMIC] = spvl_c_atomic,
    [F_COPY] = spvl_c_copy,
    [F_BITCAST] = spvl_c_bitcast,
    [F_CONVERT] = spvl_c_convert,
    [F_IUNARY] = spvl_c_iunary,
    [F_FUNARY] = spvl_c_funary,
    [F_IBINARY] = spvl_c_ibinary,
    [F_FBINARY] = spvl_c_fbinary,
    [F_COMPARE] = spvl_c_compare,
    [F_FCOMPARE] = spvl_c_fcompare,
    [F_FCLASS] = spvl_c_fclass,
    [F_BITS] = spvl_c_bits,
    [F_DOT] = spvl_c_dot,
    [F_ANYALL] = spvl_c_anyall,
    [F_SELECT] = spvl_c_select,
    [F_VEXTRACT] = spvl_c_vextract,
    [F_VINSERT] = spvl_c_vinsert,
    [F_VSHUFFLE] = spvl_c_vshuffle,
    [F_CONSTRUCT] = spvl_c_construct,
    [F_EXTRACT] = spvl_c_extract,
    [F_INSERT] = spvl_c_insert,
    [F_EXTINST] = spvl_c_extinst,
    [F_BARRIER] = spvl_c_barrier,
    [F_GROUPOP] = spvl_c_groupop,
    [F_GROUPVALUE] = spvl_c_groupvalue,
    [F_GROUPPAIR] = spvl_c_grouppair,
    [F_GROUPELECT] = spvl_c_groupelect,
    [F_INTELSHUFFLE] = spvl_c_intelshuffle,
    [F_INTELSHUFFLEREL] = spvl_c_intelshufflerel,
    [F_BRANCH] = c_branch,
    [F_BRANCHCONDITIONAL] = c_branchconditional,
    [F_SWITCH] = c_switch,
    [F_RETURN] = c_return,
    [F_RETURNVALUE] = c_returnvalue,
    [F_UNREACHABLE] = c_unreachable,
    [F_CALL] = c_call,
};

/* ------------------------------------------------------------- halves */

/* The families that run half (16-bit float) values exactly: they move their
 * bits, or compute them as IEEE half (X_F*16, conversions, comparisons). */
static int half_exact(uint8_t fn)
{
    switch (fn) {
    case F_NOP: case F_LABEL: case F_PHI: case F_UNDEF: case F_VARIABLE: case F_LOAD:
    case F_STORE: case F_COPYMEMORY: case F_COPYMEMORYSIZED: case F_ACCESSCHAIN: case F_COPY:
    case F_BITCAST: case F_CONVERT: case F_FUNARY: case F_FBINARY: case F_FCOMPARE:
    case F_FCLASS: case F_DOT: case F_SELECT: case F_VEXTRACT: case F_VINSERT: case F_VSHUFFLE:
    case F_CONSTRUCT: case F_EXTRACT: case F_INSERT: case F_BRANCH: case F_BRANCHCONDITIONAL:
    case F_SWITCH: case F_RETURN: case F_RETURNVALUE: case F_UNREACHABLE: case F_CALL:
    /* Collectives: broadcasts and shuffles move bits, the float reductions
     * and scans round each step to half (spv_group.c). */
    case F_GROUPOP: case F_GROUPVALUE: case F_GROUPPAIR: case F_GROUPELECT:
    case F_INTELSHUFFLE: case F_INTELSHUFFLEREL:
        return 1;
    default:
        return 0;
    }
}

static int half_type(loader *L, uint32_t t)
{
    if (t == 0 || t >= L->bound || L->ids[t].kind != K_TYPE)
        return 0;
    const ty *y = &L->types[t];
    if (y->kind == T_VEC)
        y = type_of(L, y->elem);
    return y->kind == T_FLOAT && y->width == 16;
}

static int half_value(loader *L, uint32_t v)
{
    if (v == 0 || v >= L->bound)
        return 0;
    const idrec *r = &L->ids[v];
    return (r->kind == K_VALUE || r->kind == K_CONST || r->kind == K_UNDEF) &&
           half_type(L, r->type);
}

/* Refuses an instruction on half values that its family would not compute
 * as IEEE half (it would run them as integers or as the wrong float); an
 * OpenCL.std instruction, by its number (spvl_ext_half). */
static void check_half(loader *L, const fnctx *c)
{
    if (half_exact(c->info->fn))
        return;
    int has_result = spvl_has_result(c->op);
    int half = has_result && half_type(L, L->w[c->at + 1]);
    /* OpExtInst: its set and instruction number are not values. */
    uint32_t first = !has_result ? 1 : c->info->fn == F_EXTINST ? 5 : 3;
    for (uint32_t i = first; !half && i < c->cnt; i++)
        half = half_value(L, L->w[c->at + i]);
    if (half && c->info->fn == F_EXTINST)
        spvl_ext_half(L, c);
    else if (half)
        UNSUPPORTED("%s on half (16-bit float) values is not supported by levelzero-sim",
                    c->info->name);
}

/* Pass 2: each instruction of the body to its family's handler. */
static void compile_body(loader *L, fnctx *c, uint32_t body)
{
    for (uint32_t at = body; at && at < L->nw; at += op_count(L, at)) {
        L->pos = at;
        unsigned op = opcode_at(L, at);
        if (op == SPV_OpFunctionEnd)
            break;
        c->at = at;
        c->op = op;
        c->cnt = op_count(L, at);
        c->r = NULL;
        c->rt = c->d = c->n = 0;
        if (c->cnt >= 3 && id(L, L->w[at + 2])->slot_fn == L->cur_fn &&
            id(L, L->w[at + 2])->pos == at) {
            c->rt = L->w[at + 1];
            c->r = id(L, L->w[at + 2]);
            c->d = c->r->slot;
            ty *t = type_of(L, c->rt);
            c->n = t->kind == T_ARRAY || t->kind == T_STRUCT ? comps(L, c->rt)
                   : t->kind == T_VEC                      ? t->n
                                                           : 1;
        }
        c->info = spv_opinfo_of(op);
        spvl_compile_fn *handler = c->info ? k_compile[c->info->fn] : NULL;
        if (!handler) {
            char buf[32];
            UNSUPPORTED("SPIR-V instruction %s is not supported by levelzero-sim",
                        spv_opname(op, buf, sizeof buf));
        }
        check_half(L, c);
        handler(L, c);
    }
}

/* ----------------------------------------------------------- phi edges */

/* The stub of copies for the nphi phis at `at` along edge pe, then a jump to
 * the target: parallel copies, through temporaries when there are several. */
static void phi_stub(loader *L, const pending *pe, uint32_t at, uint32_t nphi, uint32_t target)
{
    uint32_t *srcs = calloc(2 * nphi, sizeof *srcs);
    if (!srcs)
        spvl_fail(L, SPV_LOAD_NO_MEMORY, "out of host memory");
    uint32_t s = at;
    for (uint32_t i = 0; i < nphi; i++, s += op_count(L, s)) {
        L->pos = s;
        uint32_t src = SPV_NONE;
        for (uint32_t j = 3; j + 1 < op_count(L, s); j += 2)
            if (L->w[s + j + 1] == pe->from)
                src = L->w[s + j];
        if (src == SPV_NONE) {
            free(srcs);
            MALFORMED("phi has no value for predecessor %u", pe->from);
        }
        srcs[i] = spvl_slot(L, src);
        srcs[nphi + i] = nphi > 1 ? spvl_new_slots(L, comps(L, L->w[s + 1])) : SPV_NONE;
    }
    s = at;
    for (uint32_t i = 0; i < nphi; i++, s += op_count(L, s)) {
        uint8_t cn = (uint8_t)comps(L, L->w[s + 1]);
        uint32_t to = nphi > 1 ? srcs[nphi + i] : id(L, L->w[s + 2])->slot;
        spvl_emit(L, X_MOV, cn, 0, to, srcs[i], 0, 0, 0);
    }
    s = at;
    for (uint32_t i = 0; nphi > 1 && i < nphi; i++, s += op_count(L, s)) {
        uint8_t cn = (uint8_t)comps(L, L->w[s + 1]);
        spvl_emit(L, X_MOV, cn, 0, id(L, L->w[s + 2])->slot, srcs[nphi + i], 0, 0, 0);
    }
    free(srcs);
    spvl_emit(L, X_JMP, 1, 0, 0, target, 0, 0, 0);
}

/* Where edge pe lands: its target label's pc, or a stub of phi copies. */
static uint32_t edge_dest(loader *L, const pending *pe, uint32_t body)
{
    uint32_t target = id(L, pe->to)->cidx;
    /* The phis that follow the target label. */
    uint32_t at = 0;
    for (uint32_t s = body; s < L->nw; s += op_count(L, s)) {
        unsigned op = opcode_at(L, s);
        if (op == SPV_OpFunctionEnd)
            break;
        if (op == SPV_OpLabel && L->w[s + 1] == pe->to) {
            at = s + op_count(L, s);
            break;
        }
    }
    if (!at)
        MALFORMED("branch to label %u outside the function", pe->to);
    uint32_t nphi = 0;
    for (uint32_t s = at; opcode_at(L, s) == SPV_OpPhi; s += op_count(L, s))
        nphi++;
    if (!nphi)
        return target;
    uint32_t dest = L->p->ncode;
    phi_stub(L, pe, at, nphi, target);
    return dest;
}

static void resolve_edges(loader *L, fnstate *fs, uint32_t body)
{
    spv_program *p = L->p;
    for (uint32_t k = 0; k < fs->npend; k++) {
        pending *pe = &fs->pend[k];
        uint32_t dest = edge_dest(L, pe, body);
        if (pe->in_aux) {
            p->aux[pe->at] = dest;
        } else {
            spv_ins *i = &p->code[pe->at];
            if (pe->field == 0)
                i->a = dest;
            else if (pe->field == 1)
                i->b = dest;
            else
                i->c = dest;
        }
    }
}

/* ------------------------------------------------------------ passes */

/* Pass 1 for the parameters (first, in order); returns where the body starts. */
static uint32_t bind_params(loader *L, spv_func *f, uint32_t q)
{
    for (uint32_t at = q; at < L->nw; at += op_count(L, at)) {
        if (opcode_at(L, at) != SPV_OpFunctionParameter)
            return at;
        uint32_t rid = word(L, at, 2);
        idrec *r = id(L, rid);
        r->kind = K_VALUE;
        r->type = word(L, at, 1);
        r->slot = spvl_new_slots(L, comps(L, r->type));
        r->slot_fn = L->cur_fn;
        f->nparams++;
    }
    return 0;
}

void spvl_compile_function(loader *L, uint32_t fidx)
{
    spv_program *p = L->p;
    spv_func *f = &p->funcs[fidx];
    L->cur_fn = fidx + 1;
    L->nslots = 0;
    uint32_t pos = L->func_begin[fidx];
    f->code = p->ncode;
    f->templ = p->npool;
    f->fix = p->nfixups;
    f->ret_n = comps(L, word(L, pos, 1));

    uint32_t q = pos + op_count(L, pos);
    uint32_t body = bind_params(L, f, q);
    if (!body || opcode_at(L, body) == SPV_OpFunctionEnd)
        MALFORMED("function without a body");
    spvl_promote_variables(L, body);
    f->param_slot = p->naux;
    uint32_t at = q;
    for (uint32_t i = 0; i < f->nparams; i++, at += op_count(L, at))
        spvl_aux_push(L, comps(L, word(L, at, 1)));
    f->const_base = L->nslots;
    L->pass2 = 1;

    fnctx c = {.f = f};
    compile_body(L, &c, body);
    resolve_edges(L, &c.fs, body);
    free(c.fs.pend);
    f->nslots = L->nslots;
    L->cur_fn = 0;
    L->pass2 = 0;
}
