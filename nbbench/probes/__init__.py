"""The probes: storage (dd, randread, presets, files), DataLoader (loader, sweep, feed) and GPU.

Each probe is a plain function that returns a result (:mod:`nbbench.results`); a storage
PATH becomes a :class:`~nbbench.probes.target.StorageTarget` once (:mod:`.target`).

Layer: measure (with monitor, doctor, datasets).  Probes import the bottom layer
(``results``, ``units``, ``topology``, ``progress``, ``tempfiles``, ``accelerators``…) and
torch inside functions; never plots, ui, report, commands or a front end.
"""
