/* DirectCall: a driver method whose common case the core calls straight in C.
 *
 * A memset or a copy on CUDA is one driver function, and its Python method
 * (backends/cuda/_copies.py) checks the device is alive, makes the context
 * current on a new thread, converts four arguments and names a failure.
 * Only the first use on a thread needs Python; the rest is a C call.  The
 * driver module builds one DirectCall per such method and installs it over
 * the method: it hands over the C function's address, the shape of its
 * arguments, and its own Python method and error namer.  So the driver
 * still owns every call into its C library; this file only makes the call
 * it was handed, in the one plain case:
 *
 *   the driver is not dead or closed (its ``_dead`` is None), the calling
 *   thread's current context is the driver's, every argument is an int (a
 *   buffer for a host copy) within what the C type holds, and a host copy
 *   is small enough that the driver would never stage it.
 *
 * Anything else goes to the Python method, which decides and says why.  A
 * failed call's code goes to the driver's ``_fail``, which names it and
 * notes a lost device, exactly as the method does.  The GIL is released
 * around the call, as cffi does: a full queue can block the driver.
 */
#include "direct.h"
#include "objects.h"
#include "site.h"
#include "slots.h"

#include <structmember.h>

/* How a shape's Python arguments map onto its C function (the stream last). */
enum { SHAPE_MEMSET_D8, SHAPE_COPY_D2D, SHAPE_COPY_H2D, SHAPE_LAUNCH, SHAPE_GRAPH_LAUNCH,
       SHAPE_STREAM_QUERY, SHAPE_COUNT };

static const char *const SHAPE_NAMES[SHAPE_COUNT] = {"memset_d8", "memcpy_d2d", "memcpy_h2d",
                                                     "launch", "graph_launch", "stream_finished"};
static const int SHAPE_ARITY[SHAPE_COUNT] = {3, 3, 2, 3, 1, 0};

/* cuStreamQuery's answer for a stream still running work (CUDA_ERROR_NOT_READY). */
enum { QUERY_NOT_READY = 600 };

/* A launch's parameters, packed here: no kernel takes more (CUDA's limit is 32 KiB of
 * parameters on the newest devices, 4 KiB before; a larger block goes to Python). */
enum { LAUNCH_PARAMS_MAX = 256, LAUNCH_BYTES_MAX = 4096 };

typedef unsigned int (*memset_d8_fn)(unsigned long long, unsigned char, size_t, void *);
typedef unsigned int (*copy_d2d_fn)(unsigned long long, unsigned long long, size_t, void *);
typedef unsigned int (*copy_h2d_fn)(unsigned long long, const void *, size_t, void *);
typedef unsigned int (*get_current_fn)(void **);
typedef unsigned int (*graph_launch_fn)(void *, void *);
typedef unsigned int (*stream_query_fn)(void *);
typedef unsigned int (*stream_settle_fn)(void *);
typedef unsigned int (*launch_fn)(void *, unsigned int, unsigned int, unsigned int, unsigned int,
                                  unsigned int, unsigned int, unsigned int, void *, void **,
                                  void **);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *owner;  /* weakref to the driver */
    PyObject *method; /* the driver's Python method, unbound: every other case */
    PyObject *fail;   /* the driver's ``_fail(code, function)``, unbound */
    PyObject *name;   /* the C function's name, for ``_fail`` */
    void *function;
    get_current_fn get_current;
    void *context;
    Py_ssize_t host_limit; /* SHAPE_COPY_H2D: the largest copy the driver never stages */
    PyObject *note;        /* SHAPE_LAUNCH: called before the launch (a sim's call site), or None */
    void *settle;          /* SHAPE_STREAM_QUERY: called once the query says done, else NULL */
    PyObject *settle_name; /* its name, for ``_fail`` (None for the other shapes) */
    int shape;
} DirectCall;

static PyObject *name_dead, *name_address, *name_blocks, *name_shared_ok, *name_c_layout,
    *name_ptr_address, *name_direct;

int direct_ready(void)
{
    name_dead = PyUnicode_InternFromString("_dead");
    name_address = PyUnicode_InternFromString("address");
    name_blocks = PyUnicode_InternFromString("blocks");
    name_shared_ok = PyUnicode_InternFromString("shared_ok");
    name_c_layout = PyUnicode_InternFromString("c_layout");
    name_ptr_address = PyUnicode_InternFromString("_address");
    name_direct = PyUnicode_InternFromString("direct");
    return name_dead && name_address && name_blocks && name_shared_ok && name_c_layout &&
                   name_ptr_address && name_direct
               ? 0
               : -1;
}

