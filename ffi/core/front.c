/* OpFront: a Backend's memset_async, copy_h2d_async, copy_d2h_async, launch and
 * launch_graph, their common case as one C call.
 *
 * Once the stream's enqueue, its lock, the driver call and the range check
 * were in C, what was left of a memset or a 4 KiB copy was mostly the two
 * Python frames in front of them (the Backend method, then the Ops method),
 * whose checks and attribute loads cost about as much as the driver call.
 * An OpFront is one backend's op, installed on the instance under the
 * method's name, as a stream's Enqueuer is (aruntime/_ops.py).
 *
 * It takes only the case in which every check passes: positional operands
 * and ``stream`` by position or keyword; an open backend; exact ints in
 * range; this backend's live DevicePtr whose view holds the bytes (the
 * ledger's RangeCheck); a host buffer that host_view takes as it is; an
 * open stream of this backend, or the default one once made.  Anything
 * else, and so every error and every message, is the Python method's: it
 * is called with the caller's own arguments, before anything was done (a
 * host view made on the way is released first).  The op itself is then the
 * stream's ``enqueue``, with the same parts the Python method passes.
 */
#include "front.h"
#include "hostview.h"
#include "slots.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { FRONT_MEMSET, FRONT_COPY_H2D, FRONT_COPY_D2H, FRONT_LAUNCH, FRONT_GRAPH, FRONT_COUNT };

static const char *const FRONT_OPS[FRONT_COUNT] = {"memset", "copy_h2d", "copy_d2h", "launch",
                                                   "graph"};

/* The operands before ``stream``, in the Backend method's order (a launch's
 * ``stream`` and the rest are keyword-only). */
static const Py_ssize_t FRONT_ARITY[FRONT_COUNT] = {3, 2, 2, 4, 1};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int op;
    PyObject *owner;           /* the Backend: its open streams' ``open_for`` */
    PyObject *method;          /* the Python Backend method, unbound: every other case */
    PyObject *state;           /* the BackendState: ``closed`` and ``default`` */
    PyObject *in_range;        /* the ledger's RangeCheck */
    PyObject *driver;          /* its method ``call_name`` is read per op (a test may swap it) */
    PyObject *call_name;
    PyObject *kind;            /* the OpKind */
    PyTypeObject *pointer;     /* DevicePtr */
    PyTypeObject *stream_type; /* Stream */
    Py_ssize_t address_at;     /* DevicePtr._address */
    /* A launch's: the Kernel class and its slots, and Ops' checked geometries. */
    PyTypeObject *kernel_type;
    PyObject *configs; /* (grid, block) -> LaunchConfig, for int ones without shared memory */
    Py_ssize_t handle_at, owner_at, signatures_at;
    PyTypeObject *graph_type; /* a replay's: the Graph class */
} OpFront;

static struct {
    PyObject *closed, *default_stream, *open_for, *enqueue, *stream, *release, *empty;
    PyObject *shared_mem, *reads, *writes, *zero, *cell, *handle;
} name;

int front_ready(void)
{
#define INTERN(field, text)                                        \
    if ((name.field = PyUnicode_InternFromString(text)) == NULL) \
        return -1;
    INTERN(closed, "closed") INTERN(default_stream, "default") INTERN(open_for, "open_for")
    INTERN(enqueue, "enqueue") INTERN(stream, "stream") INTERN(release, "release")
    INTERN(shared_mem, "shared_mem") INTERN(reads, "reads") INTERN(writes, "writes")
    INTERN(cell, "_cell") INTERN(handle, "handle")
#undef INTERN
    if ((name.empty = PyTuple_New(0)) == NULL || (name.zero = PyLong_FromLong(0)) == NULL)
        return -1;
    return PyType_Ready(&OpFrontType);
}

/* The Python method, bound to the backend, with the caller's arguments as given. */
static PyObject *python_path(OpFront *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    PyObject *bound = PyMethod_New(self->method, self->owner);
    if (bound == NULL)
        return NULL;
    PyObject *out = PyObject_Vectorcall(bound, args, nargsf, kwnames);
    Py_DECREF(bound);
    return out;
}

