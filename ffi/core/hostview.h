/* The common case of a copy's host buffer, checked in C (hostview.c). */
#ifndef AR_HOSTVIEW_H
#define AR_HOSTVIEW_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *host_view(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *configure_host_view(PyObject *module, PyObject *args);

/* host_view's work for C callers: the view (a new reference) or None; a live
 * pinned HostBuffer's ledger entry in ``*entry`` (a new reference; NULL for any
 * other buffer, and whenever the view is None). */
PyObject *host_view_of(PyObject *obj, int writable, PyObject **entry);

#endif
