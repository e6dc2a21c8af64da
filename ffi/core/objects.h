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
PyObject *driver_call(PyObject *call, PyObject *args, PyObject *handle);
int list_extend(PyObject *list, PyObject *part);
PyObject *iterator_of(PyObject *next);
int call_noargs_ok(PyObject *fn);

#endif
