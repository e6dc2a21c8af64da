/* An awaited tail's "still running?" asked in C at each loop step (tailprobe.c). */
#ifndef AR_TAILPROBE_H
#define AR_TAILPROBE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern PyTypeObject TailProbeType;

int tail_probe_ready(void);

#endif
