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
#include "site.h"
#include "slots.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { ZE_FILL, ZE_COPY_H2D, ZE_COPY_D2H, ZE_COPY_D2D, ZE_LAUNCH, ZE_SHAPES };

static const char *const ZE_SHAPE_NAMES[ZE_SHAPES] = {"memset_d8", "memcpy_h2d", "memcpy_d2h",
                                                      "memcpy_d2d", "launch"};
static const int ZE_ARITY[ZE_SHAPES] = {3, 2, 2, 3, 3}; /* before the stream */

/* A launch with more arguments goes to the method. */
enum { LAUNCH_ARGS_MAX = 64 };

/* Set with a failed barrier's code, as the compiled calls' wrappers report it. */
#define BARRIER_FAILED ((unsigned long long)1 << 32)

typedef uint32_t (*fill_fn)(void *list, void *ptr, const void *pattern, size_t pattern_size,
                            size_t size, void *signal, uint32_t nwait, void **waits);
typedef uint32_t (*copy_fn)(void *list, void *dst, const void *src, size_t size, void *signal,
                            uint32_t nwait, void **waits);
typedef uint32_t (*barrier_fn)(void *list, void *signal, uint32_t nwait, void **waits);
typedef uint32_t (*launch_fn)(void *list, void *kernel, const void *groups, void *signal,
                              uint32_t nwait, void **waits);
typedef uint32_t (*set_arg_fn)(void *kernel, uint32_t index, size_t size, const void *value);

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
    void *const *set_arg;    /* ZE_LAUNCH: where it keeps zeKernelSetArgumentValue */
    PyObject *set_again;     /* ZE_LAUNCH: the driver's ``_set_arg``, unbound: a failed set */
    PyObject *append_other;  /* ZE_LAUNCH: its ``_append_launch``, unbound: any other list */
    PyObject *note;          /* ZE_LAUNCH: called before the append (a sim's site), or None */
    PyObject *scalars;       /* ZE_LAUNCH: numpy's scalar class, whose bytes an argument is */
    PyObject *pointers;      /* ZE_LAUNCH: the DevicePtr class, whose address one is */
    Py_ssize_t host_limit;   /* the largest host copy the driver never stages */
    int shape;
} ZeAppend;

/* A fill's one-byte patterns, alive as long as the process: the device may read
 * one after the append returns. */
static unsigned char patterns[256];

static PyObject *name_lock, *name_acquire, *name_release, *name_capture, *name_last, *name_copy,
    *name_compute, *name_unordered, *name_address, *name_num_args, *name_block, *name_grid,
    *name_args, *name_groups_address, *name_ptr_address;

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
    name_num_args = PyUnicode_InternFromString("num_args");
    name_block = PyUnicode_InternFromString("block");
    name_grid = PyUnicode_InternFromString("grid");
    name_args = PyUnicode_InternFromString("args");
    name_groups_address = PyUnicode_InternFromString("groups_address");
    name_ptr_address = PyUnicode_InternFromString("_address");
    return name_lock && name_acquire && name_release && name_capture && name_last &&
                   name_copy && name_compute && name_unordered && name_address &&
                   name_num_args && name_block && name_grid && name_args &&
                   name_groups_address && name_ptr_address
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
static PyObject *current_list(PyObject *stream, int copy_op)
{
    PyObject *capture = PyObject_GetAttr(stream, name_capture);
    PyObject *last = capture == Py_None ? PyObject_GetAttr(stream, name_last) : NULL;
    PyObject *copy = last != NULL && copy_op ? PyObject_GetAttr(stream, name_copy) : NULL;
    PyObject *want = last != NULL && (!copy_op || copy == Py_None)
                         ? PyObject_GetAttr(stream, name_compute)
                         : Py_XNewRef(copy);
    PyErr_Clear();
    PyObject *out = want != NULL && want == last ? Py_NewRef(want) : NULL;
    Py_XDECREF(capture);
    Py_XDECREF(last);
    Py_XDECREF(copy);
    Py_XDECREF(want);
    return out;
}

