"""The optional compiled QD1 I/O loop (nbbench/probes/_engines/_ioloop.c).

Everything else is in pyproject.toml.  ``optional=True``: where no C compiler exists (a
runtime-only container image) the build of this extension fails quietly, the install goes
on, and the builtin engine runs its pure-Python loop (its results say which one ran).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("nbbench.probes._engines._ioloop", ["nbbench/probes/_engines/_ioloop.c"],
                             optional=True, extra_compile_args=["-O2"])])
