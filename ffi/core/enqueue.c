/* The compiled enqueue: Stream.enqueue in C (aruntime/_enqueue.py).
 *
 * Every copy, memset and launch passes through Stream.enqueue, and in Python
 * its two frames (the stream's, then the completion policy's queue), the
 * Completion's constructor and the lock calls cost more than the driver call
 * itself.  An Enqueuer is one stream's copy of that path: it holds what the
 * stream would look up on every op (its state, handle, lock and policy
 * hooks) and does exactly what the Python path does for a plain stream:
 *
 *   take the stream's lock; refuse nothing itself: a closing stream, a
 *   capture, a freed operand, a recorded call site or a trace goes to the
 *   Python path (``slow``), which owns every refusal and every message;
 *   give the previous op (the tail) its marker if somebody kept its
 *   Completion, else strand its buffers for the next marker; make the
 *   driver call; then build the op's Completion and make it the new tail.
 *
 * On a stream with race checking on, it builds the Op the checker reads and
 * hands it to the checker's ``run``, as Stream.enqueue does.  Anything else
 * the Python path does (a failed call, a driver that marks every op, the
 * synchronous mock's ordered errors) is handed back to the policy's own
 * Python methods, so the rules live in one place.  Nothing here
 * decides an outcome: tests/test_enqueue.py runs the same ops both
 * ways and compares.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdint.h>

#include "direct.h"
#include "front.h"
#include "hostview.h"
#include "lock.h"
#include "objects.h"
#include "ranges.h"
#include "slots.h"
#include "mockcopy.h"
#include "tailprobe.h"
#include "zeappend.h"
#include "settle.h"
#include "site.h"

/* The Completion slots this file writes, in the order of COMPLETION_SLOTS. */
enum {
    SLOT_OP,
    SLOT_HOOKS,
    SLOT_RESULT,
    SLOT_ERROR,
    SLOT_STATE,
    SLOT_KEEPALIVE,
    SLOT_VIEWS,
    SLOT_CALLBACKS,
    SLOT_LOCK,
    SLOT_SEEN,
    SLOT_SEQ,
    SLOT_COUNT
};

static const char *const COMPLETION_SLOTS[SLOT_COUNT] = {
    "_op", "_hooks", "_result", "_error", "_state", "_keepalive",
    "_views", "_callbacks", "_lock", "_seen", "_seq",
};

/* The Op slots, in the order of OP_SLOTS. */
enum { OP_KIND, OP_CALL, OP_ARGS, OP_KEEPALIVE, OP_VIEWS, OP_NBYTES, OP_RESULT, OP_KERNEL,
       OP_READS, OP_WRITES, OP_HELD, OP_COUNT };

static const char *const OP_SLOTS[OP_COUNT] = {
    "kind", "call", "args", "keepalive", "views", "nbytes", "result", "kernel",
    "_reads", "_writes", "held",
};

/* Set once by configure(): what every Enqueuer shares. */
static struct {
    Layout completion;
    Layout op;
    PyObject *pending;       /* the Completion state "pending" */
    PyObject *allocate_lock; /* threading.Lock */
    PyObject *next_seq;      /* _completion.next_seq */
    PyObject *seqs;          /* the iterator next_seq is the __next__ of, or NULL */
    PyObject *nothing_held;  /* _submit._NOTHING_HELD */
    PyObject *driver_error;  /* aruntime.DriverError */
    PyObject *sites;         /* aruntime._sites's dict (its ``recording`` flag) */
    PyObject *one;
    PyObject *empty; /* () */
    PyObject *empty_pair; /* ((), ()) */
    PyObject *no_lock;    /* _completion._NO_LOCK: a shared finished Completion's lock */
    PyObject *zero;
    Py_ssize_t stranded_kept;
} shared;

static struct {
    PyObject *freed, *recording, *recorder, *started_waiter, *public;
} name;

/* The StreamState slots this file reads and writes, in the order of FIELD_NAMES. */
enum { F_REFUSING, F_CAPTURING, F_TAIL, F_TAIL_HELD, F_STRANDED, F_DROPPED, F_DROPPED_FIRST,
       F_DEFER_MARKERS, F_WAITER, F_ORDERING, F_COUNT };

