"""I/O engines behind :mod:`nbbench.probes.disk`.

* :mod:`.job`       the job description, its outcome, the offsets and the meter every engine shares
* :mod:`.uring`     io_uring through raw syscalls (ctypes): batched submit + reap
* :mod:`.sync`      one in flight in the calling thread; a thread pool fallback; the I/O buffers
* :mod:`.extern`    the system ``dd`` and ``fio`` as subprocesses (argument lists)
* :mod:`.devlimits` the device's request limits behind a path and how one I/O is split
* :mod:`.cache`     page-cache control and honesty checks
"""
