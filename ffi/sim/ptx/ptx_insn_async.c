/* The parse families of sm_90's asynchronous-copy machinery: mbarrier,
 * cp.async.bulk[.tensor] (reached from parse_cp), tensormap, and the small
 * warp-level helpers Hopper kernels write beside them: stmatrix, elect.sync,
 * setmaxnreg.  Their executors are ptx_exec_mbar.c, ptx_exec_bulk.c,
 * ptx_exec_mma.c (stmatrix) and ptx_exec_warp.c (elect).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "ptx_insn.h"

/* 1 when every modifier of x is one of the NULL-terminated names (all
 * marked read), else 0. */
static int only(insn *x, const char *const *names)
{
    for (int i = 0; i < x->md.n; i++) {
        int ok = 0;
        for (int k = 0; names[k] && !ok; k++)
            ok = !strcmp(x->md.m[i], names[k]);
        if (!ok)
            return 0;
        x->md.used[i] = 1;
    }
    return 1;
}

/* The shared-memory space of an mbarrier or bulk operand: S_SHARED for
 * .shared, .shared::cta and .shared::cluster (a cluster of one block), else
 * S_GENERIC. */
static int shared_space(insn *x)
{
    return has(&x->md, "shared") | has(&x->md, "shared::cta") | has(&x->md, "shared::cluster")
               ? S_SHARED
               : S_GENERIC;
}

static const char *const MBAR_MODS[] = {
    "init", "inval", "arrive", "expect_tx", "complete_tx", "test_wait", "try_wait", "parity",
    "pending_count", "shared", "shared::cta", "shared::cluster", "release", "acquire", "relaxed",
    "cta", "cluster", "b64", NULL};

/* mbarrier.{init,inval,arrive[.expect_tx],expect_tx,complete_tx,test_wait,
 * try_wait[.parity],pending_count}[.sem][.scope][.space].b64:
 * in.a + in.imm the mbarrier, in.d the destination (state or predicate),
 * in.b the count / tx-count / state / parity, in.c arrive.expect_tx's
 * tx-count; in.mode for waits: bit 0 .parity, bit 1 try_wait. */
int parse_mbarrier(parser *ps, insn *x)
{
    if (!only(x, MBAR_MODS) || x->ty != T_B64)
        return REFUSE("unsupported instruction '%s'", x->opname);
    x->in.space = (uint8_t)shared_space(x);
    mods *md = &x->md;
    if (has(md, "pending_count")) {
        NEEDS(2, 2);
        x->in.op = OP_MBAR_PENDING;
        DST(0, d);
        SRC(1, b, T_B64);
        return 0;
    }
    int k = 1; /* the address operand's index */
    if (has(md, "arrive")) {
        x->in.op = OP_MBAR_ARRIVE;
        int tx = has(md, "expect_tx");
        NEEDS(2 + tx, 3);
        DST(0, d);
        if (tx)
            SRC(2, c, T_U32);
        else if (x->n == 3)
            SRC(2, b, T_U32);
    } else if (has(md, "test_wait") || has(md, "try_wait")) {
        int parity = has(md, "parity"), try = has(md, "try_wait");
        NEEDS(3, 3 + try);
        if (x->n == 4)
            return REFUSE("'%s' with a suspend-time hint is not supported", x->opname);
        x->in.op = OP_MBAR_WAIT;
        x->in.mode = (uint8_t)(parity | try << 1);
        DST(0, d);
        SRC(2, b, parity ? T_U32 : T_B64);
    } else if (has(md, "init") || has(md, "expect_tx") || has(md, "complete_tx") ||
               has(md, "inval")) {
        int inval = has(md, "inval");
        NEEDS(1 + !inval, 1 + !inval);
        x->in.op = inval ? OP_MBAR_INVAL : has(md, "init") ? OP_MBAR_INIT
                   : has(md, "expect_tx")                 ? OP_MBAR_EXPECT_TX
                                                          : OP_MBAR_COMPLETE_TX;
        if (!inval)
            SRC(1, b, T_U32);
        k = 0;
    } else {
        return REFUSE("unsupported instruction '%s'", x->opname);
    }
    return x->rc ? x->rc : ptx_addr_operand(ps, &x->ops[k], x->line, &x->in);
}

/* [tensor-map, {c0, ...}]: the map's address in in.b + in.aux, the
 * coordinates in in.v[0..3] and in.d2 (the fifth); in.vec the rank. */
