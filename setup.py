"""The optional compiled QD1 I/O loop (nbbench/probes/_engines/_ioloop.c), and a check for the lab extension's build.

Everything else is in pyproject.toml.  ``optional=True``: where no C compiler exists (a
runtime-only container image) the build of this extension fails quietly, the install goes
on, and the builtin engine runs its pure-Python loop (its results say which one ran).

The JupyterLab extension is built by ``make labextension`` (Node.js) into nbbench/labextension/
and shipped as data files (pyproject.toml); without that build the wheel lacks the sidebar,
and this says so instead of failing (an install from a checkout without Node.js still works).
"""

import os
import sys

from setuptools import Extension, setup

if not os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), "nbbench", "labextension", "package.json")):
    sys.stderr.write(
        "nbbench: nbbench/labextension/ is not built: this build has no JupyterLab sidebar "
        "(run `make labextension` first; it needs Node.js)\n"
    )

setup(ext_modules=[Extension("nbbench.probes._engines._ioloop", ["nbbench/probes/_engines/_ioloop.c"],
                             optional=True, extra_compile_args=["-O2"])])