/* The driver's DriverError for ``code`` from the C function ``name``, raised (always -1). */
static int failed(DirectCall *self, PyObject *owner, unsigned int code, PyObject *name)
{
    PyObject *exc = PyObject_CallFunction(self->fail, "OIO", owner, code, name);
    if (exc == NULL)
        return -1;
    if (PyExceptionInstance_Check(exc))
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    else
        PyErr_Format(PyExc_TypeError, "%U: _fail returned %R, not an exception", name, exc);
    Py_DECREF(exc);
    return -1;
}

/* Whether the plain case holds for ``owner``: alive, and this thread in its context. */
static int plain_case(DirectCall *self, PyObject *owner)
{
    static SlotCache dead_of; /* the driver's _dead */
    PyObject *dead = slot_attr(&dead_of, owner, name_dead);
    if (dead == NULL) {
        PyErr_Clear();
        return 0;
    }
    int alive = dead == Py_None;
    Py_DECREF(dead);
    void *current = NULL;
    return alive && self->get_current(&current) == 0 && current == self->context;
}

/* An int attribute of ``obj`` that fits 64 unsigned bits; *ok cleared otherwise.  Each
 * caller's ``cache`` is its own: one attribute of one class. */
static unsigned long long u64_attr(SlotCache *cache, PyObject *obj, PyObject *attr, int *ok)
{
    PyObject *value = slot_attr(cache, obj, attr);
    if (value == NULL) {
        PyErr_Clear();
        *ok = 0;
        return 0;
    }
    unsigned long long v = exact_u64(value, ok);
    Py_DECREF(value);
    return v;
}

/* Three unsigned ints from a 3-tuple of ints (a grid or a block). */
static void dims(PyObject *tuple, unsigned int out[3], int *ok)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 3) {
        *ok = 0;
        return;
    }
    for (int i = 0; i < 3; i++) {
        unsigned long long v = exact_u64(PyTuple_GET_ITEM(tuple, i), ok);
        if (v > 0xFFFFFFFFu)
            *ok = 0;
        out[i] = (unsigned int)v;
    }
}

/* The block laid out for these arguments' types (a new reference), or NULL: none yet. */
static PyObject *laid_out_block(PyObject *function, PyObject *const *items, Py_ssize_t n)
{
    static SlotCache blocks_of; /* the kernel's blocks */
    PyObject *blocks = slot_attr(&blocks_of, function, name_blocks);
    PyObject *signature = blocks && PyDict_Check(blocks) ? PyTuple_New(n) : NULL;
    PyObject *block = NULL;
    if (signature != NULL) {
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(signature, i, Py_NewRef((PyObject *)Py_TYPE(items[i])));
        block = PyDict_GetItemWithError(blocks, signature);
        Py_XINCREF(block);
    }
    PyErr_Clear();
    Py_XDECREF(signature);
    Py_XDECREF(blocks);
    if (block == Py_None)
        Py_CLEAR(block);
    return block;
}

/* Each argument's bytes at its offset: a DevicePtr's address, a numpy scalar's own bytes. */
static void pack(PyObject *layout, PyObject *const *items, Py_ssize_t n, char *bytes,
                 void **params, int *ok)
{
    const long long *l = (const long long *)PyBytes_AS_STRING(layout);
    for (Py_ssize_t i = 0; i < n && *ok; i++) {
        long long offset = l[1 + 2 * i], size = l[2 + 2 * i];
        params[i] = bytes + offset;
        if (size < 0) {
            static SlotCache address_of; /* DevicePtr._address */
            unsigned long long address = u64_attr(&address_of, items[i], name_ptr_address, ok);
            memcpy(bytes + offset, &address, sizeof address);
            continue;
        }
        Py_buffer view;
        if (PyObject_GetBuffer(items[i], &view, PyBUF_SIMPLE) < 0) {
            PyErr_Clear();
            *ok = 0;
            return;
        }
        if (view.len == size)
            memcpy(bytes + offset, view.buf, (size_t)size);
        else
            *ok = 0;
        PyBuffer_Release(&view);
    }
}

/* launch(function, config, args, stream): the arguments packed into a block on this
 * stack (the driver copies them before it returns), so no lock is needed. */