static int tensor_operand(parser *ps, insn *x, const opnd *o, int rank)
{
    if (o->kind != O_ADDR || o->nv != rank || !o->name[0])
        return REFUSE("'%s' needs [tensor-map, {%d coordinates}]", x->opname, rank);
    opnd base = *o;
    base.nv = 0;
    pinsn t = x->in;
    if (ptx_addr_operand(ps, &base, x->line, &t))
        return -1;
    if (t.imm != (int32_t)t.imm)
        return REFUSE("'%s': tensor-map offset out of range", x->opname);
    x->in.b = t.a;
    x->in.aux = (int32_t)t.imm;
    for (int i = 0; i < rank; i++) {
        opnd c = {.kind = O_NAME};
        snprintf(c.name, sizeof c.name, "%s", o->vnames[i]);
        if (!ptx_reg_lookup(ps, c.name, &(uint32_t){0}))
            return REFUSE("'%s': a coordinate must be a register", x->opname);
        x->rc = x->rc ? x->rc
                      : ptx_src_slot(ps, &c, T_S32, x->line, i < 4 ? &x->in.v[i] : &x->in.d2);
    }
    x->in.vec = (uint8_t)rank;
    return x->rc;
}

/* The mbarrier operand of a copy that completes one: its slot in in.e, its
 * offset in in.target. */
static int mbar_operand(parser *ps, insn *x, const opnd *o)
{
    pinsn t = x->in;
    if (ptx_addr_operand(ps, o, x->line, &t))
        return -1;
    x->in.e = t.a;
    x->in.target = (int32_t)t.imm;
    return 0;
}

static const char *const BULK_MODS[] = {
    "async", "bulk", "tensor", "1d", "2d", "3d", "4d", "5d", "tile", "im2col", "shared",
    "shared::cta", "shared::cluster", "global", "mbarrier::complete_tx::bytes", "bulk_group",
    "prefetch", "L2", NULL};

/* The im2col offsets of a tensor load or prefetch, operand k: a brace of
 * rank - 2 16-bit registers (W, H, D) into in.c, in.d and in.f. */
static int im2col_offsets(parser *ps, insn *x, int k, int rank)
{
    const opnd *o = &x->ops[k];
    uint32_t slots[4] = {PTX_NONE, PTX_NONE, PTX_NONE, PTX_NONE};
    if (o->kind == O_NAME && rank == 3)
        x->rc = ptx_src_slot(ps, o, T_U16, x->line, &slots[0]);
    else if (o->kind == O_VEC && o->nv == rank - 2)
        x->rc = ptx_vec_slots(ps, o, T_U16, x->line, 0, slots);
    else
        return REFUSE("'%s' needs {%d im2col offsets}", x->opname, rank - 2);
    x->in.c = slots[0];
    x->in.d = slots[1];
    x->in.f = slots[2];
    return x->rc;
}

/* cp.async.bulk.prefetch.L2.global [src], size
 * cp.async.bulk.prefetch.tensor.Nd.L2.global[.tile|.im2col] [map, {c...}][, {offsets}]
 * hints, run as checked no-ops: in.mode 0 the contiguous form (in.a + in.imm
 * the address, in.c the size), 1 a tile-mode box, 2 an im2col one. */
static int parse_bulk_prefetch(parser *ps, insn *x, int rank)
{
    int tensor = has(&x->md, "tensor"), i2c = has(&x->md, "im2col");
    if (!only(x, BULK_MODS) || x->nt || !has(&x->md, "L2") || !has(&x->md, "global") ||
        tensor != (rank > 0) || has(&x->md, "shared") || has(&x->md, "shared::cta") ||
        has(&x->md, "shared::cluster") || has(&x->md, "mbarrier::complete_tx::bytes") ||
        has(&x->md, "bulk_group") || (i2c && (rank < 3 || has(&x->md, "tile"))))
        return REFUSE("unsupported instruction '%s'", x->opname);
    x->in.op = OP_BULK_PREFETCH;
    x->in.mode = (uint8_t)(tensor + i2c);
    if (!tensor) {
        NEEDS(2, 2);
        SRC(1, c, T_U32);
        return x->rc ? x->rc : ptx_addr_operand(ps, &x->ops[0], x->line, &x->in);
    }
    NEEDS(1 + i2c, 1 + i2c);
    if (tensor_operand(ps, x, &x->ops[0], rank))
        return -1;
    return i2c ? im2col_offsets(ps, x, 1, rank) : 0;
}

/* cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
 *     [dst], [src], size, [mbar]
 * cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size
 * cp.async.bulk.tensor.Nd.shared::cluster.global[.tile|.im2col].mbarrier::complete_tx::bytes
 *     [dst], [map, {c...}], [mbar][, {offsets}]   (.im2col: 3d-5d, rank - 2 offsets)
 * cp.async.bulk.tensor.Nd.global.shared::cta[.tile].bulk_group [map, {c...}], [src]
 * in.mode 0 a load into shared memory (completes in.e's mbarrier), 1 a
 * store to global memory (a bulk group's); in.flags 1 an im2col load. */