/* 1: the object is ``closed`` False, as an open backend's state is; 0 otherwise. */
static int backend_open(OpFront *self)
{
    PyObject *closed = PyObject_GetAttr(self->state, name.closed);
    if (closed == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(closed);
    return closed == Py_False;
}

/* ``value`` as an exact int in [0, limit], or -1 (also on overflow: no error left set). */
static long long exact_count(PyObject *value, long long limit)
{
    if (!PyLong_CheckExact(value))
        return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || v < 0 || v > limit) {
        PyErr_Clear();
        return -1;
    }
    return v;
}

/* The stream the op goes on (a new reference), or NULL where Python must resolve it. */
static PyObject *stream_of(OpFront *self, PyObject *stream)
{
    if (stream == Py_None) {
        PyObject *default_stream = PyObject_GetAttr(self->state, name.default_stream);
        if (default_stream == NULL)
            PyErr_Clear();
        else if (default_stream == Py_None)
            Py_CLEAR(default_stream); /* not made yet: Python makes it */
        return default_stream;
    }
    if (Py_TYPE(stream) != self->stream_type)
        return NULL;
    PyObject *open_for = PyObject_GetAttr(stream, name.open_for);
    if (open_for == NULL) {
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(open_for);
    return open_for == self->owner ? Py_NewRef(stream) : NULL;
}

/* The ledger entry of ``ptr`` holding ``nbytes`` (a new reference), or NULL (no error). */
static PyObject *entry_of(OpFront *self, PyObject *ptr, PyObject *nbytes)
{
    PyObject *stack[] = {ptr, nbytes};
    PyObject *entry = PyObject_Vectorcall(self->in_range, stack, 2, NULL);
    if (entry == NULL)
        PyErr_Clear();
    else if (entry == Py_None)
        Py_CLEAR(entry);
    return entry;
}

/* ``host_view(obj, writable)`` (a new reference), or NULL where it takes nothing;
 * ``*entry``: a pinned buffer's ledger entry, as host_view_of gives it. */
static PyObject *view_of(PyObject *obj, int writable, PyObject **entry)
{
    PyObject *view = host_view_of(obj, writable, entry);
    if (view == NULL)
        PyErr_Clear();
    else if (!PyMemoryView_Check(view))
        Py_CLEAR(view);
    return view;
}

/* Let ``view`` go now, not when it is collected: the Python path makes its own. */
static void drop_view(PyObject *view)
{
    PyObject *released = PyObject_CallMethodNoArgs(view, name.release);
    if (released == NULL)
        PyErr_Clear();
    Py_XDECREF(released);
    Py_DECREF(view);
}

/* ``stream.enqueue(*parts)``: the op, from here on the stream's to refuse or run. */
static PyObject *enqueue_on(PyObject *stream, PyObject *const *parts, size_t count)
{
    PyObject *enqueue = PyObject_GetAttr(stream, name.enqueue);
    if (enqueue == NULL)
        return NULL;
    PyObject *out = PyObject_Vectorcall(enqueue, parts, count, NULL);
    Py_DECREF(enqueue);
    return out;
}

/* The parts every op shares, found before anything is made; 1 found, 0 not. */
typedef struct {
    PyObject *stream, *call, *entry, *nbytes, *view;
} Found;

static void found_clear(Found *f)
{
    Py_CLEAR(f->stream);
    Py_CLEAR(f->call);
    Py_CLEAR(f->entry);
    Py_CLEAR(f->nbytes);
    if (f->view != NULL) {
        drop_view(f->view);
        f->view = NULL;
    }
}

static int find_call_and_stream(OpFront *self, PyObject *stream, Found *f)
{
    if (!backend_open(self) || (f->stream = stream_of(self, stream)) == NULL)
        return 0;
    f->call = PyObject_GetAttr(self->driver, self->call_name);
    if (f->call == NULL)
        PyErr_Clear();
    return f->call != NULL;
}

/* ``ptr``'s address (its ``_address`` slot). */
static PyObject *address_of(OpFront *self, PyObject *ptr)
{
    return slot_at(ptr, self->address_at);
}

/* memset_async(ptr, value, nbytes): 1 taken (*out set, NULL on error), 0 not taken. */
static int memset_fast(OpFront *self, PyObject *const *args, PyObject *stream, PyObject **out)
{
    PyObject *ptr = args[0], *value = args[1], *nbytes = args[2];
    if (Py_TYPE(ptr) != self->pointer || exact_count(value, 255) < 0 ||
        exact_count(nbytes, INT64_MAX) <= 0 || address_of(self, ptr) == NULL)
        return 0; /* a zero count is the Python path's no-op */
    Found f = {NULL};
    int taken = find_call_and_stream(self, stream, &f) &&
                (f.entry = entry_of(self, ptr, nbytes)) != NULL;
    if (taken) {
        PyObject *call_args = PyTuple_Pack(3, address_of(self, ptr), value, nbytes);
        PyObject *entries = call_args ? PyTuple_Pack(1, f.entry) : NULL;
        if (entries != NULL) {
            PyObject *parts[] = {self->kind, f.call, call_args, entries, name.empty, name.empty,
                                 nbytes};
            *out = enqueue_on(f.stream, parts, 7);
        } else {
            *out = NULL;
        }
        Py_XDECREF(call_args);
        Py_XDECREF(entries);
    }
    found_clear(&f);
    return taken;
}

/* A host copy: ``device`` the DevicePtr, ``host`` the buffer (read for h2d, written for d2h). */
static int copy_fast(OpFront *self, PyObject *device, PyObject *host, PyObject *stream,
                     PyObject **out)
{
    int to_device = self->op == FRONT_COPY_H2D;
    if (Py_TYPE(device) != self->pointer || address_of(self, device) == NULL)
        return 0;
    Found f = {NULL};
    /* A pinned buffer's own entry comes too, as _ops._with_host_entry names it:
     * checked under the stream's lock against a free under way, pinned by a capture. */
    PyObject *host_entry = NULL;
    if (!find_call_and_stream(self, stream, &f) ||
        (f.view = view_of(host, !to_device, &host_entry)) == NULL) {
        found_clear(&f);
        return 0;
    }
    Py_ssize_t n = PyMemoryView_GET_BUFFER(f.view)->len;
    if (n == 0 || (f.nbytes = PyLong_FromSsize_t(n)) == NULL ||
        (f.entry = entry_of(self, device, f.nbytes)) == NULL) {
        PyErr_Clear();
        Py_XDECREF(host_entry);
        found_clear(&f); /* a zero count is the Python path's no-op */
        return 0;
    }
    PyObject *address = address_of(self, device);
    PyObject *call_args = to_device ? PyTuple_Pack(2, f.view, address)
                                    : PyTuple_Pack(2, address, f.view);
    PyObject *entries = call_args == NULL ? NULL
                        : host_entry  ? PyTuple_Pack(2, f.entry, host_entry)
                                      : PyTuple_Pack(1, f.entry);
    Py_XDECREF(host_entry);
    PyObject *held = entries ? PyTuple_Pack(1, host) : NULL;
    PyObject *views = held ? PyTuple_Pack(1, f.view) : NULL;
    *out = NULL;
    if (views != NULL) {
        PyObject *parts[] = {self->kind, f.call, call_args, entries, held, views, f.nbytes, host};
        *out = enqueue_on(f.stream, parts, to_device ? 7 : 8);
    }
    Py_XDECREF(call_args);
    Py_XDECREF(entries);
    Py_XDECREF(held);
    Py_XDECREF(views);
    Py_CLEAR(f.view); /* the op holds it now, and releases it when done */
    found_clear(&f);
    return 1;
}

/* The ledger entries of a launch's pointer arguments (at ``pointers``), or NULL. */
static PyObject *launch_entries(OpFront *self, PyObject *checked, PyObject *pointers)
{
    if (!PyTuple_CheckExact(pointers))
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(pointers);
    PyObject *entries = PyTuple_New(count);
    for (Py_ssize_t k = 0; entries != NULL && k < count; k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(pointers, k));
        PyObject *entry = NULL;
        if (i >= 0 && i < PyTuple_GET_SIZE(checked))
            entry = entry_of(self, PyTuple_GET_ITEM(checked, i), name.zero);
        if (entry == NULL) {
            PyErr_Clear();
            Py_CLEAR(entries);
        } else {
            PyTuple_SET_ITEM(entries, k, entry);
        }
    }
    return entries;
}