static unsigned int call_launch(DirectCall *self, PyObject *const *args, uintptr_t stream,
                                int *ok)
{
    PyObject *function = args[0], *config = args[1], *kernel_args = args[2];
    unsigned int grid[3], block_dims[3];
    if (!PyTuple_Check(config) || PyTuple_GET_SIZE(config) != 3 ||
        !(PyTuple_CheckExact(kernel_args) || PyList_CheckExact(kernel_args))) {
        *ok = 0;
        return 0;
    }
    dims(PyTuple_GET_ITEM(config, 0), grid, ok);
    dims(PyTuple_GET_ITEM(config, 1), block_dims, ok);
    unsigned long long shared = exact_u64(PyTuple_GET_ITEM(config, 2), ok);
    static SlotCache handle_of, shared_ok_of, c_layout_of; /* the kernel's, its block's */
    unsigned long long handle = u64_attr(&handle_of, function, name_address, ok);
    /* More shared memory than the kernel was opted in for: the method opts in first. */
    if (!*ok || handle == 0 || shared > u64_attr(&shared_ok_of, function, name_shared_ok, ok))
        return *ok = 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(kernel_args);
    PyObject *const *items = PySequence_Fast_ITEMS(kernel_args);
    PyObject *laid = n <= LAUNCH_PARAMS_MAX ? laid_out_block(function, items, n) : NULL;
    PyObject *layout = laid ? slot_attr(&c_layout_of, laid, name_c_layout) : NULL;
    Py_XDECREF(laid);
    PyErr_Clear();
    if (layout == NULL || !PyBytes_Check(layout) ||
        PyBytes_GET_SIZE(layout) != (Py_ssize_t)sizeof(long long) * (1 + 2 * n) ||
        *(const long long *)PyBytes_AS_STRING(layout) > LAUNCH_BYTES_MAX) {
        Py_XDECREF(layout);
        return *ok = 0;
    }
    _Alignas(16) char bytes[LAUNCH_BYTES_MAX];
    void *params[LAUNCH_PARAMS_MAX];
    pack(layout, items, n, bytes, params, ok);
    Py_DECREF(layout);
    if (!*ok)
        return 0;
    if (self->note != Py_None) {
        if (Py_IS_TYPE(self->note, &LaunchSiteType)) {
            if (launch_site_note(self->note) < 0)
                return *ok = -1;
        } else {
            PyObject *noted = PyObject_CallNoArgs(self->note);
            if (noted == NULL)
                return *ok = -1;
            Py_DECREF(noted);
        }
    }
    unsigned int code;
    Py_BEGIN_ALLOW_THREADS
    code = ((launch_fn)self->function)((void *)(uintptr_t)handle, grid[0], grid[1], grid[2],
                                       block_dims[0], block_dims[1], block_dims[2],
                                       (unsigned int)shared, (void *)stream, params, NULL);
    Py_END_ALLOW_THREADS
    return code;
}

static unsigned int call_shape(DirectCall *self, PyObject *const *args, uintptr_t stream, int *ok)
{
    if (self->shape == SHAPE_LAUNCH)
        return call_launch(self, args, stream, ok);
    void *s = (void *)stream;
    unsigned int code = 0;
    if (self->shape == SHAPE_GRAPH_LAUNCH) {
        /* The driver graph's ``direct``: its executable graph's address where a replay
         * needs no bookkeeping of the driver's, else 0 (the method keeps it). */
        static SlotCache direct_of;
        unsigned long long exec = u64_attr(&direct_of, args[0], name_direct, ok);
        if (!*ok || exec == 0)
            return *ok = 0;
        Py_BEGIN_ALLOW_THREADS
        code = ((graph_launch_fn)self->function)((void *)(uintptr_t)exec, s);
        Py_END_ALLOW_THREADS
        return code;
    }
    if (self->shape == SHAPE_COPY_H2D) {
        Py_buffer view;
        unsigned long long dst = exact_u64(args[1], ok);
        if (!*ok || !PyMemoryView_Check(args[0]) ||
            PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
            PyErr_Clear();
            *ok = 0;
            return 0;
        }
        if (view.len > self->host_limit) {
            *ok = 0;
        } else {
            Py_BEGIN_ALLOW_THREADS
            code = ((copy_h2d_fn)self->function)(dst, view.buf, (size_t)view.len, s);
            Py_END_ALLOW_THREADS
        }
        PyBuffer_Release(&view);
        return code;
    }
    unsigned long long a = exact_u64(args[0], ok), b = exact_u64(args[1], ok), n = exact_u64(args[2], ok);
    if (!*ok)
        return 0;
    Py_BEGIN_ALLOW_THREADS
    if (self->shape == SHAPE_MEMSET_D8)
        code = ((memset_d8_fn)self->function)(a, (unsigned char)(b & 0xFF), (size_t)n, s);
    else /* memcpy_d2d(src, dst, nbytes): the driver takes the destination first */
        code = ((copy_d2d_fn)self->function)(b, a, (size_t)n, s);
    Py_END_ALLOW_THREADS
    return code;
}

