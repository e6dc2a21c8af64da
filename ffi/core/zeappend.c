/* ZeAppend: a Level Zero driver's fill or copy whose common case is appended in C.
 *
 * A fill or a copy on a Level Zero stream is a barrier (when the list holds an
 * op since its last one) and the append, both on the list that holds the
 * stream's newest work.  Its Python method (backends/levelzero/_copies.py)
 * finds the list under the stream's lock, takes a host buffer's address and
 * hands both calls to the compiled wrappers; the Python around those two C
 * calls cost twice what they do.  The driver builds one ZeAppend per method
 * and installs it over the method, handing over where the library's function
 * pointers are kept (the compiled calls' table, read at each call), its Python
 * method and its failure namer.  So the driver still owns every call into its
 * library; this file only makes the calls it was handed, in the one plain case:
 *
 *   every argument is an int within what the C type holds (a host copy's
 *   buffer is a memoryview, writable for a download, of 1 to ``host_limit``
 *   bytes: never staged), the stream is capturing nothing, and its newest
 *   work is already on the list the op goes to (no hand-over between lists).
 *
 * Anything else goes to the Python method, which decides and says why.  A
 * failed call goes to the driver's namer, which raises as the method does.
 * The GIL is released around the library's calls, as cffi does, while the
 * stream's lock is held, as the method holds it.
 */
#include "zeappend.h"
#include "objects.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { ZE_FILL, ZE_COPY_H2D, ZE_COPY_D2H, ZE_COPY_D2D, ZE_SHAPES };

static const char *const ZE_SHAPE_NAMES[ZE_SHAPES] = {"memset_d8", "memcpy_h2d", "memcpy_d2h",
                                                      "memcpy_d2d"};
static const int ZE_ARITY[ZE_SHAPES] = {3, 2, 2, 3}; /* before the stream */

/* Set with a failed barrier's code, as the compiled calls' wrappers report it. */
#define BARRIER_FAILED ((unsigned long long)1 << 32)

typedef uint32_t (*fill_fn)(void *list, void *ptr, const void *pattern, size_t pattern_size,
                            size_t size, void *signal, uint32_t nwait, void **waits);
typedef uint32_t (*copy_fn)(void *list, void *dst, const void *src, size_t size, void *signal,
                            uint32_t nwait, void **waits);
typedef uint32_t (*barrier_fn)(void *list, void *signal, uint32_t nwait, void **waits);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *owner;         /* weakref to the driver */
    PyObject *method;        /* the driver's Python method, unbound: every other case */
    PyObject *fail;          /* the driver's ``_compiled_append_failed``, unbound */
    PyObject *name;          /* the op's Level Zero function, for ``fail`` */
    PyObject *table;         /* what holds the slots below, kept alive */
    void *const *function;   /* where the table keeps the op's function */
    void *const *barrier;    /* where it keeps zeCommandListAppendBarrier */
    Py_ssize_t host_limit;   /* the largest host copy the driver never stages */
    int shape;
} ZeAppend;

/* A fill's one-byte patterns, alive as long as the process: the device may read
 * one after the append returns. */
static unsigned char patterns[256];

static PyObject *name_lock, *name_acquire, *name_release, *name_capture, *name_last, *name_copy,
    *name_compute, *name_unordered, *name_address;

int ze_append_ready(void)
{
    for (int i = 0; i < 256; i++)
        patterns[i] = (unsigned char)i;
    name_lock = PyUnicode_InternFromString("lock");
    name_acquire = PyUnicode_InternFromString("acquire");
    name_release = PyUnicode_InternFromString("release");
    name_capture = PyUnicode_InternFromString("capture");
    name_last = PyUnicode_InternFromString("last");
    name_copy = PyUnicode_InternFromString("copy");
    name_compute = PyUnicode_InternFromString("compute");
    name_unordered = PyUnicode_InternFromString("unordered");
    name_address = PyUnicode_InternFromString("address");
    return name_lock && name_acquire && name_release && name_capture && name_last &&
                   name_copy && name_compute && name_unordered && name_address
               ? 0
               : -1;
}

/* One op's operands: device or host addresses and a size. */
typedef struct {
    uintptr_t dst, src;
    size_t nbytes;
    Py_buffer view; /* a host copy's buffer, released by the caller when ``viewed`` */
    int viewed;
} Operands;