/* The arguments as a tuple (a new reference) if their types are a signature the kernel
 * has checked, else NULL: the first launch of a signature is the Python method's. */
static PyObject *checked_args(OpFront *self, PyObject *kernel, PyObject *args, PyObject **pointers)
{
    PyObject *checked = PySequence_Tuple(args);
    Py_ssize_t n = checked != NULL ? PyTuple_GET_SIZE(checked) : 0;
    PyObject *signature = checked != NULL ? PyTuple_New(n) : NULL;
    for (Py_ssize_t i = 0; signature != NULL && i < n; i++)
        PyTuple_SET_ITEM(signature, i, Py_NewRef(Py_TYPE(PyTuple_GET_ITEM(checked, i))));
    PyObject *signatures = slot_at(kernel, self->signatures_at);
    *pointers = signature != NULL && signatures != NULL && PyDict_CheckExact(signatures)
                    ? PyDict_GetItemWithError(signatures, signature)
                    : NULL;
    Py_XDECREF(signature);
    if (*pointers == NULL) {
        PyErr_Clear();
        Py_CLEAR(checked);
    }
    return checked;
}

/* The checked geometry of an int grid and block (borrowed), or NULL. */
static PyObject *config_of(OpFront *self, PyObject *grid, PyObject *block)
{
    if (!PyLong_CheckExact(grid) || !PyLong_CheckExact(block))
        return NULL;
    PyObject *key = PyTuple_Pack(2, grid, block);
    PyObject *config = key != NULL ? PyDict_GetItemWithError(self->configs, key) : NULL;
    Py_XDECREF(key);
    if (config == NULL)
        PyErr_Clear();
    return config;
}