/* 1 done, 0 not taken (no error set), -1 the driver's error set. */
static int direct_run(DirectCall *self, PyObject *const *args, Py_ssize_t nargs, uintptr_t stream)
{
    if (stream == 0 || nargs != SHAPE_ARITY[self->shape] || self->shape == SHAPE_STREAM_QUERY)
        return 0;
    PyObject *owner = weak_target(self->owner);
    if (owner == NULL)
        return 0;
    int rc = 0;
    if (plain_case(self, owner)) {
        int ok = 1;
        unsigned int code = call_shape(self, args, stream, &ok);
        rc = ok < 0 ? -1 : !ok ? 0 : code != 0 ? failed(self, owner, code, self->name) : 1;
    }
    Py_DECREF(owner);
    return rc;
}

int direct_enqueue(PyObject *call, PyObject *args, uintptr_t stream)
{
    if (!Py_IS_TYPE(call, &DirectCallType))
        return 0;
    return direct_run((DirectCall *)call, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args),
                      stream);
}

/* The driver stream's raw handle, or 0 where it has none. */
static uintptr_t stream_address(PyObject *handle)
{
    static SlotCache address_of; /* the driver stream's address */
    int ok = 1;
    uintptr_t raw = (uintptr_t)u64_attr(&address_of, handle, name_address, &ok);
    return ok ? raw : 0;
}

/* ``stream_finished(stream)``: STREAM_RUNNING (the query says not yet), STREAM_DONE (it
 * says done, and ``settle``, the synchronize that reports the work's error and flushes
 * kernels' printf, returned at once), STREAM_FAILED (either failed: the driver's error
 * is set, as the method raises it), else STREAM_ASK (not a case this file takes: the
 * method's).  An awaited op's stream is asked this at every loop step until it is done.
 * The GIL is released around each call, as cffi does: neither waits for the device,
 * but either may wait on a lock of the driver's that a thread which needs the GIL holds
 * (a host function's callback). */

static int stream_answer(DirectCall *self, uintptr_t stream)
{
    PyObject *owner = stream ? weak_target(self->owner) : NULL;
    if (owner == NULL)
        return STREAM_ASK;
    int answer = STREAM_ASK;
    unsigned int code = 0, settled = 0;
    if (plain_case(self, owner)) {
        Py_BEGIN_ALLOW_THREADS
        code = ((stream_query_fn)self->function)((void *)stream);
        if (code == 0)
            settled = ((stream_settle_fn)self->settle)((void *)stream);
        Py_END_ALLOW_THREADS
        answer = code == QUERY_NOT_READY ? STREAM_RUNNING
                 : code != 0             ? failed(self, owner, code, self->name)
                 : settled == 0          ? STREAM_DONE
                                         : failed(self, owner, settled, self->settle_name);
    }
    Py_DECREF(owner);
    return answer;
}

int direct_stream_answer(PyObject *call, uintptr_t stream)
{
    if (!Py_IS_TYPE(call, &DirectCallType) || ((DirectCall *)call)->shape != SHAPE_STREAM_QUERY)
        return STREAM_ASK;
    return stream_answer((DirectCall *)call, stream);
}

