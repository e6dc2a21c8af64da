/* The mock driver's host copy, its quiet case in C (mockcopy.c). */
#ifndef AR_MOCKCOPY_H
#define AR_MOCKCOPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern PyTypeObject MockCopyType;

int mock_copy_ready(void);

#endif
