/* TailProbe: a stream's awaited last op, asked after and settled in C.
 *
 * An awaited op that is its stream's last, with no marker, is awaited as a
 * user's polling loop would await it (Completion._await_tail): the stream is
 * asked at each loop step.  Through Python each ask is StreamState.probe_tail,
 * the policy's probe and the driver's stream_finished, and the last one then
 * settles the op: about half a microsecond an ask and a microsecond and a half
 * for the last, against 0.15 us for a cuda.core poller's event query.  This
 * object is StreamState.probe_tail with its common cases in one C call, and
 * answers as probe_tail does (True: the op is no longer the unmarked tail,
 * finished now or marked already; False: still running, ask again).  Under
 * the stream's lock, where
 *
 *   ``completion`` is still the stream's unmarked tail, every op handed to the
 *   stream's waiter has finished (the waiter is None or idle), and the
 *   driver's DirectCall over ``stream_finished`` answers in its plain case:
 *   still running (nothing changes), or done and synchronized, or failed
 *   with a DriverError; then ``settle(completion, error)``, the policy's
 *   (``Marking.settle_probed``), takes the op off the tail and finishes it,
 *   still under the lock.  A done op that nothing orders after a failure,
 *   with no op before it dropped unmarked or stranded, is taken off the tail
 *   and finished here instead (plain_done, settle.c): the settle's frames
 *   and _finish's cost twice the ask.
 *
 * Anything else (a busy waiter, a thread outside the driver's context) is
 * probe_tail's, called here once the lock is let go.  The lock
 * is what makes the query safe against another thread's close(): close
 * flushes the tail under the same lock before the stream is destroyed, so a
 * tail still in place means a live handle.
 */
#include "tailprobe.h"
#include "direct.h"
#include "lock.h"
#include "objects.h"
#include "settle.h"
#include "slots.h"

#include <structmember.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *state;    /* the StreamState */
    Py_ssize_t tail_at; /* where it keeps ``tail`` and ``waiter`` */
    Py_ssize_t waiter_at;
    /* Where it keeps what decides whether a done op is finished here (plain_done). */
    Py_ssize_t ordering_at, dropped_at, stranded_at, tail_held_at;
    PyObject *lock;         /* state.lock, a StreamLock */
    PyObject *finished;     /* the driver's stream_finished, a DirectCall */
    PyObject *settle;       /* settle(completion, error): the op is done, or failed */
    PyObject *nothing_held; /* what the tail holds once there is none */
    uintptr_t address;      /* the driver stream's raw handle */
} TailProbe;

static PyObject *name_idle, *name_probe_tail;

int tail_probe_ready(void)
{
    name_idle = PyUnicode_InternFromString("idle");
    name_probe_tail = PyUnicode_InternFromString("probe_tail");
    return name_idle && name_probe_tail ? 0 : -1;
}

/* Whether nothing handed to the stream's waiter is still pending: 1, 0, or -1. */
static int waiter_idle(TailProbe *self)
{
    PyObject *waiter = slot_at(self->state, self->waiter_at);
    if (waiter == NULL || waiter == Py_None)
        return 1;
    PyObject *idle = PyObject_GetAttr(waiter, name_idle);
    if (idle == NULL)
        return -1;
    int answer = PyObject_IsTrue(idle);
    Py_DECREF(idle);
    return answer;
}

enum { TAIL_RUNNING, TAIL_FINISHED, TAIL_ASK_PYTHON };

/* Whether ``completion``, done, is finished here: nothing orders the stream's ops after
 * a failure, and no op before it was dropped unmarked or left buffers behind (the policy's
 * settle notes what the op covers, and lets the buffers go).  Then the op comes off the
 * tail, as the settle takes it off, and is finished as Completion._finish(None) would. */
static int plain_done(TailProbe *self, PyObject *completion)
{
    PyObject *dropped = slot_at(self->state, self->dropped_at);
    PyObject *stranded = slot_at(self->state, self->stranded_at);
    if (slot_at(self->state, self->ordering_at) != Py_False || dropped == NULL ||
        !PyLong_CheckExact(dropped) || stranded == NULL || !PyList_CheckExact(stranded) ||
        PyList_GET_SIZE(stranded) != 0 || !settle_ready(completion))
        return 0;
    int overflow = 0;
    return PyLong_AsLongAndOverflow(dropped, &overflow) == 0 && overflow == 0;
}

static int finish_here(TailProbe *self, PyObject *completion)
{
    PyObject *old_tail = slot_swap(self->state, self->tail_at, Py_None);
    PyObject *old_held = slot_swap(self->state, self->tail_held_at, self->nothing_held);
    int status = settle_done(completion);
    Py_DECREF(old_tail);
    Py_DECREF(old_held);
    return status < 0 ? -1 : TAIL_FINISHED;
}

/* What the C can tell of ``completion``, still the tail, with the stream's lock held. */

