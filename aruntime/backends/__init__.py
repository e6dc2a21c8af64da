"""Concrete backends.  Each subpackage exposes ``open_driver`` and ``list_devices``.

``aruntime.open_backend(name)`` imports ``aruntime.backends.<package>`` lazily,
so importing aruntime never loads a C library, and a new backend is one folder.
"""
