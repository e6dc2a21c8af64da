/* StreamLock: a stream's reentrant lock, as threading.RLock is, with a C entry.
 *
 * Every op takes its stream's lock twice (acquire, release).  Through
 * threading.RLock each is a Python-level method call that parses its
 * arguments: about a tenth of a memset's whole host cost on cuda-sim, more
 * than the lock itself.  This lock keeps RLock's semantics (reentrant,
 * owned by a thread, released only by it, waits that let signal handlers
 * run) and lets the compiled enqueue take it with a plain C call.  Python
 * code uses it as it would an RLock: ``with lock``, ``acquire(blocking,
 * timeout)``, ``release()``.
 *
 * The owner and the count are read without the underlying lock, as
 * CPython's RLock reads them: only the thread that owns the lock ever
 * writes them while another could look, and every reader holds the GIL.
 */
#include "lock.h"

#include <limits.h>
#include <stddef.h>
#include <time.h>

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    unsigned long owner;
    unsigned long count;
    PyObject *weakrefs;
} StreamLock;

static long long now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* Wait for the lock (the GIL released); ``timeout_us`` < 0: for ever.  1 taken,
 * 0 timed out, -1 a signal handler raised. */
static int wait_for(StreamLock *self, PY_TIMEOUT_T timeout_us)
{
    long long deadline = timeout_us > 0 ? now_us() + (long long)timeout_us : 0;
    for (;;) {
        PyLockStatus got;
        Py_BEGIN_ALLOW_THREADS
        got = PyThread_acquire_lock_timed(self->lock, timeout_us, 1);
        Py_END_ALLOW_THREADS
        if (got == PY_LOCK_ACQUIRED)
            return 1;
        if (got == PY_LOCK_FAILURE)
            return 0;
        /* PY_LOCK_INTR: run the signal handlers, then wait for what is left. */
        if (Py_MakePendingCalls() < 0)
            return -1;
        if (timeout_us > 0) {
            long long left = deadline - now_us();
            if (left <= 0)
                return 0;
            timeout_us = (PY_TIMEOUT_T)left;
        }
    }
}

/* 1 taken, 0 not (non-blocking, or timed out), -1 error. */
static int take(StreamLock *self, int blocking, PY_TIMEOUT_T timeout_us)
{
    unsigned long me = PyThread_get_thread_ident();
    if (self->count > 0 && self->owner == me) {
        if (self->count == ULONG_MAX) {
            PyErr_SetString(PyExc_OverflowError, "StreamLock: taken too many times");
            return -1;
        }
        self->count++;
        return 1;
    }
    if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
        int got = blocking ? wait_for(self, timeout_us) : 0;
        if (got <= 0)
            return got;
    }
    self->owner = me;
    self->count = 1;
    return 1;
}

int stream_lock_acquire(PyObject *lock)
{
    return take((StreamLock *)lock, 1, -1) < 0 ? -1 : 0;
}

int stream_lock_release(PyObject *lock)
{
    StreamLock *self = (StreamLock *)lock;
    if (self->count == 0 || self->owner != PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "cannot release un-acquired lock");
        return -1;
    }
    if (--self->count == 0) {
        self->owner = 0;
        PyThread_release_lock(self->lock);
    }
    return 0;
}

/* acquire(blocking=True, timeout=-1) */
static PyObject *lock_acquire(StreamLock *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    PyObject *given[2] = {NULL, NULL}; /* blocking, timeout */
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs > 2) {
        PyErr_Format(PyExc_TypeError, "acquire() takes at most 2 arguments (%zd given)", nargs);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        given[i] = args[i];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        int which = PyUnicode_CompareWithASCIIString(key, "blocking") == 0   ? 0
                    : PyUnicode_CompareWithASCIIString(key, "timeout") == 0 ? 1
                                                                             : -1;
        if (which < 0 || given[which] != NULL) {
            PyErr_Format(PyExc_TypeError, "acquire() got an unexpected or repeated argument %R",
                         key);
            return NULL;
        }
        given[which] = args[nargs + i];
    }
    int blocking = given[0] == NULL ? 1 : PyObject_IsTrue(given[0]);
    if (blocking < 0)
        return NULL;
    double timeout = given[1] == NULL ? -1 : PyFloat_AsDouble(given[1]);
    if (timeout == -1 && PyErr_Occurred())
        return NULL;
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    PY_TIMEOUT_T timeout_us = -1;
    if (timeout >= 0) {
        if (timeout * 1e6 >= (double)PY_TIMEOUT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "timeout value is too large");
            return NULL;
        }
        timeout_us = (PY_TIMEOUT_T)(timeout * 1e6);
    }
    int got = take(self, blocking, timeout_us);
    return got < 0 ? NULL : PyBool_FromLong(got);
}

static PyObject *lock_enter(StreamLock *self, PyObject *unused)
{
    return take(self, 1, -1) < 0 ? NULL : Py_NewRef(Py_True);
}

static PyObject *lock_release(StreamLock *self, PyObject *unused)
{
    return stream_lock_release((PyObject *)self) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *lock_exit(StreamLock *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lock_release(self, NULL);
}

static PyObject *lock_is_owned(StreamLock *self, PyObject *unused)
{
    return PyBool_FromLong(self->count > 0 && self->owner == PyThread_get_thread_ident());
}

static PyObject *lock_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "StreamLock() takes no arguments");
        return NULL;
    }
    StreamLock *self = (StreamLock *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->lock = PyThread_allocate_lock();
    if (self->lock == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "StreamLock: cannot allocate a lock");
        return NULL;
    }
    return (PyObject *)self;
}

static void lock_dealloc(StreamLock *self)
{
    if (self->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    if (self->lock != NULL) {
        if (self->count > 0)
            PyThread_release_lock(self->lock);
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *lock_repr(StreamLock *self)
{
    return PyUnicode_FromFormat("<%s StreamLock owner=%lu count=%lu>",
                                self->count ? "locked" : "unlocked", self->owner, self->count);
}

static PyMethodDef lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))lock_acquire, METH_FASTCALL | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1) -> bool, as threading.RLock's"},
    {"release", (PyCFunction)lock_release, METH_NOARGS, "release one level"},
    {"__enter__", (PyCFunction)lock_enter, METH_NOARGS, "acquire()"},
    {"__exit__", (PyCFunction)(void (*)(void))lock_exit, METH_FASTCALL, "release()"},
    {"_is_owned", (PyCFunction)lock_is_owned, METH_NOARGS, "whether this thread holds it"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject StreamLockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aruntime._enqueue_compiled.StreamLock",
    .tp_doc = "A stream's reentrant lock, with a C entry for the compiled enqueue.",
    .tp_basicsize = sizeof(StreamLock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = lock_new,
    .tp_dealloc = (destructor)lock_dealloc,
    .tp_repr = (reprfunc)lock_repr,
    .tp_methods = lock_methods,
    .tp_weaklistoffset = offsetof(StreamLock, weakrefs),
};
