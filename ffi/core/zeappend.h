/* A Level Zero driver's fill or copy, appended in C in its common case (zeappend.c). */
#ifndef AR_ZEAPPEND_H
#define AR_ZEAPPEND_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern PyTypeObject ZeAppendType;

int ze_append_ready(void);

#endif
