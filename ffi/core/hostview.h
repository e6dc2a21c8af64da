/* The common case of a copy's host buffer, checked in C (hostview.c). */
#ifndef AR_HOSTVIEW_H
#define AR_HOSTVIEW_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *host_view(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *configure_host_view(PyObject *module, PyObject *args);

/* A pinned HostBuffer's ledger entry (its record's ``entry``), a new reference;
 * NULL for any other object, or where it has none (set an error only on a failed
 * read, which the caller clears: the Python path then decides). */
PyObject *pinned_entry(PyObject *obj);

#endif
