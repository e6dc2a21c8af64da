/* CPython object helpers for the core's C (objects.c): none of them knows a stream. */
#ifndef AR_OBJECTS_H
#define AR_OBJECTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* A Python class with __slots__, as the enqueue builds its instances without __init__. */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t offset[16];
} Layout;

static inline void set_slot(const Layout *layout, PyObject *obj, int slot, PyObject *value)
{
    PyObject **field = (PyObject **)((char *)obj + layout->offset[slot]);
    PyObject *old = *field;
    Py_INCREF(value);
    *field = value;
    Py_XDECREF(old);
}

int layout_of(Layout *layout, PyObject *cls, PyObject *slots, const char *const *names,
              int count);
PyObject *take_exception(void);
/* Raise ``exc`` (from take_exception) again; the reference is stolen. */
void raise_again(PyObject *exc);
PyObject *driver_call(PyObject *call, PyObject *args, PyObject *handle);
int list_extend(PyObject *list, PyObject *part);
PyObject *iterator_of(PyObject *next);
int call_noargs_ok(PyObject *fn);

/* The object ``ref`` (a weakref) points to, a new reference, or NULL without an error
 * once it is gone. */
PyObject *weak_target(PyObject *ref);
/* An exact int that fits 64 unsigned bits; 0 with *ok cleared otherwise (no error set). */
unsigned long long exact_u64(PyObject *value, int *ok);
/* ``method(owner, *args)``, ``owner`` the target of the weakref ``owner_ref``: a
 * compiled driver call's every other case.  ``name`` names it in a ReferenceError. */
PyObject *call_as_method(PyObject *method, PyObject *owner_ref, PyObject *const *args,
                         Py_ssize_t nargs, PyObject *kwnames, PyObject *name);

#endif
