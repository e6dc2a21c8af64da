/* LaunchSite: the sims' launch-site note (backends/_sim_faults.py), in C.
 *
 * Before each launch on a sim, the driver hands the sim the user's
 * "file:line" of that launch, so that a kernel's fault can name it.  The
 * Python note finds the user's frame and looks its bytes up by instruction;
 * on cuda-sim it cost nearly a third of a compiled launch.  Here the same
 * lookups are made from C:
 *
 *   walk up from the calling frame, at most a few frames, past the frames
 *   of files known to be aruntime's own (the Python note's own cache of
 *   files), to the first frame known to be outside it: the user's (the
 *   caller of Backend.launch, or, through the Backend's compiled front,
 *   front.c, the innermost frame itself); its ``(id(code), f_lasti)`` must
 *   already have its bytes (the note's cache of sites, with the code
 *   object, to check the id was not reused); then hand the sim those
 *   bytes through its setter.  A file not yet classified stops the walk.
 *
 * Anything else, the first launch from a line included, calls the Python
 * note, which fills the caches the next launch reads here.
 */
#include "site.h"

#include <stddef.h>
#include <stdint.h>
#include <structmember.h>

/* How many frames up from the note the user's may be. */
enum { SITE_DEPTH_MAX = 6 };

typedef void (*site_setter)(const char *);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *inside; /* file name -> whether it is aruntime's own (the Python cache) */
    PyObject *sites;  /* (id(code), f_lasti) -> (code, b"file:line") (the Python cache) */
    PyObject *hook;   /* the Python note: every other case */
    site_setter setter;
    Py_ssize_t taken; /* notes made here, without the hook (the tests read it) */
} LaunchSite;

#if PY_VERSION_HEX >= 0x030B0000
/* The first frame up from the note that is known to be outside aruntime (a new
 * reference), or NULL: none within SITE_DEPTH_MAX, or one whose file is not classified. */
static PyFrameObject *user_frame_near(LaunchSite *self)
{
    PyFrameObject *frame = PyEval_GetFrame();
    Py_XINCREF(frame);
    for (int depth = 0; frame != NULL && depth < SITE_DEPTH_MAX; depth++) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        PyObject *inside = PyDict_GetItemWithError(self->inside, code->co_filename);
        Py_DECREF(code);
        if (inside == Py_False)
            return frame;
        if (inside != Py_True)
            break; /* not classified yet (or an error): the hook classifies it */
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    PyErr_Clear();
    Py_XDECREF(frame);
    return NULL;
}

/* ``(id(code), lasti)``, the sites cache's key (built by hand: Py_BuildValue parses
 * its format on every call). */
static PyObject *site_key(PyCodeObject *code, int lasti)
{
    PyObject *key = PyTuple_New(2);
    PyObject *id = key ? PyLong_FromVoidPtr(code) : NULL;
    PyObject *at = id ? PyLong_FromLong(lasti) : NULL;
    if (at == NULL) {
        Py_XDECREF(id);
        Py_XDECREF(key);
        return NULL;
    }
    PyTuple_SET_ITEM(key, 0, id);
    PyTuple_SET_ITEM(key, 1, at);
    return key;
}

/* The sim's bytes for ``frame``'s instruction, borrowed from the cache, or NULL. */
static PyObject *cached_site(LaunchSite *self, PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    PyObject *site = NULL;
    PyObject *key = site_key(code, PyFrame_GetLasti(frame));
    PyObject *known = key ? PyDict_GetItemWithError(self->sites, key) : NULL;
    if (known != NULL && PyTuple_Check(known) && PyTuple_GET_SIZE(known) == 2 &&
        PyTuple_GET_ITEM(known, 0) == (PyObject *)code && PyBytes_Check(PyTuple_GET_ITEM(known, 1)))
        site = PyTuple_GET_ITEM(known, 1);
    Py_XDECREF(key);
    PyErr_Clear();
    Py_DECREF(code);
    return site;
}
#endif

int launch_site_note(PyObject *obj)
{
    LaunchSite *self = (LaunchSite *)obj;
#if PY_VERSION_HEX >= 0x030B0000
    PyFrameObject *caller = user_frame_near(self);
    PyObject *site = caller != NULL ? cached_site(self, caller) : NULL;
    Py_XDECREF(caller);
    if (site != NULL) {
        /* The cache keeps these bytes for the life of the process, as the sim needs. */
        self->setter(PyBytes_AS_STRING(site));
        self->taken++;
        return 0;
    }
#endif
    PyObject *r = PyObject_CallNoArgs(self->hook);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

static PyObject *site_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 0 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "LaunchSite() takes no arguments");
        return NULL;
    }
    return launch_site_note(callable) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *site_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"inside", "sites", "hook", "setter", NULL};
    PyObject *inside, *sites, *hook;
    unsigned long long setter;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$O!O!OK:LaunchSite", keywords, &PyDict_Type,
                                     &inside, &PyDict_Type, &sites, &hook, &setter))
        return NULL;
    if (!PyCallable_Check(hook) || setter == 0) {
        PyErr_SetString(PyExc_TypeError,
                        "LaunchSite: hook must be callable and setter a non-null address");
        return NULL;
    }
    LaunchSite *self = (LaunchSite *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = site_vectorcall;
    self->inside = Py_NewRef(inside);
    self->sites = Py_NewRef(sites);
    self->hook = Py_NewRef(hook);
    self->setter = (site_setter)(uintptr_t)setter;
    return (PyObject *)self;
}

static int site_traverse(LaunchSite *self, visitproc visit, void *arg)
{
    Py_VISIT(self->inside);
    Py_VISIT(self->sites);
    Py_VISIT(self->hook);
    return 0;
}

static int site_clear(LaunchSite *self)
{
    Py_CLEAR(self->inside);
    Py_CLEAR(self->sites);
    Py_CLEAR(self->hook);
    return 0;
}

static void site_dealloc(LaunchSite *self)
{
    PyObject_GC_UnTrack(self);
    site_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef site_members[] = {
    {"taken", T_PYSSIZET, offsetof(LaunchSite, taken), READONLY,
     "notes made in C, without the Python hook"},
    {NULL},
};

PyTypeObject LaunchSiteType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aruntime._enqueue_compiled.LaunchSite",
    .tp_doc = "A sim's launch-site note, in C where the caches allow (see ffi/core/site.c).",
    .tp_basicsize = sizeof(LaunchSite),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(LaunchSite, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = site_new,
    .tp_traverse = (traverseproc)site_traverse,
    .tp_clear = (inquiry)site_clear,
    .tp_dealloc = (destructor)site_dealloc,
    .tp_members = site_members,
};
