/* host_view: a copy's host buffer as a flat byte view, for the common case.
 *
 * Every host copy needs a memoryview of the user's buffer (the core keeps
 * it until the copy is done), checked flat, C-contiguous, raw bytes and
 * writable where the copy writes.  ``_validate.as_host_view`` does that in
 * Python, and its attribute reads and a pinned buffer's ``freed`` property
 * cost more than the copy's driver call.  This is its common case only:
 * an object of one of the plain buffer types, or a pinned HostBuffer that
 * is not freed, whose view is C-contiguous (and writable where asked):
 * flat unsigned bytes as it is, typed data cast to bytes as as_host_view
 * casts it.  Anything else (another type, a freed buffer, a format that
 * does not cast, an error) returns None, and as_host_view decides and
 * words the error.
 */
#include "hostview.h"
#include "slots.h"

#include <string.h>

static struct {
    PyObject *plain;  /* a tuple of the exact types that need no check */
    PyObject *pinned; /* HostBuffer */
    PyObject *record; /* "_record": a HostBuffer's record, None for ordinary memory */
    PyObject *freed;  /* "freed": the record's flag */
    PyObject *entry;  /* "entry": the record's ledger entry */
} config;

/* config.record, config.freed and config.entry, read in place where they are slots. */
static SlotCache record_of, freed_of, entry_of;

PyObject *configure_host_view(PyObject *module, PyObject *args)
{
    PyObject *plain, *pinned, *record, *freed, *entry;
    if (!PyArg_ParseTuple(args, "O!O!UUU:configure_host_view", &PyTuple_Type, &plain,
                          &PyType_Type, &pinned, &record, &freed, &entry))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(plain); i++) {
        if (!PyType_Check(PyTuple_GET_ITEM(plain, i))) {
            PyErr_SetString(PyExc_TypeError, "configure_host_view: plain must hold types");
            return NULL;
        }
    }
    Py_XSETREF(config.plain, Py_NewRef(plain));
    Py_XSETREF(config.pinned, Py_NewRef(pinned));
    Py_XSETREF(config.record, Py_NewRef(record));
    Py_XSETREF(config.freed, Py_NewRef(freed));
    Py_XSETREF(config.entry, Py_NewRef(entry));
    Py_CLEAR(record_of.type); /* the names may be new */
    Py_CLEAR(freed_of.type);
    Py_CLEAR(entry_of.type);
    Py_RETURN_NONE;
}

/* 1: a live HostBuffer or a plain type; 0: as_host_view must look (-1 never).
 * ``entry``: set to a live HostBuffer's ledger entry (a new reference), else
 * left NULL; a HostBuffer whose entry cannot be read is left to as_host_view. */
static int plain_or_live(PyObject *obj, PyObject **entry)
{
    PyTypeObject *type = Py_TYPE(obj);
    if ((PyObject *)type == config.pinned) {
        PyObject *record = slot_attr(&record_of, obj, config.record);
        int live = 0;
        if (record == Py_None) {
            live = 1;
        } else if (record != NULL) {
            PyObject *freed = slot_attr(&freed_of, record, config.freed);
            live = freed == Py_False;
            Py_XDECREF(freed);
            if (live) {
                *entry = slot_attr(&entry_of, record, config.entry);
                if (*entry == Py_None)
                    Py_CLEAR(*entry);
                live = *entry != NULL;
            }
        }
        Py_XDECREF(record);
        PyErr_Clear();
        return live;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(config.plain); i++) {
        if ((PyObject *)type == PyTuple_GET_ITEM(config.plain, i))
            return 1;
    }
    return 0;
}

/* host_view(obj, writable): a flat unsigned-byte view of ``obj``, or None. */
PyObject *host_view(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "host_view takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    int writable = PyObject_IsTrue(args[1]);
    if (writable < 0)
        return NULL;
    PyObject *entry = NULL;
    PyObject *view = host_view_of(args[0], writable, &entry);
    Py_XDECREF(entry);
    return view;
}

PyObject *host_view_of(PyObject *obj, int writable, PyObject **entry)
{
    *entry = NULL;
    if (config.plain == NULL || !plain_or_live(obj, entry))
        Py_RETURN_NONE;
    PyObject *view = PyMemoryView_FromObject(obj);
    if (view == NULL) {
        PyErr_Clear();
        Py_CLEAR(*entry);
        Py_RETURN_NONE;
    }
    Py_buffer *b = PyMemoryView_GET_BUFFER(view);
    int usable = PyBuffer_IsContiguous(b, 'C') && !(writable && b->readonly);
    if (usable && (b->format == NULL || strcmp(b->format, "B") == 0) && b->ndim == 1)
        return view;
    /* Typed data (a float32 array): as_host_view's cast to bytes, the same view. */
    if (usable && b->format != NULL && strchr(b->format, 'O') == NULL) {
        PyObject *flat = PyObject_CallMethod(view, "cast", "s", "B");
        if (flat != NULL) {
            Py_DECREF(view); /* the cast holds the same export */
            return flat;
        }
        PyErr_Clear();
    }
    /* Released now, not whenever it is collected: as_host_view makes its own. */
    PyObject *released = PyObject_CallMethod(view, "release", NULL);
    Py_XDECREF(released);
    PyErr_Clear();
    Py_DECREF(view);
    Py_CLEAR(*entry);
    Py_RETURN_NONE;
}