static const char *const FIELD_NAMES[F_COUNT] = {
    "refusing", "capturing", "tail", "tail_held", "stranded", "dropped", "dropped_first",
    "defer_markers", "waiter", "ordering",
};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *stream_ref;  /* weakref to the Stream: the slow path's ``self`` */
    PyObject *slow;        /* the Python Stream.enqueue, unbound */
    PyObject *state;       /* the StreamState */
    Py_ssize_t field[F_COUNT]; /* where its slots of FIELD_NAMES are, from its class */
    PyObject *handle;      /* the driver stream */
    PyObject *lock;        /* state.lock: a StreamLock is taken in C */
    PyObject *acquire;     /* any other lock's acquire, else NULL */
    PyObject *release;     /* any other lock's release, else NULL */
    PyObject *tracing;     /* the policy's Tracing (its ``recorder``) */
    PyObject *failed;      /* the policy's Completion of a failed call */
    PyObject *mark;        /* async: Marking.mark; sync: None */
    PyObject *mark_now;    /* async: the policy's _mark_now; sync: its _settled */
    PyObject *done;        /* sync: the shared finished Completion per kind */
    PyObject *hazards;     /* the race checker's ``run(op, stream, run)``, or None */
    PyObject *run;         /* the policy's ``run(op, stream)``, which the checker calls */
    uintptr_t address;     /* the driver stream's raw handle for a DirectCall, or 0 */
    /* Every Completion made here shares it: a Completion's lock guards only
     * its own state for a few lines, never while taking another's, so one
     * lock per stream serves as well as one each, without a lock made and
     * freed per op. */
    PyObject *completion_lock;
    PyObject *runner;      /* race-checked: the checker's run (a Runner), else NULL */
    int synchronous;
} Enqueuer;

enum { ARG_KIND, ARG_CALL, ARG_ARGS, ARG_ENTRIES, ARG_HELD, ARG_VIEWS, ARG_NBYTES,
       ARG_RESULT, ARG_KERNEL, ARG_COUNT };

/* -- small helpers ---------------------------------------------------------- */

/* The state's slot ``f`` (a new reference), read in place: no attribute lookup. */
static PyObject *field_get(Enqueuer *self, int f)
{
    PyObject *value = *(PyObject **)((char *)self->state + self->field[f]);
    if (value == NULL)
        PyErr_Format(PyExc_AttributeError, "enqueue: StreamState.%s is unset", FIELD_NAMES[f]);
    return Py_XNewRef(value);
}

static int field_true(Enqueuer *self, int f)
{
    PyObject *value = *(PyObject **)((char *)self->state + self->field[f]);
    if (value == Py_True || value == Py_False)
        return value == Py_True;
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "enqueue: StreamState.%s is unset", FIELD_NAMES[f]);
        return -1;
    }
    return PyObject_IsTrue(value);
}

static int field_set(Enqueuer *self, int f, PyObject *value)
{
    PyObject **slot = (PyObject **)((char *)self->state + self->field[f]);
    PyObject *old = *slot;
    *slot = Py_NewRef(value);
    Py_XDECREF(old);
    return 0;
}

static int take_lock(Enqueuer *self)
{
    return self->acquire == NULL ? stream_lock_acquire(self->lock) : call_noargs_ok(self->acquire);
}

static int drop_lock(Enqueuer *self)
{
    return self->release == NULL ? stream_lock_release(self->lock) : call_noargs_ok(self->release);
}

/* ``next_seq()``: its iterator's own next where it has one (a method-wrapper call
 * costs more than the count). */
static PyObject *seq_next(void)
{
    if (shared.seqs == NULL)
        return PyObject_CallNoArgs(shared.next_seq);
    PyObject *seq = Py_TYPE(shared.seqs)->tp_iternext(shared.seqs);
    if (seq == NULL && !PyErr_Occurred())
        PyErr_SetNone(PyExc_StopIteration);
    return seq;
}

/* A pending Completion, as Completion(name, state, result, held, views) makes it. */
static PyObject *new_completion(PyObject *op, PyObject *hooks, PyObject *result, PyObject *held,
                                PyObject *views, PyObject *lock)
{
    PyObject *callbacks = PyList_New(0);
    PyObject *seq = callbacks ? seq_next() : NULL;
    const Layout *c = &shared.completion;
    PyObject *obj = seq ? c->type->tp_alloc(c->type, 0) : NULL;
    if (obj != NULL) {
        set_slot(c, obj, SLOT_OP, op);
        set_slot(c, obj, SLOT_HOOKS, hooks);
        set_slot(c, obj, SLOT_RESULT, result);
        set_slot(c, obj, SLOT_ERROR, Py_None);
        set_slot(c, obj, SLOT_STATE, shared.pending);
        set_slot(c, obj, SLOT_KEEPALIVE, held);
        set_slot(c, obj, SLOT_VIEWS, views);
        set_slot(c, obj, SLOT_CALLBACKS, callbacks);
        set_slot(c, obj, SLOT_LOCK, lock);
        set_slot(c, obj, SLOT_SEEN, Py_None);
        set_slot(c, obj, SLOT_SEQ, seq);
    }
    Py_XDECREF(callbacks);
    Py_XDECREF(seq);
    return obj;
}

/* -- the tail: the previous op, which has no marker yet --------------------- */

/* ``count + 1`` (a new reference), and in *zero ``not count``; NULL on error. */
static PyObject *plus_one(PyObject *count, int *zero)
{
    if (PyLong_CheckExact(count)) { /* the common case, without the number protocol */
        Py_ssize_t n = PyLong_AsSsize_t(count);
        if (n >= 0 && n < PY_SSIZE_T_MAX) {
            *zero = n == 0;
            return PyLong_FromSsize_t(n + 1);
        }
        PyErr_Clear();
    }
    *zero = PyObject_Not(count);
    return *zero < 0 ? NULL : PyNumber_Add(count, shared.one);
}