/* A host copy's buffer, 1 to ``host_limit`` bytes; 0 (no error set) otherwise. */
static int host_buffer(ZeAppend *self, PyObject *obj, int writable, Operands *o)
{
    if (!PyMemoryView_Check(obj) ||
        PyObject_GetBuffer(obj, &o->view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return 0;
    }
    o->viewed = 1;
    return o->view.len > 0 && o->view.len <= self->host_limit;
}

/* The shape's arguments as operands: 1, or 0 where the plain case does not hold. */
static int operands(ZeAppend *self, PyObject *const *args, Operands *o)
{
    int ok = 1;
    switch (self->shape) {
    case ZE_FILL: { /* memset_d8(dst, value, nbytes) */
        o->dst = (uintptr_t)exact_u64(args[0], &ok);
        unsigned long long value = exact_u64(args[1], &ok);
        o->src = (uintptr_t)&patterns[value & 0xFF];
        o->nbytes = (size_t)exact_u64(args[2], &ok);
        return ok;
    }
    case ZE_COPY_D2D: /* memcpy_d2d(src, dst, nbytes) */
        o->src = (uintptr_t)exact_u64(args[0], &ok);
        o->dst = (uintptr_t)exact_u64(args[1], &ok);
        o->nbytes = (size_t)exact_u64(args[2], &ok);
        return ok;
    case ZE_COPY_H2D: /* memcpy_h2d(view, dst) */
        o->dst = (uintptr_t)exact_u64(args[1], &ok);
        if (!ok || !host_buffer(self, args[0], 0, o))
            return 0;
        o->src = (uintptr_t)o->view.buf;
        o->nbytes = (size_t)o->view.len;
        return 1;
    default: /* memcpy_d2h(src, view) */
        o->src = (uintptr_t)exact_u64(args[0], &ok);
        if (!ok || !host_buffer(self, args[1], 1, o))
            return 0;
        o->dst = (uintptr_t)o->view.buf;
        o->nbytes = (size_t)o->view.len;
        return 1;
    }
}

/* The list the op goes to when it holds the stream's newest work (a new reference),
 * else NULL without an error: a capture or a hand-over, the method's business. */
static PyObject *current_list(PyObject *stream)
{
    PyObject *capture = PyObject_GetAttr(stream, name_capture);
    PyObject *last = capture == Py_None ? PyObject_GetAttr(stream, name_last) : NULL;
    PyObject *copy = last != NULL ? PyObject_GetAttr(stream, name_copy) : NULL;
    PyObject *want = copy == Py_None ? PyObject_GetAttr(stream, name_compute) : Py_XNewRef(copy);
    PyErr_Clear();
    PyObject *out = want != NULL && want == last ? Py_NewRef(want) : NULL;
    Py_XDECREF(capture);
    Py_XDECREF(last);
    Py_XDECREF(copy);
    Py_XDECREF(want);
    return out;
}

/* The barrier if due, then the op: 0, or the failed call's code (BARRIER_FAILED set for
 * the barrier), as the compiled wrappers report it. */
static unsigned long long append(ZeAppend *self, void *list, int barrier_first, Operands *o)
{
    unsigned long long code = 0;
    barrier_fn barrier = (barrier_fn)*self->barrier;
    void *function = *self->function;
    Py_BEGIN_ALLOW_THREADS
    uint32_t rc = barrier_first ? barrier(list, NULL, 0, NULL) : 0;
    if (rc != 0)
        code = BARRIER_FAILED | rc;
    else if (self->shape == ZE_FILL)
        code = ((fill_fn)function)(list, (void *)o->dst, (const void *)o->src, 1, o->nbytes,
                                   NULL, 0, NULL);
    else
        code = ((copy_fn)function)(list, (void *)o->dst, (const void *)o->src, o->nbytes, NULL,
                                   0, NULL);
    Py_END_ALLOW_THREADS
    return code;
}

/* Under the stream's lock: 1 appended, 0 not the plain case (no error set), -1 raised. */
static int append_locked(ZeAppend *self, PyObject *owner, PyObject *stream, Operands *o)
{
    PyObject *list = current_list(stream);
    if (list == NULL)
        return 0;
    int ok = 1, rc = 0;
    PyObject *flag = PyObject_GetAttr(list, name_unordered);
    PyObject *address = flag != NULL ? PyObject_GetAttr(list, name_address) : NULL;
    void *handle = address != NULL ? (void *)(uintptr_t)exact_u64(address, &ok) : NULL;
    int unordered = flag != NULL ? PyObject_IsTrue(flag) : -1;
    PyErr_Clear();
    if (ok && handle != NULL && unordered >= 0) {
        unsigned long long code = append(self, handle, unordered, o);
        if (code == 0) {
            rc = unordered || PyObject_SetAttr(list, name_unordered, Py_True) == 0 ? 1 : -1;
        } else {
            PyObject *raised = PyObject_CallFunction(self->fail, "OOKO", owner, list, code,
                                                     self->name);
            Py_XDECREF(raised); /* it raises; a return is the namer's bug, said here */
            if (raised != NULL)
                PyErr_Format(PyExc_SystemError, "%U: the failure namer returned", self->name);
            rc = -1;
        }
    }
    Py_XDECREF(flag);
    Py_XDECREF(address);
    Py_DECREF(list);
    return rc;
}

/* 1 appended, 0 not the plain case (no error set), -1 raised. */
static int ze_run(ZeAppend *self, PyObject *const *args, PyObject *stream)
{
    Operands o = {0};
    int rc = 0;
    PyObject *owner = NULL, *lock = NULL;
    if (!operands(self, args, &o) || (owner = weak_target(self->owner)) == NULL)
        goto done;
    lock = PyObject_GetAttr(stream, name_lock);
    PyObject *held = lock != NULL ? PyObject_CallMethodNoArgs(lock, name_acquire) : NULL;
    if (held == NULL) {
        /* No lock: not a stream of this driver.  A failed acquire: that error. */
        if (lock == NULL)
            PyErr_Clear();
        rc = lock == NULL ? 0 : -1;
        goto done;
    }
    Py_DECREF(held);
    rc = append_locked(self, owner, stream, &o);
    PyObject *exc = rc < 0 ? take_exception() : NULL;
    PyObject *released = PyObject_CallMethodNoArgs(lock, name_release);
    if (released == NULL) {
        Py_XDECREF(exc);
        rc = -1;
    } else {
        Py_DECREF(released);
        if (exc != NULL)
            raise_again(exc);
    }
done:
    if (o.viewed)
        PyBuffer_Release(&o.view);
    Py_XDECREF(lock);
    Py_XDECREF(owner);
    return rc;
}

static PyObject *ze_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    ZeAppend *self = (ZeAppend *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && nargs == ZE_ARITY[self->shape] + 1) {
        int rc = ze_run(self, args, args[nargs - 1]);
        if (rc != 0)
            return rc > 0 ? Py_NewRef(Py_None) : NULL;
    }
    return call_as_method(self->method, self->owner, args, nargs, kwnames, self->name);
}