/* The barrier if due, then the op: 0, or the failed call's code (BARRIER_FAILED set for
 * the barrier), as the compiled wrappers report it.  A launch's operands are its kernel
 * (``dst``) and its group count (``src``). */
static unsigned long long append(ZeAppend *self, void *list, int barrier_first, Operands *o)
{
    unsigned long long code = 0;
    barrier_fn barrier = (barrier_fn)*self->barrier;
    void *function = *self->function;
    Py_BEGIN_ALLOW_THREADS
    uint32_t rc = barrier_first ? barrier(list, NULL, 0, NULL) : 0;
    if (rc != 0)
        code = BARRIER_FAILED | rc;
    else if (self->shape == ZE_LAUNCH)
        code = ((launch_fn)function)(list, (void *)o->dst, (const void *)o->src, NULL, 0, NULL);
    else if (self->shape == ZE_FILL)
        code = ((fill_fn)function)(list, (void *)o->dst, (const void *)o->src, 1, o->nbytes,
                                   NULL, 0, NULL);
    else
        code = ((copy_fn)function)(list, (void *)o->dst, (const void *)o->src, o->nbytes, NULL,
                                   0, NULL);
    Py_END_ALLOW_THREADS
    return code;
}

/* Under the stream's lock (``data``: the Operands): 1 appended, 0 not the plain case (no
 * error set), -1 raised. */
