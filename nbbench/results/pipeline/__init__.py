"""Results of the input-pipeline probes: the DataLoader benchmark, its sweep, the feed.

Layer: core (inside :mod:`nbbench.results`; imports only the core).

* :mod:`.loader` the DataLoader benchmark (throughput, AU, data wait)
* :mod:`.sweep`  a sweep of num_workers × batch size × pin_memory
* :mod:`.feed`   whether storage and the loader keep the accelerators fed
"""