/* Mark the tail if its Completion is kept, else strand what it holds (lock held). */
static int settle_tail(Enqueuer *self, PyObject *state)
{
    PyObject *tail = field_get(self, F_TAIL);
    if (tail == NULL)
        return -1;
    if (tail == Py_None) {
        Py_DECREF(tail);
        return 0;
    }
    int rc = -1;
    PyObject *stranded = NULL, *held = NULL;
    if (field_set(self, F_TAIL, Py_None) < 0)
        goto out;
    stranded = field_get(self, F_STRANDED);
    if (stranded == NULL || !PyList_Check(stranded)) {
        if (stranded != NULL)
            PyErr_SetString(PyExc_TypeError, "enqueue: StreamState.stranded is not a list");
        goto out;
    }
    /* Our reference is the only one left unless the caller kept the Completion. */
    if (Py_REFCNT(tail) > 1 || PyList_GET_SIZE(stranded) >= shared.stranded_kept) {
        PyObject *r = PyObject_CallFunctionObjArgs(self->mark, state, self->handle, tail, NULL);
        if (r == NULL)
            goto out;
        Py_DECREF(r);
    } else {
        PyObject *dropped = field_get(self, F_DROPPED);
        if (dropped == NULL)
            goto out;
        int none_yet;
        PyObject *more = plus_one(dropped, &none_yet);
        Py_DECREF(dropped);
        if (more == NULL)
            goto out;
        if (none_yet) {
            PyObject *op = PyObject_TypeCheck(tail, shared.completion.type)
                               ? *(PyObject **)((char *)tail + shared.completion.offset[SLOT_OP])
                               : NULL;
            if (op == NULL || field_set(self, F_DROPPED_FIRST, op) < 0) {
                if (op == NULL)
                    PyErr_SetString(PyExc_TypeError, "enqueue: the tail is not a Completion");
                Py_DECREF(more);
                goto out;
            }
        }
        int set = field_set(self, F_DROPPED, more);
        Py_DECREF(more);
        if (set < 0)
            goto out;
        held = field_get(self, F_TAIL_HELD);
        if (held == NULL)
            goto out;
        if (!PyTuple_Check(held) || PyTuple_GET_SIZE(held) != 2) {
            PyErr_SetString(PyExc_TypeError, "enqueue: StreamState.tail_held is not a pair");
            goto out;
        }
        for (Py_ssize_t i = 0; i < 2; i++) {
            PyObject *part = PyTuple_GET_ITEM(held, i);
            int some = PyTuple_CheckExact(part) ? PyTuple_GET_SIZE(part) > 0
                                                : PyObject_IsTrue(part);
            if (some < 0 || (some && list_extend(stranded, part) < 0))
                goto out;
        }
    }
    rc = field_set(self, F_TAIL_HELD, shared.nothing_held);
out:
    Py_XDECREF(held);
    Py_XDECREF(stranded);
    Py_DECREF(tail);
    return rc;
}

/* -- the call --------------------------------------------------------------- */

/* After the call: the op's Completion, as the policy's ``queue`` makes it (lock held). */
static PyObject *queued(Enqueuer *self, PyObject *state, PyObject *const *a)
{
    PyObject *kind = a[ARG_KIND], *held = a[ARG_HELD], *views = a[ARG_VIEWS],
             *result = a[ARG_RESULT];
    if (self->synchronous) {
        int ordering = field_true(self, F_ORDERING);
        if (ordering < 0)
            return NULL;
        if (!ordering && result == Py_None) {
            PyObject *done = PyDict_GetItemWithError(self->done, kind);
            if (done != NULL)
                return Py_NewRef(done);
            if (PyErr_Occurred())
                return NULL;
        }
        return PyObject_CallFunctionObjArgs(self->mark_now, kind, state, result, NULL);
    }
    int defer = field_true(self, F_DEFER_MARKERS);
    if (defer < 0)
        return NULL;
    if (!defer)
        return PyObject_CallFunctionObjArgs(self->mark_now, kind, result, held, views, state,
                                            self->handle, NULL);
    static SlotCache public_of; /* OpKind.public */
    PyObject *public = slot_attr(&public_of, kind, name.public);
    if (public == NULL)
        return NULL;
    PyObject *completion = new_completion(public, state, result, held, views, self->completion_lock);
    Py_DECREF(public);
    if (completion == NULL)
        return NULL;
    /* Nothing held is ((), ()) either way: read only by unpacking and truth. */
    PyObject *pair = held == shared.empty && views == shared.empty
                         ? Py_NewRef(shared.empty_pair)
                         : PyTuple_Pack(2, held, views);
    if (pair == NULL || field_set(self, F_TAIL, completion) < 0 ||
        field_set(self, F_TAIL_HELD, pair) < 0)
        goto fail;
    Py_CLEAR(pair);
    PyObject *waiter = field_get(self, F_WAITER);
    if (waiter == NULL)
        goto fail;
    int none = waiter == Py_None;
    Py_DECREF(waiter);
    if (none) { /* a backend-wide wait finds the stream through its waiter */
        PyObject *started = PyObject_CallMethodNoArgs(state, name.started_waiter);
        if (started == NULL)
            goto fail;
        Py_DECREF(started);
    }
    return completion;
fail:
    Py_XDECREF(pair);
    Py_DECREF(completion);
    return NULL;
}