static int append_locked(ZeAppend *self, PyObject *owner, PyObject *stream, void *data)
{
    Operands *o = (Operands *)data;
    PyObject *list = current_list(stream, self->shape != ZE_LAUNCH);
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

/* ``step(self, owner, target, data)`` under ``target.lock``: its result (1 done, 0 not
 * the plain case, -1 raised), with the lock released whatever it raised. */
typedef int (*locked_step)(ZeAppend *self, PyObject *owner, PyObject *target, void *data);

static int under_lock(ZeAppend *self, PyObject *owner, PyObject *target, locked_step step,
                      void *data)
{
    PyObject *lock = PyObject_GetAttr(target, name_lock);
    PyObject *held = lock != NULL ? PyObject_CallMethodNoArgs(lock, name_acquire) : NULL;
    if (held == NULL) {
        /* No lock: not an object of this driver.  A failed acquire: that error. */
        if (lock == NULL)
            PyErr_Clear();
        Py_XDECREF(lock);
        return lock == NULL ? 0 : -1;
    }
    Py_DECREF(held);
    int rc = step(self, owner, target, data);
    PyObject *exc = rc < 0 ? take_exception() : NULL;
    PyObject *released = PyObject_CallMethodNoArgs(lock, name_release);
    Py_DECREF(lock);
    if (released == NULL) {
        Py_XDECREF(exc);
        return -1;
    }
    Py_DECREF(released);
    if (exc != NULL)
        raise_again(exc);
    return rc;
}

/* 1 appended, 0 not the plain case (no error set), -1 raised. */
static int ze_run(ZeAppend *self, PyObject *const *args, PyObject *stream)
{
    Operands o = {0};
    int rc = 0;
    PyObject *owner = NULL;
    if (operands(self, args, &o) && (owner = weak_target(self->owner)) != NULL)
        rc = under_lock(self, owner, stream, append_locked, &o);
    if (o.viewed)
        PyBuffer_Release(&o.view);
    Py_XDECREF(owner);
    return rc;
}

/* -- launches ---------------------------------------------------------------------- */

/* One launch argument's bytes, as ``arg_bytes`` makes them: a numpy scalar's own bytes,
 * raw bytes as they are, or a DevicePtr's address or an int, 8 bytes little-endian. */
typedef struct {
    const void *bytes;
    Py_ssize_t len;
    unsigned char address[8];
    Py_buffer view;
    int viewed;
} ArgBytes;

/* 1, or 0 (no error set) for an argument this file does not know: the method's.
 * ``scalars`` is numpy's scalar base class, ``pointers`` the DevicePtr class. */
static int arg_bytes_of(ZeAppend *self, PyObject *arg, ArgBytes *a)
{
    if (PyBytes_CheckExact(arg) || PyObject_TypeCheck(arg, (PyTypeObject *)self->scalars)) {
        if (PyObject_GetBuffer(arg, &a->view, PyBUF_SIMPLE) < 0) {
            PyErr_Clear();
            return 0;
        }
        a->viewed = 1;
        a->bytes = a->view.buf;
        a->len = a->view.len;
        return 1;
    }
    /* An int is an address too (``int(arg)``), as a DevicePtr's is. */
    int exact = PyLong_CheckExact(arg);
    if (!exact && !Py_IS_TYPE(arg, (PyTypeObject *)self->pointers))
        return 0;
    static SlotCache address_of; /* DevicePtr._address */
    PyObject *address = exact ? Py_NewRef(arg) : slot_attr(&address_of, arg, name_ptr_address);
    int ok = address != NULL;
    unsigned long long v = ok ? exact_u64(address, &ok) : 0;
    Py_XDECREF(address);
    PyErr_Clear();
    for (int i = 0; i < 8; i++)
        a->address[i] = (unsigned char)(v >> (8 * i));
    a->bytes = a->address;
    a->len = 8;
    return ok;
}

typedef struct {
    PyObject *config, *args, *stream;
    ArgBytes *values;
    Py_ssize_t n;
} Launch;

/* Whether the kernel object holds ``config``'s group size and grid already. */
static int geometry_held(PyObject *kernel, PyObject *config)
{
    PyObject *block = PyObject_GetAttr(kernel, name_block);
    PyObject *grid = block != NULL ? PyObject_GetAttr(kernel, name_grid) : NULL;
    int same = grid != NULL &&
               PyObject_RichCompareBool(block, PyTuple_GET_ITEM(config, 1), Py_EQ) == 1 &&
               PyObject_RichCompareBool(grid, PyTuple_GET_ITEM(config, 0), Py_EQ) == 1;
    PyErr_Clear();
    Py_XDECREF(block);
    Py_XDECREF(grid);
    return same;
}

/* Set argument ``i`` on the kernel where it differs from what it holds (``held``): 0,
 * or -1 raised.  A failed set is made again by the method, which names it. */
static int set_argument(ZeAppend *self, PyObject *owner, PyObject *kernel, void *handle,
                        PyObject *held, Py_ssize_t i, Launch *l)
{
    ArgBytes *a = &l->values[i];
    PyObject *now = PyList_GET_ITEM(held, i);
    if (PyBytes_CheckExact(now) && PyBytes_GET_SIZE(now) == a->len &&
        memcmp(PyBytes_AS_STRING(now), a->bytes, (size_t)a->len) == 0)
        return 0;
    PyObject *value = PyBytes_FromStringAndSize(a->bytes, a->len);
    if (value == NULL || PyList_SetItem(held, i, Py_NewRef(Py_None)) < 0) {
        Py_XDECREF(value);
        return -1;
    }
    uint32_t rc;
    set_arg_fn set = (set_arg_fn)*self->set_arg;
    Py_BEGIN_ALLOW_THREADS
    rc = set(handle, (uint32_t)i, (size_t)a->len, a->bytes);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyObject *again = PyObject_CallFunction(self->set_again, "OOnOO", owner, kernel, i, value,
                                                l->args);
        if (again == NULL) {
            Py_DECREF(value);
            return -1;
        }
        Py_DECREF(again);
    }
    return PyList_SetItem(held, i, value); /* steals value */
}

/* Under the kernel's lock: the arguments set, the site noted, then the append (the
 * stream's newest list here, any other through the method's ``_append_launch``). */
