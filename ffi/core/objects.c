/* CPython object helpers for the compiled enqueue (enqueue.c): building slotted
 * instances without __init__, calling a driver function with the stream last,
 * carrying an exception across a lock release, extending a list as
 * ``list.extend`` does.  None of them knows a stream, so they live apart from
 * the enqueue's own steps.
 */
#include "objects.h"
#include "slots.h"

#include <string.h>

/* Fill ``layout`` for ``cls``, whose ``slots`` must be exactly ``names`` (and __weakref__). */
int layout_of(Layout *layout, PyObject *cls, PyObject *slots, const char *const *names,
              int count)
{
    PyTypeObject *type = (PyTypeObject *)cls;
    Py_ssize_t written = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(slots); i++) {
        const char *slot = PyUnicode_AsUTF8(PyTuple_GET_ITEM(slots, i));
        if (slot == NULL)
            return -1;
        if (strcmp(slot, "__weakref__") == 0)
            continue;
        int known = 0;
        for (int k = 0; k < count && !known; k++)
            known = strcmp(slot, names[k]) == 0;
        if (!known) {
            /* A slot this file does not know would be left unset. */
            PyErr_Format(PyExc_TypeError, "configure: %s slot %s is not one this file writes",
                         type->tp_name, slot);
            return -1;
        }
        written++;
    }
    if (written != count) {
        PyErr_Format(PyExc_TypeError, "configure: %s has %zd slots, this file writes %d",
                     type->tp_name, written, count);
        return -1;
    }
    Py_ssize_t offset[16];
    for (int k = 0; k < count; k++) {
        if ((offset[k] = slot_offset(type, names[k], "configure")) < 0)
            return -1;
    }
    Py_XSETREF(layout->type, (PyTypeObject *)Py_NewRef(cls));
    memcpy(layout->offset, offset, sizeof offset);
    return 0;
}

/* The exception being raised, normalized and with its traceback, as ``except ... as exc``. */
PyObject *take_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

void raise_again(PyObject *exc)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
#endif
}

/* ``call(*args, handle)``; NULL with the exception set if it raised. */
PyObject *driver_call(PyObject *call, PyObject *args, PyObject *handle)
{
    PyObject *stack[16];
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n >= 16) {
        PyObject *with = PyTuple_New(n + 1);
        if (with == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(with, i, Py_NewRef(PyTuple_GET_ITEM(args, i)));
        PyTuple_SET_ITEM(with, n, Py_NewRef(handle));
        PyObject *r = PyObject_Call(call, with, NULL);
        Py_DECREF(with);
        return r;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        stack[i] = PyTuple_GET_ITEM(args, i);
    stack[n] = handle;
    return PyObject_Vectorcall(call, stack, (size_t)(n + 1), NULL);
}

/* ``list.extend(part)``: a tuple's items appended one by one (a slice assignment
 * costs more than the few items an op holds), anything else as a slice. */
int list_extend(PyObject *list, PyObject *part)
{
    if (!PyTuple_CheckExact(part)) {
        Py_ssize_t n = PyList_GET_SIZE(list);
        return PyList_SetSlice(list, n, n, part);
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(part); i++) {
        if (PyList_Append(list, PyTuple_GET_ITEM(part, i)) < 0)
            return -1;
    }
    return 0;
}

/* The iterator whose bound __next__ ``next`` is (a new reference), else NULL. */
PyObject *iterator_of(PyObject *next)
{
    PyObject *it = PyObject_GetAttrString(next, "__self__");
    PyObject *own = it != NULL && Py_TYPE(it)->tp_iternext != NULL
                        ? PyObject_GetAttrString(it, "__next__")
                        : NULL;
    int same = own != NULL ? PyObject_RichCompareBool(own, next, Py_EQ) : 0;
    PyErr_Clear();
    Py_XDECREF(own);
    if (same <= 0)
        Py_CLEAR(it);
    return it;
}

/* ``fn()`` for its effect: 0, or -1 with the exception set. */
int call_noargs_ok(PyObject *fn)
{
    PyObject *r = PyObject_CallNoArgs(fn);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

PyObject *weak_target(PyObject *ref)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *target;
    if (PyWeakref_GetRef(ref, &target) < 0)
        PyErr_Clear();
    return target; /* NULL once it is gone */
#else
    PyObject *target = PyWeakref_GetObject(ref);
    if (target == NULL)
        PyErr_Clear();
    return target == NULL || target == Py_None ? NULL : Py_NewRef(target);
#endif
}

unsigned long long exact_u64(PyObject *value, int *ok)
{
    if (!PyLong_CheckExact(value)) {
        *ok = 0;
        return 0;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        *ok = 0;
    }
    return v;
}

PyObject *call_as_method(PyObject *method, PyObject *owner_ref, PyObject *const *args,
                         Py_ssize_t nargs, PyObject *kwnames, PyObject *name)
{
    PyObject *owner = weak_target(owner_ref);
    if (owner == NULL) {
        PyErr_Format(PyExc_ReferenceError, "%U: its driver is gone", name);
        return NULL;
    }
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *stack[16];
    PyObject *out = NULL;
    if (nargs + nkw < 16) {
        stack[0] = owner;
        for (Py_ssize_t i = 0; i < nargs + nkw; i++)
            stack[i + 1] = args[i];
        out = PyObject_Vectorcall(method, stack, (size_t)(nargs + 1), kwnames);
    } else {
        PyErr_Format(PyExc_TypeError, "%U: too many arguments", name);
    }
    Py_DECREF(owner);
    return out;
}