/* 1: a trace is on, or call sites are recorded (an async stream's), so the op is the
 * policy's Python to run; 0: the plain steps may; -1: error. */
static int traced_or_noted(Enqueuer *self)
{
    static SlotCache recorder_of; /* Tracing.recorder */
    PyObject *recorder = slot_attr(&recorder_of, self->tracing, name.recorder);
    int r = recorder == NULL ? -1 : recorder == Py_None ? 0 : PyObject_IsTrue(recorder);
    Py_XDECREF(recorder);
    if (r != 0 || self->synchronous)
        return r;
    /* A module global, read from the module's dict (a module getattr costs twice that). */
    PyObject *recording = PyDict_GetItemWithError(shared.sites, name.recording);
    if (recording == NULL)
        return PyErr_Occurred() ? -1 : 1; /* unknown: the Python path decides */
    return PyObject_IsTrue(recording);
}

/* 1: the op is for the Python path; 0: the plain path may take it; -1: error (lock held). */
static int needs_python(Enqueuer *self, PyObject *state, PyObject *entries)
{
    int r = field_true(self, F_REFUSING);
    if (r != 0)
        return r;
    if ((r = field_true(self, F_CAPTURING)) != 0)
        return r;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(entries); i++) {
        static SlotCache freed_of; /* Entry.freed */
        PyObject *freed = slot_attr(&freed_of, PyTuple_GET_ITEM(entries, i), name.freed);
        r = freed == NULL ? -1 : freed == Py_False ? 0 : PyObject_IsTrue(freed);
        Py_XDECREF(freed);
        if (r != 0)
            return r;
    }
    if (self->hazards != Py_None)
        return 0; /* the checker's ``run`` (a Runner) asks traced_or_noted itself */
    return traced_or_noted(self);
}

/* The stream (a new reference), or NULL with an error set. */
static PyObject *the_stream(Enqueuer *self)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *stream;
    if (PyWeakref_GetRef(self->stream_ref, &stream) <= 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ReferenceError, "enqueue: the stream is gone");
        return NULL;
    }
    return stream;
#else
    PyObject *stream = PyWeakref_GetObject(self->stream_ref);
    if (stream == NULL)
        return NULL;
    if (stream == Py_None) {
        PyErr_SetString(PyExc_ReferenceError, "enqueue: the stream is gone");
        return NULL;
    }
    return Py_NewRef(stream);
#endif
}

/* ``Op(kind, call, args, (*held, *entries), views, nbytes, result, kernel, held=held)``. */
static PyObject *new_op(PyObject *const *a)
{
    PyObject *keepalive = PySequence_Concat(a[ARG_HELD], a[ARG_ENTRIES]);
    const Layout *o = &shared.op;
    PyObject *op = keepalive ? o->type->tp_alloc(o->type, 0) : NULL;
    if (op != NULL) {
        set_slot(o, op, OP_KIND, a[ARG_KIND]);
        set_slot(o, op, OP_CALL, a[ARG_CALL]);
        set_slot(o, op, OP_ARGS, a[ARG_ARGS]);
        set_slot(o, op, OP_KEEPALIVE, keepalive);
        set_slot(o, op, OP_VIEWS, a[ARG_VIEWS]);
        set_slot(o, op, OP_NBYTES, a[ARG_NBYTES]);
        set_slot(o, op, OP_RESULT, a[ARG_RESULT]);
        set_slot(o, op, OP_KERNEL, a[ARG_KERNEL]);
        set_slot(o, op, OP_READS, Py_None);
        set_slot(o, op, OP_WRITES, Py_None);
        set_slot(o, op, OP_HELD, a[ARG_HELD]);
    }
    Py_XDECREF(keepalive);
    return op;
}

/* The plain case's steps, lock held: settle the tail, make the driver call, make the
 * Completion (or hand a failed call to the policy). */
static PyObject *plain(Enqueuer *self, PyObject *const *a)
{
    PyObject *state = self->state, *out = NULL;
    if (!self->synchronous && settle_tail(self, state) < 0)
        return NULL;
    int direct = direct_enqueue(a[ARG_CALL], a[ARG_ARGS], self->address);
    PyObject *r = direct > 0    ? Py_NewRef(Py_None)
                  : direct == 0 ? driver_call(a[ARG_CALL], a[ARG_ARGS], self->handle)
                                : NULL;
    if (r != NULL) {
        Py_DECREF(r);
        out = queued(self, state, a);
    } else if (PyErr_ExceptionMatches(shared.driver_error)) {
        PyObject *exc = take_exception();
        if (exc != NULL) {
            out = self->synchronous
                      ? PyObject_CallFunctionObjArgs(self->failed, a[ARG_KIND], state, exc, NULL)
                      : PyObject_CallFunctionObjArgs(self->failed, a[ARG_KIND], a[ARG_RESULT],
                                                     a[ARG_HELD], a[ARG_VIEWS], state, exc, NULL);
            Py_DECREF(exc);
        }
    }
    return out;
}