static int parse_bulk_copy(parser *ps, insn *x)
{
    int tensor = has(&x->md, "tensor"), rank = 0;
    static const char dims[5][3] = {"1d", "2d", "3d", "4d", "5d"};
    for (int r = 0; r < 5; r++)
        rank = has(&x->md, dims[r]) ? r + 1 : rank;
    for (int i = 0; i < x->md.n; i++)
        if (!strncmp(x->md.m[i], "multicast", 9))
            return REFUSE("'%s': .%s copies to the blocks of a cluster, and cuda-sim's device "
                          "(compute capability 8.0) has no clusters of more than one block",
                          x->opname, x->md.m[i]);
    if (has(&x->md, "prefetch"))
        return parse_bulk_prefetch(ps, x, rank);
    int g = -1, s = -1, mb = has(&x->md, "mbarrier::complete_tx::bytes");
    int i2c = has(&x->md, "im2col");
    for (int i = 0; i < x->md.n; i++) {
        if (!strcmp(x->md.m[i], "global"))
            g = i;
        else if (!strncmp(x->md.m[i], "shared", 6))
            s = s < 0 ? i : 99;
    }
    int load = s >= 0 && s < g, store = g >= 0 && g < s && s < 99;
    if (!only(x, BULK_MODS) || x->nt || (!load && !store) || tensor != (rank > 0) ||
        has(&x->md, "L2") || (load && (!mb || has(&x->md, "bulk_group"))) ||
        (store && (mb || !has(&x->md, "bulk_group"))) ||
        (i2c && (!load || rank < 3 || has(&x->md, "tile"))))
        return REFUSE("unsupported instruction '%s'", x->opname);
    x->in.op = tensor ? OP_BULK_TENSOR : OP_BULK_COPY;
    x->in.mode = (uint8_t)store;
    x->in.flags = (uint8_t)(i2c ? FL_IM2COL : 0);
    x->in.space = S_SHARED;
    ps->m->uses_wgmma = 1; /* the async proxy reads shared memory: track the generic writes */
    if (tensor) {
        NEEDS(2 + load + i2c, 2 + load + i2c);
        const opnd *sh = &x->ops[load ? 0 : 1];
        if (tensor_operand(ps, x, &x->ops[load ? 1 : 0], rank) ||
            ptx_addr_operand(ps, sh, x->line, &x->in) ||
            (i2c && im2col_offsets(ps, x, 3, rank)))
            return -1;
        return load ? mbar_operand(ps, x, &x->ops[2]) : 0;
    }
    NEEDS(3 + load, 3 + load);
    if (copy_addresses(ps, x, 0, 1))
        return -1;
    SRC(2, c, T_U32);
    return x->rc ? x->rc : load ? mbar_operand(ps, x, &x->ops[3]) : 0;
}

/* cp.async.bulk.commit_group, cp.async.bulk.wait_group[.read] N, and the copies. */
int parse_bulk(parser *ps, insn *x)
{
    static const char *const group[] = {"async", "bulk", "commit_group", NULL};
    static const char *const wait[] = {"async", "bulk", "wait_group", "read", NULL};
    if (has(&x->md, "commit_group")) {
        NEEDS(0, 0);
        if (!only(x, group))
            return REFUSE("unsupported instruction '%s'", x->opname);
        x->in.op = OP_BULK_COMMIT;
        return 0;
    }
    if (has(&x->md, "wait_group")) {
        NEEDS(1, 1);
        x->in.mode = (uint8_t)has(&x->md, "read");
        if (!only(x, wait) || x->ops[0].kind != O_INT || x->ops[0].bits > 63)
            return REFUSE("unsupported instruction '%s'", x->opname);
        x->in.op = OP_BULK_WAIT;
        x->in.imm = (int64_t)x->ops[0].bits;
        return 0;
    }
    return parse_bulk_copy(ps, x);
}

static const char *const TMAP_FIELDS[] = {
    "global_address", "rank", "box_dim", "global_dim", "global_stride", "element_stride",
    "elemtype", "interleave_layout", "swizzle_mode", "swizzle_atomicity", "fill_mode", NULL};

/* tensormap.replace.tile.<field>.{global,shared::cta}.b1024.{b32,b64}
 *     [map], [ord,] value   (in.mode the field, TMAP_*; in.b ord; in.c value)
 * tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.
 *     {cta,cluster,gpu,sys}.sync.aligned [dst], [src], 128 */
