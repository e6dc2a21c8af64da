/* A driver call the compiled enqueue makes without Python (direct.c). */
#ifndef AR_DIRECT_H
#define AR_DIRECT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

extern PyTypeObject DirectCallType;

/* ``call(*args, stream)`` straight into C when ``call`` is a DirectCall that
 * can take it: 1 done, 0 not taken (make the Python call; no error set),
 * -1 the driver failed (its DriverError set). */
int direct_enqueue(PyObject *call, PyObject *args, uintptr_t stream);

int direct_ready(void);

#endif