/* launch(kernel, grid, block, args): what Ops.launch does for a signature and a geometry
 * already checked, without reads= or writes=. */
static int launch_fast(OpFront *self, PyObject *const *args, PyObject *stream, PyObject **out)
{
    PyObject *kernel = args[0], *kernel_args = args[3], *pointers = NULL;
    if (Py_TYPE(kernel) != self->kernel_type || slot_at(kernel, self->owner_at) != self->owner ||
        !(PyList_CheckExact(kernel_args) || PyTuple_CheckExact(kernel_args)))
        return 0;
    PyObject *config = config_of(self, args[1], args[2]);
    PyObject *handle = slot_at(kernel, self->handle_at);
    if (config == NULL || handle == NULL)
        return 0;
    Found f = {NULL};
    PyObject *checked = NULL, *entries = NULL;
    int taken = find_call_and_stream(self, stream, &f) &&
                (checked = checked_args(self, kernel, kernel_args, &pointers)) != NULL &&
                (entries = launch_entries(self, checked, pointers)) != NULL;
    if (taken) {
        PyObject *call_args = PyTuple_Pack(3, handle, config, checked);
        *out = NULL;
        if (call_args != NULL) {
            PyObject *parts[] = {self->kind, f.call, call_args, entries, name.empty,
                                 name.empty, name.zero, Py_None, kernel};
            *out = enqueue_on(f.stream, parts, 9);
            Py_DECREF(call_args);
        }
    }
    Py_XDECREF(checked);
    Py_XDECREF(entries);
    found_clear(&f);
    return taken;
}

