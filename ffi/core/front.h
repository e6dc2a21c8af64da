/* A Backend's memset and host copies, their common case in C (front.c). */
#ifndef AR_FRONT_H
#define AR_FRONT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern PyTypeObject OpFrontType;

/* Interns the names front.c reads; 0, or -1 with an error set (module init). */
int front_ready(void);

#endif