static int answer(TailProbe *self, PyObject *completion)
{
    int idle = waiter_idle(self);
    if (idle <= 0)
        return idle < 0 ? -1 : TAIL_ASK_PYTHON;
    int found = direct_stream_answer(self->finished, self->address);
    if (found == STREAM_ASK || found == STREAM_RUNNING)
        return found == STREAM_RUNNING ? TAIL_RUNNING : TAIL_ASK_PYTHON;
    if (found == STREAM_DONE && plain_done(self, completion))
        return finish_here(self, completion);
    /* Done, or failed: the error is the op's, and its stream's (see stream_finished). */
    PyObject *error = found == STREAM_FAILED ? take_exception() : Py_NewRef(Py_None);
    if (error == NULL)
        return -1;
    PyObject *settled = PyObject_CallFunctionObjArgs(self->settle, completion, error, NULL);
    Py_DECREF(error);
    Py_XDECREF(settled);
    return settled == NULL ? -1 : TAIL_FINISHED;
}

static PyObject *tail_probe_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames)
{
    TailProbe *self = (TailProbe *)callable;
    if (kwnames != NULL || PyVectorcall_NARGS(nargsf) != 1) {
        PyErr_SetString(PyExc_TypeError, "TailProbe(completion): one argument");
        return NULL;
    }
    PyObject *completion = args[0];
    if (slot_at(self->state, self->tail_at) != completion)
        return Py_NewRef(Py_True); /* marked already, or never a tail: as probe_tail says */
    if (stream_lock_acquire(self->lock) < 0)
        return NULL;
    int found = TAIL_FINISHED;
    if (slot_at(self->state, self->tail_at) == completion)
        found = answer(self, completion);
    if (found < 0) {
        PyObject *exc = take_exception();
        stream_lock_release(self->lock);
        raise_again(exc);
        return NULL;
    }
    if (stream_lock_release(self->lock) < 0)
        return NULL;
    if (found == TAIL_ASK_PYTHON)
        return PyObject_CallMethodOneArg(self->state, name_probe_tail, completion);
    return Py_NewRef(found == TAIL_FINISHED ? Py_True : Py_False);
}

static PyObject *tail_probe_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"state", "finished", "settle", "nothing_held", "address", NULL};
    PyObject *state, *finished, *settle, *nothing_held;
    unsigned long long address;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOK:TailProbe", keywords, &state,
                                     &finished, &settle, &nothing_held, &address))
        return NULL;
    if (!Py_IS_TYPE(finished, &DirectCallType) || !PyCallable_Check(settle) || address == 0) {
        PyErr_SetString(PyExc_TypeError, "TailProbe: finished must be a DirectCall, settle "
                                         "callable, address a stream's handle");
        return NULL;
    }
    PyObject *lock = PyObject_GetAttrString(state, "lock");
    if (lock == NULL)
        return NULL;
    if (!Py_IS_TYPE(lock, &StreamLockType)) {
        PyErr_Format(PyExc_TypeError, "TailProbe: state.lock is a %s, not a StreamLock",
                     Py_TYPE(lock)->tp_name);
        Py_DECREF(lock);
        return NULL;
    }
    static const char *const slots[] = {"tail", "waiter", "ordering", "dropped", "stranded",
                                        "tail_held"};
    Py_ssize_t at[6] = {-1, -1, -1, -1, -1, -1};
    int found = 0;
    while (found < 6 && (at[found] = slot_offset(Py_TYPE(state), slots[found], "TailProbe")) >= 0)
        found++;
    TailProbe *self = found < 6 ? NULL : (TailProbe *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(lock);
        return NULL;
    }
    self->vectorcall = tail_probe_call;
    self->state = Py_NewRef(state);
    self->tail_at = at[0];
    self->waiter_at = at[1];
    self->ordering_at = at[2];
    self->dropped_at = at[3];
    self->stranded_at = at[4];
    self->tail_held_at = at[5];
    self->lock = lock;
    self->finished = Py_NewRef(finished);
    self->settle = Py_NewRef(settle);
    self->nothing_held = Py_NewRef(nothing_held);
    self->address = (uintptr_t)address;
    return (PyObject *)self;
}

static int tail_probe_traverse(TailProbe *self, visitproc visit, void *arg)
{
    Py_VISIT(self->state);
    Py_VISIT(self->lock);
    Py_VISIT(self->finished);
    Py_VISIT(self->settle);
    Py_VISIT(self->nothing_held);
    return 0;
}

static int tail_probe_clear(TailProbe *self)
{
    Py_CLEAR(self->state);
    Py_CLEAR(self->lock);
    Py_CLEAR(self->finished);
    Py_CLEAR(self->settle);
    Py_CLEAR(self->nothing_held);
    return 0;
}

static void tail_probe_dealloc(TailProbe *self)
{
    PyObject_GC_UnTrack(self);
    tail_probe_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject TailProbeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aruntime._enqueue_compiled.TailProbe",
    .tp_doc = "A stream's awaited last op, asked after and settled in C (ffi/core/tailprobe.c).",
    .tp_basicsize = sizeof(TailProbe),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(TailProbe, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = tail_probe_new,
    .tp_traverse = (traverseproc)tail_probe_traverse,
    .tp_clear = (inquiry)tail_probe_clear,
    .tp_dealloc = (destructor)tail_probe_dealloc,
};
