/* A sim's launch-site note, taken in C where it can be (site.c). */
#ifndef AR_SITE_H
#define AR_SITE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern PyTypeObject LaunchSiteType;

/* Tell the sim this launch's call site: 0, or -1 with an error set. */
int launch_site_note(PyObject *site);

#endif