/* -- the race checker's ``run``: the plain steps for an Op -------------------- */

/* A stream's ``run(op, stream)`` for its race checker (lock held): the Op's parts
 * through the plain steps, as the policy's ``run`` unpacks them into its
 * ``queue``; a trace, recorded call sites or an Op without ``held`` go to the
 * policy's own ``run``. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Enqueuer *enqueuer; /* borrowed: its owner, which clears it as it goes */
} Runner;

static PyObject *op_slot(PyObject *op, int slot)
{
    return *(PyObject **)((char *)op + shared.op.offset[slot]);
}

static PyObject *runner_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    Enqueuer *e = ((Runner *)callable)->enqueuer;
    if (e == NULL) {
        PyErr_SetString(PyExc_ReferenceError, "run: the stream's enqueue is gone");
        return NULL;
    }
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL ||
        !PyObject_TypeCheck(args[0], shared.op.type))
        return PyObject_Vectorcall(e->run, args, nargsf, kwnames);
    int python = traced_or_noted(e);
    PyObject *op = args[0];
    PyObject *held = e->synchronous ? shared.empty : op_slot(op, OP_HELD);
    if (python < 0)
        return NULL;
    if (python || held == NULL || held == Py_None)
        return PyObject_Vectorcall(e->run, args, nargsf, kwnames);
    PyObject *a[ARG_COUNT] = {
        [ARG_KIND] = op_slot(op, OP_KIND),     [ARG_CALL] = op_slot(op, OP_CALL),
        [ARG_ARGS] = op_slot(op, OP_ARGS),     [ARG_ENTRIES] = shared.empty,
        [ARG_HELD] = held,                     [ARG_VIEWS] = op_slot(op, OP_VIEWS),
        [ARG_NBYTES] = op_slot(op, OP_NBYTES), [ARG_RESULT] = op_slot(op, OP_RESULT),
        [ARG_KERNEL] = op_slot(op, OP_KERNEL),
    };
    for (int i = 0; i < ARG_COUNT; i++) {
        if (a[i] == NULL) /* an unset slot: the policy's run says what is wrong */
            return PyObject_Vectorcall(e->run, args, nargsf, kwnames);
    }
    if (!PyTuple_Check(a[ARG_ARGS]) || !PyTuple_Check(a[ARG_HELD]) ||
        !PyTuple_Check(a[ARG_VIEWS]))
        return PyObject_Vectorcall(e->run, args, nargsf, kwnames);
    return plain(e, a);
}