/* The driver graph of ``graph`` (a new reference): a Graph of this backend, open, whose
 * capture has ended (its cell holds the body); NULL otherwise, with no error set. */
static PyObject *graph_handle(OpFront *self, PyObject *graph)
{
    if (Py_TYPE(graph) != self->graph_type)
        return NULL;
    PyObject *open_for = PyObject_GetAttr(graph, name.open_for);
    PyObject *cell = open_for == self->owner ? PyObject_GetAttr(graph, name.cell) : NULL;
    Py_XDECREF(open_for);
    PyObject *handle = NULL;
    if (cell != NULL && PyList_CheckExact(cell) && PyList_GET_SIZE(cell) == 1 &&
        PyList_GET_ITEM(cell, 0) != Py_None)
        handle = PyObject_GetAttr(PyList_GET_ITEM(cell, 0), name.handle);
    Py_XDECREF(cell);
    PyErr_Clear();
    return handle;
}

/* launch_graph(graph): what Graphs.launch_graph does for a graph ready to replay. */
static int graph_fast(OpFront *self, PyObject *graph, PyObject *stream, PyObject **out)
{
    PyObject *handle = graph_handle(self, graph);
    if (handle == NULL)
        return 0;
    Found f = {NULL};
    int taken = find_call_and_stream(self, stream, &f);
    if (taken) {
        PyObject *call_args = PyTuple_Pack(1, handle);
        PyObject *held = call_args ? PyTuple_Pack(1, graph) : NULL;
        *out = NULL;
        if (held != NULL) { /* held first: the kind reads the replay's ranges from it; an
                             * entry too, so the stream refuses it once the graph closed */
            PyObject *parts[] = {self->kind, f.call, call_args, held, held};
            *out = enqueue_on(f.stream, parts, 5);
        }
        Py_XDECREF(call_args);
        Py_XDECREF(held);
    }
    Py_DECREF(handle);
    found_clear(&f);
    return taken;
}

/* A launch's keywords: ``stream``, and the others only at their defaults; 0 otherwise. */
static int launch_keywords(PyObject *const *values, PyObject *kwnames, PyObject **stream)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i), *value = values[i];
        if (key == name.stream)
            *stream = value;
        else if (key == name.shared_mem) {
            int overflow = 0;
            if (!PyLong_CheckExact(value) || PyLong_AsLongAndOverflow(value, &overflow) != 0 ||
                overflow)
                return 0; /* (an int's conversion cannot fail) */
        } else if ((key != name.reads && key != name.writes) || value != Py_None)
            return 0;
    }
    return 1;
}

/* The stream the caller named (borrowed; None for the default), or NULL: a call whose
 * arguments are not the plain shape goes to the Python method as it is. */
static PyObject *stream_argument(OpFront *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
{
    Py_ssize_t arity = FRONT_ARITY[self->op];
    if (self->op == FRONT_LAUNCH) {
        PyObject *stream = Py_None;
        if (nargs != arity || (kwnames != NULL && !launch_keywords(args + arity, kwnames, &stream)))
            return NULL;
        return stream;
    }
    if (kwnames == NULL)
        return nargs == arity ? Py_None : nargs == arity + 1 ? args[arity] : NULL;
    if (nargs == arity && PyTuple_GET_SIZE(kwnames) == 1 &&
        PyTuple_GET_ITEM(kwnames, 0) == name.stream) /* keyword names come interned */
        return args[arity];
    return NULL;
}

static PyObject *front_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames)
{
    OpFront *self = (OpFront *)callable;
    if (self->owner == NULL) { /* cleared by the collector: a backend and its fronts are a cycle */
        PyErr_SetString(PyExc_ReferenceError, "the backend of this op is gone");
        return NULL;
    }
    PyObject *stream = stream_argument(self, args, PyVectorcall_NARGS(nargsf), kwnames);
    PyObject *out = NULL;
    int taken = 0;
    if (stream != NULL) {
        switch (self->op) {
        case FRONT_MEMSET:
            taken = memset_fast(self, args, stream, &out);
            break;
        case FRONT_COPY_H2D:
            taken = copy_fast(self, args[1], args[0], stream, &out);
            break;
        case FRONT_COPY_D2H:
            taken = copy_fast(self, args[0], args[1], stream, &out);
            break;
        case FRONT_GRAPH:
            taken = graph_fast(self, args[0], stream, &out);
            break;
        default:
            taken = launch_fast(self, args, stream, &out);
        }
    }
    return taken ? out : python_path(self, args, nargsf, kwnames);
}

