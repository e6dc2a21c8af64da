/* A Completion finished in C, as Completion._finish(None) finishes it (settle.c). */
#ifndef AR_SETTLE_H
#define AR_SETTLE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Whether ``completion`` is a Completion this file can finish (configured, exact type). */
int settle_ready(PyObject *completion);
/* Finish ``completion`` as done, unless it is finished already: 0, or -1 with an error.
 * The caller has checked settle_ready and that nothing orders the op after a failure. */
int settle_done(PyObject *completion);
PyObject *configure_settle(PyObject *module, PyObject *args);
PyObject *finish_done(PyObject *module, PyObject *completion);

#endif
