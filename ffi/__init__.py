"""aruntime's build code: the cffi declarations, the software drivers' C sources
and the portable kernels, and :mod:`ffi.build`, which compiles them.

This package is part of the source tree and the sdist, not of the installed
wheel: ``setup.py`` and a source checkout's first import of aruntime call
``ffi.build.build(out_dir)``.
"""