static PyObject *ze_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"owner",    "method",  "fail",  "shape",      "name",
                               "function", "barrier", "table", "host_limit", NULL};
    PyObject *owner, *method, *fail, *name, *table;
    const char *shape;
    unsigned long long function, barrier;
    Py_ssize_t host_limit;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOsUKKOn:ZeAppend", keywords, &owner,
                                     &method, &fail, &shape, &name, &function, &barrier, &table,
                                     &host_limit))
        return NULL;
    int which = -1;
    for (int i = 0; i < ZE_SHAPES; i++) {
        if (strcmp(shape, ZE_SHAPE_NAMES[i]) == 0)
            which = i;
    }
    if (which < 0) {
        PyErr_Format(PyExc_ValueError, "ZeAppend: no shape %s (memset_d8, memcpy_h2d, "
                     "memcpy_d2h, memcpy_d2d)", shape);
        return NULL;
    }
    if (function == 0 || barrier == 0 || host_limit < 0) {
        PyErr_SetString(PyExc_ValueError, "ZeAppend: function and barrier must be non-null "
                        "addresses of the table's slots, host_limit not negative");
        return NULL;
    }
    if (!PyCallable_Check(method) || !PyCallable_Check(fail)) {
        PyErr_SetString(PyExc_TypeError, "ZeAppend: method and fail must be callable");
        return NULL;
    }
    PyObject *ref = PyWeakref_NewRef(owner, NULL);
    if (ref == NULL)
        return NULL;
    ZeAppend *self = (ZeAppend *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(ref);
        return NULL;
    }
    self->vectorcall = ze_vectorcall;
    self->owner = ref;
    self->method = Py_NewRef(method);
    self->fail = Py_NewRef(fail);
    self->name = Py_NewRef(name);
    self->table = Py_NewRef(table);
    self->function = (void *const *)(uintptr_t)function;
    self->barrier = (void *const *)(uintptr_t)barrier;
    self->host_limit = host_limit;
    self->shape = which;
    return (PyObject *)self;
}

static int ze_traverse(ZeAppend *self, visitproc visit, void *arg)
{
    Py_VISIT(self->owner);
    Py_VISIT(self->method);
    Py_VISIT(self->fail);
    Py_VISIT(self->table);
    return 0;
}

static int ze_clear(ZeAppend *self)
{
    Py_CLEAR(self->owner);
    Py_CLEAR(self->method);
    Py_CLEAR(self->fail);
    Py_CLEAR(self->name);
    Py_CLEAR(self->table);
    return 0;
}

static void ze_dealloc(ZeAppend *self)
{
    PyObject_GC_UnTrack(self);
    ze_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ze_repr(ZeAppend *self)
{
    return PyUnicode_FromFormat("<ZeAppend %s -> %U>", ZE_SHAPE_NAMES[self->shape], self->name);
}

PyTypeObject ZeAppendType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aruntime._enqueue_compiled.ZeAppend",
    .tp_doc = "A Level Zero fill or copy appended in C in its plain case (ffi/core/zeappend.c).",
    .tp_basicsize = sizeof(ZeAppend),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(ZeAppend, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = ze_new,
    .tp_traverse = (traverseproc)ze_traverse,
    .tp_clear = (inquiry)ze_clear,
    .tp_dealloc = (destructor)ze_dealloc,
    .tp_repr = (reprfunc)ze_repr,
};
