/* MockCopy: the mock driver's host copy, its quiet case in C.
 *
 * The mock runs a copy at its call: it logs the call and copies the bytes.
 * With the core's op path in C, the mock's Python method (backends/mock/
 * _driver.py, ``memcpy_h2d`` and ``memcpy_d2h``) was half of what a 4 KiB
 * copy cost: its attribute loads, its frame and two cache look-ups, around a
 * copy that takes a tenth of it.  The mock installs one MockCopy over each of
 * the two methods.  It takes only the case that method takes without its
 * closure, and only once the method has filled both caches:
 *
 *   the driver is quiet (no fault injected, the device not lost), the stream
 *   records nothing, the host side is a C-contiguous memoryview of 1 byte or
 *   more (writable for a download), the device side an exact int, the
 *   stream's log entry for that size is cached (``h2d_calls`` or
 *   ``d2h_calls``) and so is the byte view of that device range
 *   (``_byte_views``, keyed by address and size) of the same length.
 *
 * Then it appends the log entry and copies, as the method does, and nothing
 * else.  Every other case (and so every fault, capture and message) is the
 * method's.  Everything the plain case reads is read again at each call, so a
 * fault injected, a capture begun or a range freed (which clears the view
 * cache) takes effect at the next copy.  The GIL is held throughout, as the
 * method holds it, so another thread's free cannot land between the look-up
 * and the copy.
 */
#include "mockcopy.h"
#include "objects.h"

#include <stddef.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *owner;  /* weakref to the driver */
    PyObject *method; /* its Python method, unbound: every other case */
    int to_device;    /* memcpy_h2d, whose log entries are the stream's h2d_calls */
} MockCopy;

static PyObject *name_quiet, *name_recording, *name_views, *name_log, *name_h2d, *name_d2h,
    *name_upload, *name_download;

int mock_copy_ready(void)
{
#define INTERN(var, text)                                  \
    if ((var = PyUnicode_InternFromString(text)) == NULL) \
        return -1;
    INTERN(name_quiet, "_quiet")
    INTERN(name_recording, "recording")
    INTERN(name_views, "_byte_views")
    INTERN(name_log, "call_log")
    INTERN(name_h2d, "h2d_calls")
    INTERN(name_d2h, "d2h_calls")
    INTERN(name_upload, "MockCopy memcpy_h2d")
    INTERN(name_download, "MockCopy memcpy_d2h")
#undef INTERN
    return 0;
}

/* ``fields[name]`` (borrowed), or NULL with no error set. */
static PyObject *field(PyObject *fields, PyObject *name)
{
    PyObject *value = PyDict_GetItemWithError(fields, name); /* str keys call no Python */
    if (value == NULL)
        PyErr_Clear();
    return value;
}

/* ``fields[name][key]`` (borrowed), of the exact type ``type`` unless that is NULL, or
 * NULL with no error set: no such dict, no such key, or a value of another type. */
static PyObject *cached(PyObject *fields, PyObject *name, PyObject *key, PyTypeObject *type)
{
    PyObject *cache = field(fields, name);
    if (cache == NULL || !PyDict_CheckExact(cache))
        return NULL;
    PyObject *value = PyDict_GetItemWithError(cache, key); /* int and tuple keys: no Python */
    if (value == NULL)
        PyErr_Clear();
    return value != NULL && (type == NULL || Py_TYPE(value) == type) ? value : NULL;
}

/* The device range's cached byte view of ``n`` bytes at ``address`` (borrowed), or NULL
 * (no error set). */