static PyObject *front_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"op", "owner", "method", "state", "in_range", "driver",
                               "call", "kind", "pointer", "stream_type", "kernel_type",
                               "configs", "graph_type", NULL};
    const char *op;
    PyObject *owner, *method, *state, *in_range, *driver, *call, *kind, *pointer, *stream_type;
    PyObject *kernel_type = Py_None, *configs = Py_None, *graph_type = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$sOOOOOUOO!O!OOO:OpFront", keywords, &op,
                                     &owner, &method, &state, &in_range, &driver, &call, &kind,
                                     &PyType_Type, &pointer, &PyType_Type, &stream_type,
                                     &kernel_type, &configs, &graph_type))
        return NULL;
    int which = -1;
    for (int i = 0; i < FRONT_COUNT; i++) {
        if (strcmp(op, FRONT_OPS[i]) == 0)
            which = i;
    }
    if (which < 0) {
        PyErr_Format(PyExc_ValueError,
                     "OpFront: op must be memset, copy_h2d, copy_d2h, launch or graph, got %s",
                     op);
        return NULL;
    }
    if (which == FRONT_GRAPH && !PyType_Check(graph_type)) {
        PyErr_SetString(PyExc_TypeError, "OpFront: a replay needs graph_type (a class)");
        return NULL;
    }
    Py_ssize_t handle_at = 0, owner_at = 0, signatures_at = 0;
    if (which == FRONT_LAUNCH) {
        if (!PyType_Check(kernel_type) || !PyDict_CheckExact(configs)) {
            PyErr_SetString(PyExc_TypeError,
                            "OpFront: a launch needs kernel_type (a class) and configs (a dict)");
            return NULL;
        }
        PyTypeObject *k = (PyTypeObject *)kernel_type;
        if ((handle_at = slot_offset(k, "handle", "OpFront")) < 0 ||
            (owner_at = slot_offset(k, "owner", "OpFront")) < 0 ||
            (signatures_at = slot_offset(k, "signatures", "OpFront")) < 0)
            return NULL;
    }
    if (!PyCallable_Check(method) || !PyCallable_Check(in_range)) {
        PyErr_SetString(PyExc_TypeError, "OpFront: method and in_range must be callable");
        return NULL;
    }
    Py_ssize_t address_at = slot_offset((PyTypeObject *)pointer, "_address", "OpFront");
    if (address_at < 0)
        return NULL;
    OpFront *self = (OpFront *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = front_call;
    self->op = which;
    self->owner = Py_NewRef(owner);
    self->method = Py_NewRef(method);
    self->state = Py_NewRef(state);
    self->in_range = Py_NewRef(in_range);
    self->driver = Py_NewRef(driver);
    self->call_name = Py_NewRef(call);
    PyUnicode_InternInPlace(&self->call_name);
    self->kind = Py_NewRef(kind);
    self->pointer = (PyTypeObject *)Py_NewRef(pointer);
    self->stream_type = (PyTypeObject *)Py_NewRef(stream_type);
    self->address_at = address_at;
    if (which == FRONT_LAUNCH) {
        self->kernel_type = (PyTypeObject *)Py_NewRef(kernel_type);
        self->configs = Py_NewRef(configs);
        self->handle_at = handle_at;
        self->owner_at = owner_at;
        self->signatures_at = signatures_at;
    }
    if (which == FRONT_GRAPH)
        self->graph_type = (PyTypeObject *)Py_NewRef(graph_type);
    return (PyObject *)self;
}

