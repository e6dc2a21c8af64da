/* A Completion finished in C: Completion._finish(None) for an op that nothing orders
 * after a failure.
 *
 * An awaited last op is asked about in C at each loop step (tailprobe.c).  Once the
 * stream says it is done, finishing it through Python (the policy's settle, then
 * Completion._finish) cost twice the ask itself: half a microsecond of frames and
 * slot stores on every awaited launch, where a cuda.core poller pays an event query.
 * This is the same finish, in the same order, under the same lock: the state goes
 * from pending to done, the wake-ups, the views and the keepalive are taken, and once
 * the lock is let go the views are released and the wake-ups run, both by the Python
 * functions _finish calls (release_views, run_wakeups).  A Completion that is not
 * pending is left alone, as _finish leaves it.
 *
 * The caller decides that nothing orders the op after a failure (its stream's
 * ``ordering`` is off) and that the op succeeded; every other finish is _finish's.
 */
#include "settle.h"
#include "slots.h"

#include <string.h>

/* The Completion slots this file reads and writes, in the order of SLOT_NAMES. */
enum { AT_STATE, AT_KEEPALIVE, AT_VIEWS, AT_CALLBACKS, AT_LOCK, AT_COUNT };
static const char *const SLOT_NAMES[AT_COUNT] = {"_state", "_keepalive", "_views", "_callbacks",
                                                 "_lock"};

static struct {
    PyTypeObject *completion;
    Py_ssize_t at[AT_COUNT];
    PyObject *pending, *done, *no_callbacks, *empty, *release_views, *run_wakeups;
    PyObject *acquire, *release; /* interned method names */
} settle;

static int call_lock(PyObject *lock, PyObject *method)
{
    PyObject *args[] = {lock};
    PyObject *got = PyObject_VectorcallMethod(method, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                              NULL);
    Py_XDECREF(got);
    return got == NULL ? -1 : 0;
}

int settle_ready(PyObject *completion)
{
    return settle.completion != NULL && Py_TYPE(completion) == settle.completion;
}

int settle_done(PyObject *completion)
{
    PyObject *lock = slot_at(completion, settle.at[AT_LOCK]);
    if (lock == NULL) {
        PyErr_SetString(PyExc_AttributeError, "settle: the Completion has no lock");
        return -1;
    }
    Py_INCREF(lock);
    if (call_lock(lock, settle.acquire) < 0) {
        Py_DECREF(lock);
        return -1;
    }
    PyObject *callbacks = NULL, *views = NULL, *keepalive = NULL;
    if (slot_at(completion, settle.at[AT_STATE]) == settle.pending) {
        Py_DECREF(slot_swap(completion, settle.at[AT_STATE], settle.done));
        callbacks = slot_swap(completion, settle.at[AT_CALLBACKS], settle.no_callbacks);
        views = slot_swap(completion, settle.at[AT_VIEWS], settle.empty);
        keepalive = slot_swap(completion, settle.at[AT_KEEPALIVE], settle.empty);
    }
    /* As _finish, the keepalive goes inside the lock: whatever its objects' deaths run
     * sees the op finished. */
    Py_XDECREF(keepalive);
    int status = call_lock(lock, settle.release);
    Py_DECREF(lock);
    PyObject *got = status == 0 ? Py_NewRef(Py_None) : NULL;
    int any_views = got != NULL && views != NULL ? PyObject_IsTrue(views) : 0;
    if (any_views < 0)
        Py_CLEAR(got);
    else if (any_views)
        Py_SETREF(got, PyObject_CallOneArg(settle.release_views, views));
    if (got != NULL && callbacks != NULL &&
        (!PyList_CheckExact(callbacks) || PyList_GET_SIZE(callbacks) > 0))
        Py_SETREF(got, PyObject_CallOneArg(settle.run_wakeups, callbacks));
    Py_XDECREF(views);
    Py_XDECREF(callbacks);
    if (got == NULL)
        return -1;
    Py_DECREF(got);
    return 0;
}

/* configure_settle(Completion, pending, done, no_callbacks, release_views, run_wakeups). */
PyObject *configure_settle(PyObject *module, PyObject *args)
{
    PyObject *cls, *pending, *done, *no_callbacks, *release_views, *run_wakeups;
    if (!PyArg_ParseTuple(args, "O!OOO!OO:configure_settle", &PyType_Type, &cls, &pending, &done,
                          &PyList_Type, &no_callbacks, &release_views, &run_wakeups))
        return NULL;
    if (!PyCallable_Check(release_views) || !PyCallable_Check(run_wakeups)) {
        PyErr_SetString(PyExc_TypeError,
                        "configure_settle: release_views and run_wakeups must be callable");
        return NULL;
    }
    Py_ssize_t at[AT_COUNT];
    for (int k = 0; k < AT_COUNT; k++)
        if ((at[k] = slot_offset((PyTypeObject *)cls, SLOT_NAMES[k], "configure_settle")) < 0)
            return NULL;
    if (settle.acquire == NULL &&
        ((settle.acquire = PyUnicode_InternFromString("acquire")) == NULL ||
         (settle.release = PyUnicode_InternFromString("release")) == NULL ||
         (settle.empty = PyTuple_New(0)) == NULL))
        return NULL;
    Py_XSETREF(settle.completion, (PyTypeObject *)Py_NewRef(cls));
    memcpy(settle.at, at, sizeof at);
    Py_XSETREF(settle.pending, Py_NewRef(pending));
    Py_XSETREF(settle.done, Py_NewRef(done));
    Py_XSETREF(settle.no_callbacks, Py_NewRef(no_callbacks));
    Py_XSETREF(settle.release_views, Py_NewRef(release_views));
    Py_XSETREF(settle.run_wakeups, Py_NewRef(run_wakeups));
    Py_RETURN_NONE;
}

/* finish_done(completion): settle_done for one Completion, as _finish(None) would finish
 * it; the differential tests hold the two to the same result. */
PyObject *finish_done(PyObject *module, PyObject *completion)
{
    if (!settle_ready(completion)) {
        PyErr_Format(PyExc_TypeError, "finish_done: a Completion (configured), got %R",
                     completion);
        return NULL;
    }
    if (settle_done(completion) < 0)
        return NULL;
    Py_RETURN_NONE;
}