int parse_tensormap(parser *ps, insn *x)
{
    if (has(&x->md, "cp_fenceproxy")) {
        static const char *const cp[] = {"cp_fenceproxy", "global", "shared::cta",
                                         "tensormap::generic", "release", "cta", "cluster",
                                         "gpu", "sys", "sync", "aligned", NULL};
        NEEDS(3, 3);
        if (!only(x, cp) || x->ops[2].kind != O_INT || x->ops[2].bits != 128)
            return REFUSE("unsupported instruction '%s'", x->opname);
        x->in.op = OP_TMAP_COPY;
        pinsn src = x->in;
        if (ptx_addr_operand(ps, &x->ops[1], x->line, &src) ||
            ptx_addr_operand(ps, &x->ops[0], x->line, &x->in))
            return -1;
        x->in.b = src.a;
        x->in.aux = (int32_t)src.imm;
        return 0;
    }
    int field = 0;
    for (int i = 0; TMAP_FIELDS[i]; i++)
        field = has(&x->md, TMAP_FIELDS[i]) ? i + 1 : field;
    x->in.space = (uint8_t)(has(&x->md, "shared::cta") ? S_SHARED : S_GLOBAL);
    int ord = field >= TMAP_BOX_DIM && field <= TMAP_ELEMENT_STRIDE;
    int wide = field == TMAP_GLOBAL_ADDRESS || field == TMAP_GLOBAL_STRIDE;
    if (!has(&x->md, "replace") || !has(&x->md, "tile") || !has(&x->md, "b1024") || !field ||
        (!has(&x->md, "global") && x->in.space != S_SHARED) || x->ty != (wide ? T_B64 : T_B32))
        return REFUSE("unsupported instruction '%s'", x->opname);
    NEEDS(2 + ord, 2 + ord);
    x->in.op = OP_TMAP_REPLACE;
    x->in.mode = (uint8_t)field;
    if (ord) {
        if (x->ops[1].kind != O_INT || x->ops[1].bits > 4)
            return REFUSE("'%s': the ordinal must be a constant 0..4", x->opname);
        x->in.imm = 0;
        x->in.vec = (uint8_t)x->ops[1].bits;
    }
    SRC(1 + ord, c, x->ty);
    return x->rc ? x->rc : ptx_addr_operand(ps, &x->ops[0], x->line, &x->in);
}

/* elect.sync d|p, membermask (d may be the sink _). */
int parse_elect(parser *ps, insn *x)
{
    static const char *const mods_ok[] = {"sync", NULL};
    NEEDS(2, 2);
    if (!only(x, mods_ok) || x->nt || !x->ops[0].pair[0])
        return REFUSE("unsupported instruction '%s'", x->opname);
    DST(0, d);
    opnd p = {.kind = O_NAME};
    snprintf(p.name, sizeof p.name, "%s", x->ops[0].pair);
    x->rc = x->rc ? x->rc : ptx_dst_slot(ps, &p, x->line, &x->in.d2);
    SRC(1, a, T_B32);
    return 0;
}

/* setmaxnreg.{inc,dec}.sync.aligned.u32 count: only register allocation,
 * which the interpreter has none of; the count must be 24..256, a multiple
 * of 8. */
int parse_setmaxnreg(parser *ps, insn *x)
{
    static const char *const mods_ok[] = {"inc", "dec", "sync", "aligned", "u32", NULL};
    int dir = has(&x->md, "inc") + has(&x->md, "dec");
    NEEDS(1, 1);
    if (!only(x, mods_ok) || dir != 1 || !has(&x->md, "sync") || !has(&x->md, "aligned") ||
        x->ty != T_U32)
        return REFUSE("unsupported instruction '%s'", x->opname);
    const opnd *o = &x->ops[0];
    if (o->kind != O_INT || o->bits < 24 || o->bits > 256 || o->bits % 8)
        return REFUSE("'%s': the register count must be a constant in 24..256, a multiple of 8",
                      x->opname);
    x->in.imm = (int64_t)o->bits;
    return 0;
}

/* stmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans][.shared[::cta]].b16 [a], r:
 * as ldmatrix, the other way. */
int parse_stmatrix(parser *ps, insn *x)
{
    NEEDS(2, 2);
    int num = m8n8_matrices(x);
    if (!num)
        return REFUSE("unsupported instruction '%s'", x->opname);
    x->rc = ptx_addr_operand(ps, &x->ops[0], x->line, &x->in);
    if (num == 1 && x->ops[1].kind == O_NAME)
        SRC(1, v[0], T_B32);
    else if (x->ops[1].kind != O_VEC || x->ops[1].nv != num)
        return REFUSE("'%s' needs a vector of %d", x->opname, num);
    else
        x->rc = x->rc ? x->rc : ptx_vec_slots(ps, &x->ops[1], T_B32, x->line, 0, x->in.v);
    return 0;
}