static int front_traverse(OpFront *self, visitproc visit, void *arg)
{
    Py_VISIT(self->owner);
    Py_VISIT(self->method);
    Py_VISIT(self->state);
    Py_VISIT(self->in_range);
    Py_VISIT(self->driver);
    Py_VISIT(self->kind);
    Py_VISIT(self->pointer);
    Py_VISIT(self->stream_type);
    Py_VISIT(self->kernel_type);
    Py_VISIT(self->configs);
    Py_VISIT(self->graph_type);
    return 0;
}

static int front_clear(OpFront *self)
{
    Py_CLEAR(self->owner);
    Py_CLEAR(self->method);
    Py_CLEAR(self->state);
    Py_CLEAR(self->in_range);
    Py_CLEAR(self->driver);
    Py_CLEAR(self->call_name);
    Py_CLEAR(self->kind);
    Py_CLEAR(self->pointer);
    Py_CLEAR(self->stream_type);
    Py_CLEAR(self->kernel_type);
    Py_CLEAR(self->configs);
    Py_CLEAR(self->graph_type);
    return 0;
}

static void front_dealloc(OpFront *self)
{
    PyObject_GC_UnTrack(self);
    front_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* What a bound method answers, so that inspect, task groups and messages see one. */
static PyObject *front_method_attr(OpFront *self, void *which)
{
    if (self->method == NULL) {
        PyErr_SetString(PyExc_ReferenceError, "the backend of this op is gone");
        return NULL;
    }
    return PyObject_GetAttrString(self->method, (const char *)which);
}

static PyObject *front_self(OpFront *self, void *unused)
{
    return self->owner != NULL ? Py_NewRef(self->owner) : Py_NewRef(Py_None);
}

static PyObject *front_func(OpFront *self, void *unused)
{
    return self->method != NULL ? Py_NewRef(self->method) : Py_NewRef(Py_None);
}

/* The Python method, bound: ``inspect.signature`` follows it. */
static PyObject *front_wrapped(OpFront *self, void *unused)
{
    if (self->method == NULL || self->owner == NULL) {
        PyErr_SetString(PyExc_ReferenceError, "the backend of this op is gone");
        return NULL;
    }
    return PyMethod_New(self->method, self->owner);
}

static PyGetSetDef front_getset[] = {
    {"__name__", (getter)front_method_attr, NULL, NULL, "__name__"},
    {"__qualname__", (getter)front_method_attr, NULL, NULL, "__qualname__"},
    {"__doc__", (getter)front_method_attr, NULL, NULL, "__doc__"},
    {"__module__", (getter)front_method_attr, NULL, NULL, "__module__"},
    {"__self__", (getter)front_self, NULL, "The backend.", NULL},
    {"__func__", (getter)front_func, NULL, "The Python method, unbound.", NULL},
    {"__wrapped__", (getter)front_wrapped, NULL, "The Python method, bound.", NULL},
    {NULL},
};

static PyObject *front_repr(OpFront *self)
{
    if (self->method == NULL || self->owner == NULL)
        return PyUnicode_FromFormat("<aruntime compiled %s front, cleared>", FRONT_OPS[self->op]);
    return PyUnicode_FromFormat("<compiled front of %R of %R>", self->method, self->owner);
}

PyTypeObject OpFrontType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aruntime._enqueue_compiled.OpFront",
    .tp_doc = "A Backend op's common case in C; every other case is its Python method "
              "(see ffi/core/front.c).",
    .tp_basicsize = sizeof(OpFront),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(OpFront, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = front_new,
    .tp_repr = (reprfunc)front_repr,
    .tp_getset = front_getset,
    .tp_traverse = (traverseproc)front_traverse,
    .tp_clear = (inquiry)front_clear,
    .tp_dealloc = (destructor)front_dealloc,
};
