/* Where a class keeps an object slot: the C that reads instances in place (slots.h). */
#ifndef AR_SLOTS_H
#define AR_SLOTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* The byte offset of ``type``'s object slot ``name``, or -1 with a TypeError naming
 * ``who`` when it is not one: missing, or anything else a class may put there (a
 * property would be bypassed by reading the instance in place). */
static inline Py_ssize_t slot_offset(PyTypeObject *type, const char *name, const char *who)
{
    PyObject *descr = PyObject_GetAttrString((PyObject *)type, name);
    if (descr == NULL && !PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear(); /* no such attribute: not a slot either, said below */
    Py_ssize_t offset = -1;
    if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
        ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX)
        offset = ((PyMemberDescrObject *)descr)->d_member->offset;
    else
        PyErr_Format(PyExc_TypeError, "%s: %s.%s is not a slot", who, type->tp_name, name);
    Py_XDECREF(descr);
    return offset;
}

#endif