static int launch_locked(ZeAppend *self, PyObject *owner, PyObject *kernel, void *data)
{
    Launch *l = (Launch *)data;
    if (!geometry_held(kernel, l->config))
        return 0;
    int ok = 1;
    PyObject *held = PyObject_GetAttr(kernel, name_args);
    PyObject *address = PyObject_GetAttr(kernel, name_address);
    PyObject *groups = PyObject_GetAttr(kernel, name_groups_address);
    Operands o = {0};
    o.dst = address != NULL ? (uintptr_t)exact_u64(address, &ok) : 0;
    o.src = groups != NULL ? (uintptr_t)exact_u64(groups, &ok) : 0;
    PyErr_Clear();
    int rc = 0;
    if (ok && o.dst != 0 && o.src != 0 && held != NULL && PyList_CheckExact(held) &&
        PyList_GET_SIZE(held) >= l->n) {
        rc = 1;
        for (Py_ssize_t i = 0; i < l->n && rc > 0; i++)
            rc = set_argument(self, owner, kernel, (void *)o.dst, held, i, l) < 0 ? -1 : 1;
        if (rc > 0 && self->note != Py_None)
            rc = (Py_IS_TYPE(self->note, &LaunchSiteType) ? launch_site_note(self->note)
                                                          : call_noargs_ok(self->note)) < 0
                     ? -1
                     : 1;
        if (rc > 0)
            rc = under_lock(self, owner, l->stream, append_locked, &o);
        if (rc == 0) { /* a hand-over or a capture: the method's append, on its list */
            PyObject *done = PyObject_CallFunctionObjArgs(self->append_other, owner, l->stream,
                                                          kernel, NULL);
            rc = done != NULL ? 1 : -1;
            Py_XDECREF(done);
        }
    }
    Py_XDECREF(held);
    Py_XDECREF(address);
    Py_XDECREF(groups);
    return rc;
}

/* launch(kernel, config, args, stream): 1 launched, 0 the method's, -1 raised. */
static int launch_run(ZeAppend *self, PyObject *const *args, PyObject *stream)
{
    PyObject *kernel = args[0], *config = args[1], *kernel_args = args[2];
    if (!PyTuple_Check(config) || PyTuple_GET_SIZE(config) != 3 ||
        !(PyList_CheckExact(kernel_args) || PyTuple_CheckExact(kernel_args)))
        return 0;
    int ok = 1;
    unsigned long long shared = exact_u64(PyTuple_GET_ITEM(config, 2), &ok);
    PyObject *counted = PyObject_GetAttr(kernel, name_num_args);
    unsigned long long want = counted != NULL ? exact_u64(counted, &ok) : 0;
    Py_XDECREF(counted);
    PyErr_Clear();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(kernel_args);
    /* No count known, or a wrong one: the method checks; shared memory: it refuses. */
    if (!ok || counted == NULL || shared != 0 || want != (unsigned long long)n ||
        n > LAUNCH_ARGS_MAX)
        return 0;
    ArgBytes values[LAUNCH_ARGS_MAX];
    PyObject *const *items = PySequence_Fast_ITEMS(kernel_args);
    Py_ssize_t known = 0;
    for (; known < n; known++) {
        values[known].viewed = 0;
        if (!arg_bytes_of(self, items[known], &values[known]))
            break;
    }
    int rc = 0;
    PyObject *owner = known == n ? weak_target(self->owner) : NULL;
    if (owner != NULL) {
        Launch l = {config, kernel_args, stream, values, n};
        rc = under_lock(self, owner, kernel, launch_locked, &l);
        Py_DECREF(owner);
    }
    for (Py_ssize_t i = 0; i <= known && i < n; i++) {
        if (values[i].viewed)
            PyBuffer_Release(&values[i].view);
    }
    return rc;
}

static PyObject *ze_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    ZeAppend *self = (ZeAppend *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && nargs == ZE_ARITY[self->shape] + 1) {
        PyObject *stream = args[nargs - 1];
        int rc = self->shape == ZE_LAUNCH ? launch_run(self, args, stream)
                                          : ze_run(self, args, stream);
        if (rc != 0)
            return rc > 0 ? Py_NewRef(Py_None) : NULL;
    }
    return call_as_method(self->method, self->owner, args, nargs, kwnames, self->name);
}

