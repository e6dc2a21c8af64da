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

/* The object in ``obj``'s slot at ``offset`` (from slot_offset), borrowed; NULL where unset. */
static inline PyObject *slot_at(PyObject *obj, Py_ssize_t offset)
{
    return *(PyObject **)((char *)obj + offset);
}

/* Put ``value`` in that slot, and return what it held: a new reference (None where unset). */
static inline PyObject *slot_swap(PyObject *obj, Py_ssize_t offset, PyObject *value)
{
    PyObject **field = (PyObject **)((char *)obj + offset);
    PyObject *old = *field != NULL ? *field : Py_NewRef(Py_None);
    *field = Py_NewRef(value);
    return old;
}

/* One attribute of the objects of one class, read in place while the class keeps it
 * as a slot: what PyObject_GetAttr returns, without the lookup, for an attribute
 * read once per op.  Refilled when an object of another class comes, or the class
 * changes (its version tag); any other class or attribute is a plain getattr. */
typedef struct {
    PyTypeObject *type;   /* the class last seen (a strong reference), or NULL */
    unsigned int version; /* its tp_version_tag then: 0 never matches */
    Py_ssize_t offset;    /* where its instances keep the slot; -1: not a slot */
} SlotCache;

static inline void slot_cache_fill(SlotCache *cache, PyTypeObject *type, PyObject *name)
{
    /* Generic lookup finds a data descriptor on the class before anything else. */
    PyObject *descr = type->tp_getattro == PyObject_GenericGetAttr ? _PyType_Lookup(type, name)
                                                                    : NULL;
    cache->offset = descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
                            ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX
                        ? ((PyMemberDescrObject *)descr)->d_member->offset
                        : -1;
    cache->version = type->tp_version_tag; /* _PyType_Lookup gave it one if it could */
    Py_XSETREF(cache->type, (PyTypeObject *)Py_NewRef((PyObject *)type));
}

/* ``obj.name`` (a new reference), as PyObject_GetAttr. */
static inline PyObject *slot_attr(SlotCache *cache, PyObject *obj, PyObject *name)
{
    PyTypeObject *type = Py_TYPE(obj);
    if (type != cache->type || type->tp_version_tag != cache->version || cache->version == 0)
        slot_cache_fill(cache, type, name);
    if (cache->offset >= 0) {
        PyObject *value = *(PyObject **)((char *)obj + cache->offset);
        if (value != NULL) /* unset: getattr raises the AttributeError */
            return Py_NewRef(value);
    }
    return PyObject_GetAttr(obj, name);
}

#endif