/* Called from Python (``driver.memset_d8(dst, value, nbytes, stream)``): the same. */
static PyObject *direct_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames)
{
    DirectCall *self = (DirectCall *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (self->shape == SHAPE_STREAM_QUERY) {
        int answer = kwnames == NULL && nargs == 1 ? stream_answer(self, stream_address(args[0]))
                                                   : STREAM_ASK;
        if (answer == STREAM_FAILED)
            return NULL;
        if (answer != STREAM_ASK)
            return Py_NewRef(answer == STREAM_DONE ? Py_True : Py_False);
    } else if (kwnames == NULL && nargs == SHAPE_ARITY[self->shape] + 1) {
        int rc = direct_run(self, args, nargs - 1, stream_address(args[nargs - 1]));
        if (rc != 0)
            return rc > 0 ? Py_NewRef(Py_None) : NULL;
    }
    /* The method, bound to the driver: every case this file does not take. */
    return call_as_method(self->method, self->owner, args, nargs, kwnames, self->name);
}

static PyObject *direct_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"owner", "method", "fail", "shape", "function", "name",
                               "get_current", "context", "host_limit", "note", "settle",
                               "settle_name", NULL};
    PyObject *owner, *method, *fail, *name, *note, *settle_name;
    const char *shape;
    unsigned long long function, get_current, context, settle;
    Py_ssize_t host_limit = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOsKUKKnOKO:DirectCall", keywords,
                                     &owner, &method, &fail, &shape, &function, &name,
                                     &get_current, &context, &host_limit, &note, &settle,
                                     &settle_name))
        return NULL;
    int which = -1;
    for (int i = 0; i < SHAPE_COUNT; i++) {
        if (strcmp(shape, SHAPE_NAMES[i]) == 0)
            which = i;
    }
    if (which < 0) {
        PyErr_Format(PyExc_ValueError, "DirectCall: no shape %s (memset_d8, memcpy_d2d, "
                     "memcpy_h2d, launch, graph_launch, stream_finished)", shape);
        return NULL;
    }
    if (function == 0 || get_current == 0 || context == 0) {
        PyErr_SetString(PyExc_ValueError, "DirectCall: function, get_current and context "
                        "must be non-null addresses");
        return NULL;
    }
    int settles = which == SHAPE_STREAM_QUERY;
    if ((settle != 0) != settles || PyUnicode_Check(settle_name) != settles) {
        PyErr_SetString(PyExc_TypeError, "DirectCall: settle and settle_name come together, "
                                         "with the stream_finished shape and no other");
        return NULL;
    }
    if (!PyCallable_Check(method) || !PyCallable_Check(fail) ||
        (note != Py_None && !PyCallable_Check(note))) {
        PyErr_SetString(PyExc_TypeError,
                        "DirectCall: method and fail must be callable, note callable or None");
        return NULL;
    }
    PyObject *ref = PyWeakref_NewRef(owner, NULL);
    if (ref == NULL)
        return NULL;
    DirectCall *self = (DirectCall *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(ref);
        return NULL;
    }
    self->vectorcall = direct_vectorcall;
    self->owner = ref;
    self->method = Py_NewRef(method);
    self->fail = Py_NewRef(fail);
    self->name = Py_NewRef(name);
    self->function = (void *)(uintptr_t)function;
    self->get_current = (get_current_fn)(uintptr_t)get_current;
    self->context = (void *)(uintptr_t)context;
    self->host_limit = host_limit;
    self->note = Py_NewRef(note);
    self->settle = (void *)(uintptr_t)settle;
    self->settle_name = Py_NewRef(settle_name);
    self->shape = which;
    return (PyObject *)self;
}

static int direct_traverse(DirectCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->owner);
    Py_VISIT(self->method);
    Py_VISIT(self->fail);
    Py_VISIT(self->note);
    return 0;
}

static int direct_clear(DirectCall *self)
{
    Py_CLEAR(self->owner);
    Py_CLEAR(self->method);
    Py_CLEAR(self->fail);
    Py_CLEAR(self->name);
    Py_CLEAR(self->note);
    Py_CLEAR(self->settle_name);
    return 0;
}

static void direct_dealloc(DirectCall *self)
{
    PyObject_GC_UnTrack(self);
    direct_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *direct_repr(DirectCall *self)
{
    return PyUnicode_FromFormat("<DirectCall %s -> %U>", SHAPE_NAMES[self->shape], self->name);
}

static PyMemberDef direct_members[] = {
    {"name", T_OBJECT_EX, offsetof(DirectCall, name), READONLY, "the C function's name"},
    {NULL},
};

PyTypeObject DirectCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aruntime._enqueue_compiled.DirectCall",
    .tp_doc = "A driver method whose plain case is one C call (see ffi/core/direct.c).",
    .tp_basicsize = sizeof(DirectCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(DirectCall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = direct_new,
    .tp_traverse = (traverseproc)direct_traverse,
    .tp_clear = (inquiry)direct_clear,
    .tp_dealloc = (destructor)direct_dealloc,
    .tp_repr = (reprfunc)direct_repr,
    .tp_members = direct_members,
};