/* ``obj`` as a class (a new reference to it), or NULL with a TypeError naming ``what``. */
static PyObject *a_class(PyObject *obj, const char *what)
{
    if (PyType_Check(obj))
        return Py_NewRef(obj);
    PyErr_Format(PyExc_TypeError, "ZeAppend: %s must be a class, not %R", what, obj);
    return NULL;
}

static PyObject *ze_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"owner",      "method",  "fail",   "shape",       "name",
                               "function",   "barrier", "table",  "host_limit",  "set_arg",
                               "set_again",  "append_other",      "note",        "scalars",
                               "pointers",   NULL};
    PyObject *owner, *method, *fail, *name, *table, *set_again = Py_None,
                                                     *append_other = Py_None, *note = Py_None,
                                                     *scalars = (PyObject *)&PyBytes_Type,
                                                     *pointers = (PyObject *)&PyBytes_Type;
    const char *shape;
    unsigned long long function, barrier, set_arg = 0;
    Py_ssize_t host_limit;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOsUKKOnKOOOOO:ZeAppend", keywords, &owner,
                                     &method, &fail, &shape, &name, &function, &barrier, &table,
                                     &host_limit, &set_arg, &set_again, &append_other, &note,
                                     &scalars, &pointers))
        return NULL;
    int which = -1;
    for (int i = 0; i < ZE_SHAPES; i++) {
        if (strcmp(shape, ZE_SHAPE_NAMES[i]) == 0)
            which = i;
    }
    if (which < 0) {
        PyErr_Format(PyExc_ValueError, "ZeAppend: no shape %s (memset_d8, memcpy_h2d, "
                     "memcpy_d2h, memcpy_d2d, launch)", shape);
        return NULL;
    }
    int launch = which == ZE_LAUNCH;
    if (function == 0 || barrier == 0 || host_limit < 0 || (launch && set_arg == 0)) {
        PyErr_SetString(PyExc_ValueError, "ZeAppend: function and barrier (and a launch's "
                        "set_arg) must be non-null addresses of the table's slots, "
                        "host_limit not negative");
        return NULL;
    }
    if (!PyCallable_Check(method) || !PyCallable_Check(fail) ||
        (launch && (!PyCallable_Check(set_again) || !PyCallable_Check(append_other) ||
                    (note != Py_None && !PyCallable_Check(note))))) {
        PyErr_SetString(PyExc_TypeError, "ZeAppend: method and fail (and a launch's set_again "
                        "and append_other) must be callable, note callable or None");
        return NULL;
    }
    PyObject *scalar_class = a_class(scalars, "scalars");
    PyObject *pointer_class = scalar_class != NULL ? a_class(pointers, "pointers") : NULL;
    PyObject *ref = pointer_class != NULL ? PyWeakref_NewRef(owner, NULL) : NULL;
    ZeAppend *self = ref != NULL ? (ZeAppend *)type->tp_alloc(type, 0) : NULL;
    if (self == NULL) {
        Py_XDECREF(scalar_class);
        Py_XDECREF(pointer_class);
        Py_XDECREF(ref);
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
    self->set_arg = (void *const *)(uintptr_t)set_arg;
    self->set_again = Py_NewRef(set_again);
    self->append_other = Py_NewRef(append_other);
    self->note = Py_NewRef(note);
    self->scalars = scalar_class;
    self->pointers = pointer_class;
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
    Py_VISIT(self->set_again);
    Py_VISIT(self->append_other);
    Py_VISIT(self->note);
    Py_VISIT(self->scalars);
    Py_VISIT(self->pointers);
    return 0;
}

static int ze_clear(ZeAppend *self)
{
    Py_CLEAR(self->owner);
    Py_CLEAR(self->method);
    Py_CLEAR(self->fail);
    Py_CLEAR(self->name);
    Py_CLEAR(self->table);
    Py_CLEAR(self->set_again);
    Py_CLEAR(self->append_other);
    Py_CLEAR(self->note);
    Py_CLEAR(self->scalars);
    Py_CLEAR(self->pointers);
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
