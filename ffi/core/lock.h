/* A stream's reentrant lock, with a C entry for the compiled enqueue (lock.c). */
#ifndef AR_LOCK_H
#define AR_LOCK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern PyTypeObject StreamLockType;

/* Take the lock, waiting as long as it takes (signal handlers run meanwhile):
 * 0, or -1 with the exception a handler raised. */
int stream_lock_acquire(PyObject *lock);

/* Let go of one level: 0, or -1 (RuntimeError) when this thread does not hold it. */
int stream_lock_release(PyObject *lock);

#endif
