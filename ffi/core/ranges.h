/* A ledger's range check, its common case in C (ranges.c). */
#ifndef AR_RANGES_H
#define AR_RANGES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern PyTypeObject RangeCheckType;

#endif
