"""I/O engines behind :mod:`nbbench.probes.storage.disk`.

* :mod:`.registry`  the engines declared once (names, what each runs), the job every storage probe
                    hands them (:class:`~.registry.IoJob`) and the one check; the dispatcher that runs
                    it is :func:`nbbench.probes.storage.io_job.run_job`
* :mod:`.job`       the builtin engine's job description, its outcome, the offsets and the meter
* :mod:`.builtin`   the builtin engine: sync at QD1, io_uring rings deeper, else threads
* :mod:`.uring`     io_uring through raw syscalls (ctypes): batched submit + reap, the loop chosen
* :mod:`.uring_setup` the ring: syscalls, set-up, mapped rings, availability, registration
* :mod:`.uring_loop`  the Python submit/reap loops; :mod:`.uring_vec` the numpy and compiled ones
* :mod:`.sync`      one in flight in the calling thread; a thread pool fallback; the I/O buffers
* :mod:`.extern`    the system ``dd`` and ``fio`` as subprocesses (argument lists)
* :mod:`.devlimits` the device's request limits behind a path and how one I/O is split
* :mod:`.cache`     the page cache: drop a file's pages, preload, how much is resident

Layer: measure, inside :mod:`nbbench.probes`: the engines import only each other, the
bottom layer (``results``, ``env``, ``topology``, ``progress``) and the standard library.
"""
