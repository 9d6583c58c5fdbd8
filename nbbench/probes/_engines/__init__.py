"""I/O engines behind :mod:`nbbench.probes.disk`.

* :mod:`.job`    the job description and its outcome, shared by every engine
* :mod:`.cache`  the page cache: drop a file's pages, preload, how much is resident
* :mod:`.builtin` the builtin engine: sync at QD1, io_uring rings deeper, else threads
* :mod:`.uring`  io_uring through raw syscalls (ctypes): batched submit + reap
* :mod:`.sync`   one in flight in the calling thread; a thread pool fallback
* :mod:`.extern` the system ``dd`` and ``fio`` as subprocesses (argument lists)

Layer: measure, inside :mod:`nbbench.probes`: the engines import only each other, the
bottom layer (``results``, ``env``, ``progress``) and the standard library.
"""