static void runner_dealloc(Runner *self)
{
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject RunnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aruntime._enqueue_compiled.Runner",
    .tp_doc = "A race-checked stream's run(op, stream): the compiled enqueue's plain steps.",
    .tp_basicsize = sizeof(Runner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Runner, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = (destructor)runner_dealloc,
};

/* A race-checked stream: ``hazards.run(Op(...), stream, run)``, as Stream.enqueue does (lock held). */
static PyObject *checked(Enqueuer *self, PyObject *const *a)
{
    PyObject *op = new_op(a);
    if (op == NULL)
        return NULL;
    PyObject *out = NULL;
    PyObject *stream = the_stream(self);
    if (stream != NULL) {
        PyObject *call[] = {op, stream, self->runner != NULL ? self->runner : self->run};
        out = PyObject_Vectorcall(self->hazards, call, 3, NULL);
        Py_DECREF(stream);
    }
    Py_DECREF(op);
    return out;
}

static PyObject *slow_path(Enqueuer *self, PyObject *const *a)
{
    PyObject *stream = the_stream(self);
    if (stream == NULL)
        return NULL;
    PyObject *stack[ARG_COUNT + 1];
    stack[0] = stream;
    for (int i = 0; i < ARG_COUNT; i++)
        stack[i + 1] = a[i];
    PyObject *r = PyObject_Vectorcall(self->slow, stack, ARG_COUNT + 1, NULL);
    Py_DECREF(stream);
    return r;
}

/* Enqueuer(kind, call, args, entries, held, views=(), nbytes=0, result=None, kernel=None) */
static PyObject *enqueue(PyObject *callable, PyObject *const *args, size_t nargsf,
                         PyObject *kwnames)
{
    Enqueuer *self = (Enqueuer *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        PyErr_SetString(PyExc_TypeError, "Stream.enqueue takes positional arguments only");
        return NULL;
    }
    if (nargs < ARG_VIEWS || nargs > ARG_COUNT) {
        PyErr_Format(PyExc_TypeError, "Stream.enqueue takes 5 to 9 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *a[ARG_COUNT] = {NULL};
    for (Py_ssize_t i = 0; i < nargs; i++)
        a[i] = args[i];
    if (a[ARG_VIEWS] == NULL)
        a[ARG_VIEWS] = PyTuple_Pack(0);  /* the empty tuple is a singleton */
    else
        Py_INCREF(a[ARG_VIEWS]);
    if (a[ARG_VIEWS] == NULL)
        return NULL;
    PyObject *zero = NULL;
    if (a[ARG_NBYTES] == NULL)
        a[ARG_NBYTES] = zero = PyLong_FromLong(0);
    if (a[ARG_RESULT] == NULL)
        a[ARG_RESULT] = Py_None;
    if (a[ARG_KERNEL] == NULL)
        a[ARG_KERNEL] = Py_None;
    PyObject *out = NULL;
    if (a[ARG_NBYTES] == NULL)
        goto done;
    if (!PyTuple_Check(a[ARG_ARGS]) || !PyTuple_Check(a[ARG_ENTRIES]) ||
        !PyTuple_Check(a[ARG_HELD]) || !PyTuple_Check(a[ARG_VIEWS])) {
        out = slow_path(self, a);  /* the Python path takes what it takes */
        goto done;
    }
    PyObject *state = self->state;
    if (take_lock(self) < 0)
        goto done;
    int python = needs_python(self, state, a[ARG_ENTRIES]);
    if (python < 0)
        goto unlock;
    if (python > 0) {
        if (drop_lock(self) == 0)
            out = slow_path(self, a);
        goto done;
    }
    if (self->hazards != Py_None) {
        out = checked(self, a);
        goto unlock;
    }
    out = plain(self, a);
unlock:
    if (out == NULL) {
        /* Release whatever was raised: the lock must not stay held. */
        PyObject *exc = take_exception();
        if (drop_lock(self) < 0)
            Py_XDECREF(exc);
        else if (exc != NULL)
            raise_again(exc);
    } else if (drop_lock(self) < 0) {
        Py_CLEAR(out);
    }
done:
    Py_DECREF(a[ARG_VIEWS]);
    Py_XDECREF(zero);
    return out;
}

/* -- the type --------------------------------------------------------------- */

static int enqueuer_traverse(Enqueuer *self, visitproc visit, void *arg)
{
    Py_VISIT(self->stream_ref);
    Py_VISIT(self->slow);
    Py_VISIT(self->completion_lock);
    Py_VISIT(self->runner);
    Py_VISIT(self->state);
    Py_VISIT(self->handle);
    Py_VISIT(self->lock);
    Py_VISIT(self->acquire);
    Py_VISIT(self->release);
    Py_VISIT(self->tracing);
    Py_VISIT(self->failed);
    Py_VISIT(self->mark);
    Py_VISIT(self->mark_now);
    Py_VISIT(self->done);
    Py_VISIT(self->hazards);
    Py_VISIT(self->run);
    return 0;
}

static int enqueuer_clear(Enqueuer *self)
{
    Py_CLEAR(self->stream_ref);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->completion_lock);
    if (self->runner != NULL)
        ((Runner *)self->runner)->enqueuer = NULL;
    Py_CLEAR(self->runner);
    Py_CLEAR(self->state);
    Py_CLEAR(self->handle);
    Py_CLEAR(self->lock);
    Py_CLEAR(self->acquire);
    Py_CLEAR(self->release);
    Py_CLEAR(self->tracing);
    Py_CLEAR(self->failed);
    Py_CLEAR(self->mark);
    Py_CLEAR(self->mark_now);
    Py_CLEAR(self->done);
    Py_CLEAR(self->hazards);
    Py_CLEAR(self->run);
    return 0;
}

static void enqueuer_dealloc(Enqueuer *self)
{
    PyObject_GC_UnTrack(self);
    enqueuer_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Where ``state``'s class keeps each slot this file reads: a slot, never a property. */
static int state_fields(Enqueuer *self, PyObject *state)
{
    for (int f = 0; f < F_COUNT; f++) {
        if ((self->field[f] = slot_offset(Py_TYPE(state), FIELD_NAMES[f], "Enqueuer")) < 0)
            return -1;
    }
    return 0;
}

static PyObject *enqueuer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"stream", "slow", "state", "handle", "lock",
                               "tracing", "failed", "mark", "mark_now", "done", "hazards", "run",
                               "synchronous", "address", NULL};
    PyObject *stream, *slow, *state, *handle, *lock, *tracing, *failed, *mark, *mark_now, *done,
        *hazards, *run;
    int synchronous;
    unsigned long long address = 0;
    if (shared.completion.type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Enqueuer: configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOOOOOOOOOpK:Enqueuer", keywords,
                                     &stream, &slow, &state, &handle, &lock, &tracing,
                                     &failed, &mark, &mark_now, &done, &hazards, &run,
                                     &synchronous, &address))
        return NULL;
    if (synchronous ? !PyDict_Check(done) : !PyCallable_Check(mark)) {
        PyErr_SetString(PyExc_TypeError,
                        "Enqueuer: a synchronous one needs done (a dict), an async one mark");
        return NULL;
    }
    Enqueuer *self = (Enqueuer *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = enqueue;
    self->stream_ref = PyWeakref_NewRef(stream, NULL);
    if (self->stream_ref == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->slow = Py_NewRef(slow);
    self->state = Py_NewRef(state);
    if (state_fields(self, state) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->handle = Py_NewRef(handle);
    self->lock = Py_NewRef(lock);
    if (!Py_IS_TYPE(lock, &StreamLockType)) {
        self->acquire = PyObject_GetAttrString(lock, "acquire");
        self->release = self->acquire ? PyObject_GetAttrString(lock, "release") : NULL;
        if (self->release == NULL) {
            Py_DECREF(self);
            return NULL;
        }
    }
    self->tracing = Py_NewRef(tracing);
    self->failed = Py_NewRef(failed);
    self->mark = Py_NewRef(mark);
    self->mark_now = Py_NewRef(mark_now);
    self->done = Py_NewRef(done);
    self->hazards = Py_NewRef(hazards);
    self->run = Py_NewRef(run);
    self->synchronous = synchronous;
    self->address = (uintptr_t)address;
    if ((self->completion_lock = PyObject_CallNoArgs(shared.allocate_lock)) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    if (hazards != Py_None) {
        Runner *runner = PyObject_New(Runner, &RunnerType);
        if (runner == NULL) {
            Py_DECREF(self);
            return NULL;
        }
        runner->vectorcall = runner_call;
        runner->enqueuer = self;
        self->runner = (PyObject *)runner;
    }
    return (PyObject *)self;
}

static PyTypeObject EnqueuerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aruntime._enqueue_compiled.Enqueuer",
    .tp_doc = "One stream's compiled Stream.enqueue (see aruntime/_enqueue.py).",
    .tp_basicsize = sizeof(Enqueuer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Enqueuer, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = enqueuer_new,
    .tp_traverse = (traverseproc)enqueuer_traverse,
    .tp_clear = (inquiry)enqueuer_clear,
    .tp_dealloc = (destructor)enqueuer_dealloc,
};

/* -- configure() ------------------------------------------------------------ */

static PyObject *configure(PyObject *module, PyObject *args)
{
    PyObject *completion, *completion_slots, *pending, *allocate_lock, *next_seq, *nothing_held,
        *driver_error, *sites, *op, *op_slots;
    Py_ssize_t stranded_kept;
    if (!PyArg_ParseTuple(args, "O!O!OOOOOO!nO!O!:configure", &PyType_Type, &completion,
                          &PyTuple_Type, &completion_slots, &pending, &allocate_lock, &next_seq,
                          &nothing_held, &driver_error, &PyModule_Type, &sites, &stranded_kept,
                          &PyType_Type, &op, &PyTuple_Type, &op_slots))
        return NULL;
    /* Both checked before either is kept: a refusal leaves the last configuration whole. */
    Layout completion_layout = {NULL}, op_layout = {NULL};
    if (layout_of(&completion_layout, completion, completion_slots, COMPLETION_SLOTS,
                  SLOT_COUNT) < 0 ||
        layout_of(&op_layout, op, op_slots, OP_SLOTS, OP_COUNT) < 0) {
        Py_XDECREF(completion_layout.type);
        Py_XDECREF(op_layout.type);
        return NULL;
    }
    Py_XDECREF(shared.completion.type);
    Py_XDECREF(shared.op.type);
    shared.completion = completion_layout;
    shared.op = op_layout;
    Py_XSETREF(shared.pending, Py_NewRef(pending));
    Py_XSETREF(shared.allocate_lock, Py_NewRef(allocate_lock));
    Py_XSETREF(shared.next_seq, Py_NewRef(next_seq));
    Py_XSETREF(shared.seqs, iterator_of(next_seq));
    Py_XSETREF(shared.nothing_held, Py_NewRef(nothing_held));
    Py_XSETREF(shared.driver_error, Py_NewRef(driver_error));
    Py_XSETREF(shared.sites, Py_NewRef(PyModule_GetDict(sites)));
    shared.stranded_kept = stranded_kept;
    Py_RETURN_NONE;
}

/* configure_watched(no_lock): the lock every shared finished Completion has. */
static PyObject *configure_watched(PyObject *module, PyObject *no_lock)
{
    Py_XSETREF(shared.no_lock, Py_NewRef(no_lock));
    Py_RETURN_NONE;
}

/* The Completion's slot ``slot`` (borrowed; None where unset). */
static PyObject *completion_slot(PyObject *completion, int slot)
{
    PyObject *value =
        *(PyObject **)((char *)completion + shared.completion.offset[slot]);
    return value != NULL ? value : Py_None;
}

/* watched(completion, seen): Completion._watched, in C.  With race checking on every op
 * passes here, and every mock op as a shared finished Completion, copied: its eleven
 * stores cost more in Python than the rest of the call. */
static PyObject *watched(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const Layout *c = &shared.completion;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "watched takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *completion = args[0], *seen = args[1];
    if (c->type == NULL || shared.no_lock == NULL || Py_TYPE(completion) != c->type) {
        PyErr_Format(PyExc_TypeError, "watched: a Completion (configured), got %R", completion);
        return NULL;
    }
    if (completion_slot(completion, SLOT_LOCK) != shared.no_lock) {
        set_slot(c, completion, SLOT_SEEN, seen);
        return Py_NewRef(completion);
    }
    PyObject *callbacks = PyList_New(0);
    PyObject *copy = callbacks != NULL ? c->type->tp_alloc(c->type, 0) : NULL;
    if (copy != NULL) {
        set_slot(c, copy, SLOT_OP, completion_slot(completion, SLOT_OP));
        set_slot(c, copy, SLOT_HOOKS, Py_None);
        set_slot(c, copy, SLOT_RESULT, completion_slot(completion, SLOT_RESULT));
        set_slot(c, copy, SLOT_ERROR, Py_None);
        set_slot(c, copy, SLOT_STATE, completion_slot(completion, SLOT_STATE));
        set_slot(c, copy, SLOT_KEEPALIVE, shared.empty);
        set_slot(c, copy, SLOT_VIEWS, shared.empty);
        set_slot(c, copy, SLOT_CALLBACKS, callbacks);
        set_slot(c, copy, SLOT_LOCK, shared.no_lock);
        set_slot(c, copy, SLOT_SEEN, seen);
        set_slot(c, copy, SLOT_SEQ, shared.zero);
    }
    Py_XDECREF(callbacks);
    return copy;
}

static PyMethodDef methods[] = {
    {"watched", (PyCFunction)(void (*)(void))watched, METH_FASTCALL,
     "watched(completion, seen): Completion._watched (see aruntime/_completion.py)."},
    {"configure_settle", configure_settle, METH_VARARGS,
     "configure_settle(Completion, pending, done, no_callbacks, release_views, run_wakeups): "
     "what a Completion finished in C needs (settle.c)."},
    {"finish_done", finish_done, METH_O,
     "finish_done(completion): Completion._finish(None), in C (settle.c)."},
    {"configure_watched", configure_watched, METH_O,
     "configure_watched(no_lock): the lock of the shared finished Completions."},
    {"host_view", (PyCFunction)(void (*)(void))host_view, METH_FASTCALL,
     "host_view(obj, writable): a flat byte view of a plain or live pinned buffer, or None."},
    {"configure_host_view", configure_host_view, METH_VARARGS,
     "configure_host_view(plain_types, HostBuffer, record_attr, freed_attr, entry_attr)."},
    {"configure", configure, METH_VARARGS,
     "configure(Completion, slots, pending, allocate_lock, next_seq, nothing_held, "
     "DriverError, sites, stranded_kept, Op, op_slots): what every Enqueuer shares."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_aruntime_enqueue",
    .m_doc = "Stream.enqueue's plain case, compiled (see aruntime/_enqueue.py).",
    .m_size = -1,
    .m_methods = methods,
};

static int intern_names(void)
{
    if ((shared.one = PyLong_FromLong(1)) == NULL || (shared.zero = PyLong_FromLong(0)) == NULL ||
        (shared.empty = PyTuple_New(0)) == NULL ||
        (shared.empty_pair = PyTuple_Pack(2, shared.empty, shared.empty)) == NULL)
        return -1;
#define INTERN(field)                                              \
    if ((name.field = PyUnicode_InternFromString(#field)) == NULL) \
        return -1;
    INTERN(freed) INTERN(recording) INTERN(recorder) INTERN(started_waiter) INTERN(public)
#undef INTERN
    return 0;
}

PyMODINIT_FUNC PyInit__aruntime_enqueue(void)
{
    if (intern_names() < 0 || direct_ready() < 0 || front_ready() < 0 || ze_append_ready() < 0 ||
        mock_copy_ready() < 0 || tail_probe_ready() < 0 || PyType_Ready(&TailProbeType) < 0 ||
        PyType_Ready(&EnqueuerType) < 0 ||
        PyType_Ready(&DirectCallType) < 0 || PyType_Ready(&StreamLockType) < 0 ||
        PyType_Ready(&LaunchSiteType) < 0 || PyType_Ready(&RangeCheckType) < 0 ||
        PyType_Ready(&RunnerType) < 0 || PyType_Ready(&ZeAppendType) < 0 ||
        PyType_Ready(&MockCopyType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "Enqueuer", (PyObject *)&EnqueuerType) < 0 ||
        PyModule_AddObjectRef(module, "DirectCall", (PyObject *)&DirectCallType) < 0 ||
        PyModule_AddObjectRef(module, "StreamLock", (PyObject *)&StreamLockType) < 0 ||
        PyModule_AddObjectRef(module, "LaunchSite", (PyObject *)&LaunchSiteType) < 0 ||
        PyModule_AddObjectRef(module, "RangeCheck", (PyObject *)&RangeCheckType) < 0 ||
        PyModule_AddObjectRef(module, "OpFront", (PyObject *)&OpFrontType) < 0 ||
        PyModule_AddObjectRef(module, "ZeAppend", (PyObject *)&ZeAppendType) < 0 ||
        PyModule_AddObjectRef(module, "MockCopy", (PyObject *)&MockCopyType) < 0 ||
        PyModule_AddObjectRef(module, "TailProbe", (PyObject *)&TailProbeType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
