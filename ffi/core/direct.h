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

/* What ``call``, a DirectCall over ``stream_finished``, answers for ``stream`` in its
 * plain case: STREAM_RUNNING, STREAM_DONE (found done and synchronized), STREAM_FAILED
 * (the driver's error set) or STREAM_ASK (no answer here: ask the method). */
enum { STREAM_FAILED = -1, STREAM_ASK, STREAM_RUNNING, STREAM_DONE };
int direct_stream_answer(PyObject *call, uintptr_t stream);

int direct_ready(void);

#endif