static PyObject *device_view(PyObject *fields, PyObject *address, PyObject *size, Py_ssize_t n)
{
    PyObject *key = PyTuple_Pack(2, address, size);
    if (key == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *view = cached(fields, name_views, key, &PyMemoryView_Type);
    Py_DECREF(key); /* the cache still holds the view */
    if (view != NULL) {
        Py_buffer *b = PyMemoryView_GET_BUFFER(view);
        if (b->len != n || b->readonly || !PyBuffer_IsContiguous(b, 'C'))
            view = NULL;
    }
    return view;
}

/* The copy made and logged (1), or not taken (0): nothing was done, no error is set.
 * The log and its entry are held across the allocations (a collection they trigger may
 * run a finalizer); the device view is looked up last, with nothing after it that can
 * run Python code, so it stays valid borrowed. */
static int quiet_copy(MockCopy *self, PyObject *fields, PyObject *host, PyObject *address,
                      PyObject *stream)
{
    if (!PyMemoryView_Check(host) || !PyLong_CheckExact(address))
        return 0;
    Py_buffer *h = PyMemoryView_GET_BUFFER(host);
    if (h->len < 1 || !PyBuffer_IsContiguous(h, 'C') || (!self->to_device && h->readonly))
        return 0;
    PyObject *log = field(fields, name_log);
    if (field(fields, name_quiet) != Py_True || log == NULL || !PyList_CheckExact(log))
        return 0;
    PyObject *stream_fields = PyObject_GenericGetDict(stream, NULL);
    if (stream_fields == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_INCREF(log);
    PyObject *size = NULL, *entry = NULL, *device = NULL;
    if (PyDict_CheckExact(stream_fields) && field(stream_fields, name_recording) == Py_None)
        size = PyLong_FromSsize_t(h->len);
    if (size != NULL)
        entry = Py_XNewRef(
            cached(stream_fields, self->to_device ? name_h2d : name_d2h, size, NULL));
    if (entry != NULL)
        device = device_view(fields, address, size, h->len);
    int done = device != NULL && PyList_Append(log, entry) == 0;
    if (!done)
        PyErr_Clear(); /* a failed allocation: the method tries again, and says so */
    else {
        void *bytes = PyMemoryView_GET_BUFFER(device)->buf;
        if (self->to_device)
            memmove(bytes, h->buf, (size_t)h->len);
        else
            memmove(h->buf, bytes, (size_t)h->len);
    }
    Py_XDECREF(entry);
    Py_XDECREF(size);
    Py_DECREF(stream_fields);
    Py_DECREF(log);
    return done;
}

/* memcpy_h2d(src, dst, stream) or memcpy_d2h(src, dst, stream), as the method. */
static PyObject *mock_copy_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames)
{
    MockCopy *self = (MockCopy *)callable;
    PyObject *name = self->to_device ? name_upload : name_download;
    if (self->owner == NULL) { /* cleared by the collector */
        PyErr_Format(PyExc_ReferenceError, "%U: its driver is gone", name);
        return NULL;
    }
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs == 3 && kwnames == NULL) {
        /* The driver's __dict__, read directly, through the weakref at each call: held
         * here, it would keep a dropped driver's memory until the next collection. */
        PyObject *driver = weak_target(self->owner);
        PyObject *fields = driver != NULL ? PyObject_GenericGetDict(driver, NULL) : NULL;
        int done = 0;
        if (fields == NULL)
            PyErr_Clear(); /* no __dict__: the method's case */
        else if (PyDict_CheckExact(fields)) {
            PyObject *host = self->to_device ? args[0] : args[1];
            PyObject *address = self->to_device ? args[1] : args[0];
            done = quiet_copy(self, fields, host, address, args[2]);
        }
        Py_XDECREF(fields);
        Py_XDECREF(driver);
        if (done)
            Py_RETURN_NONE;
    }
    return call_as_method(self->method, self->owner, args, nargs, kwnames, name);
}

static PyObject *mock_copy_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"owner", "method", "to_device", NULL};
    PyObject *owner, *method;
    int to_device;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOp:MockCopy", keywords, &owner, &method,
                                     &to_device))
        return NULL;
    if (!PyCallable_Check(method)) {
        PyErr_Format(PyExc_TypeError, "MockCopy: method must be callable, got %R", method);
        return NULL;
    }
    PyObject *fields = PyObject_GenericGetDict(owner, NULL); /* checked once, not kept */
    if (fields != NULL && !PyDict_CheckExact(fields)) {
        PyErr_Format(PyExc_TypeError, "MockCopy: the owner's __dict__ is a %s, not a dict",
                     Py_TYPE(fields)->tp_name);
        Py_CLEAR(fields);
    }
    PyObject *ref = fields != NULL ? PyWeakref_NewRef(owner, NULL) : NULL;
    Py_XDECREF(fields);
    MockCopy *self = ref != NULL ? (MockCopy *)type->tp_alloc(type, 0) : NULL;
    if (self == NULL) {
        Py_XDECREF(ref);
        return NULL;
    }
    self->vectorcall = mock_copy_call;
    self->owner = ref;
    self->method = Py_NewRef(method);
    self->to_device = to_device;
    return (PyObject *)self;
}

static int mock_copy_traverse(MockCopy *self, visitproc visit, void *arg)
{
    Py_VISIT(self->owner);
    Py_VISIT(self->method);
    return 0;
}

static int mock_copy_clear(MockCopy *self)
{
    Py_CLEAR(self->owner);
    Py_CLEAR(self->method);
    return 0;
}

static void mock_copy_dealloc(MockCopy *self)
{
    PyObject_GC_UnTrack(self);
    mock_copy_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *mock_copy_repr(MockCopy *self)
{
    return PyUnicode_FromFormat("<%U>", self->to_device ? name_upload : name_download);
}

PyTypeObject MockCopyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aruntime._enqueue_compiled.MockCopy",
    .tp_doc = "The mock driver's host copy, its quiet case in C (ffi/core/mockcopy.c).",
    .tp_basicsize = sizeof(MockCopy),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(MockCopy, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = mock_copy_new,
    .tp_traverse = (traverseproc)mock_copy_traverse,
    .tp_clear = (inquiry)mock_copy_clear,
    .tp_dealloc = (destructor)mock_copy_dealloc,
    .tp_repr = (reprfunc)mock_copy_repr,
};
