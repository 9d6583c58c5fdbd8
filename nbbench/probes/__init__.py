"""The probes, one sub-package per subject:

- :mod:`.storage`: dd, randread, the presets and many small files over one inspected
  PATH (a :class:`~nbbench.probes.storage.target.StorageTarget`, :mod:`.storage.target`);
- :mod:`.pipeline`: the DataLoader (loader, sweep, feed) and the built-in datasets;
- :mod:`.checkpoint`: save a model-like state dict and load it back;
- :mod:`.shards`: large files read as streams, and the tar walk the datasets share;
- :mod:`.objects`: S3 and S3-compatible object storage;
- :mod:`.gpu` (the GPU stack check) with :mod:`.gpudevices` (the devices it reports),
  :mod:`.limits` (option limits declared once) and ``_engines`` (the storage probes' I/O engines).

Each probe is a plain function that returns a result (:mod:`nbbench.results`).

Layer: measure (with monitor, doctor, datasets).  Probes import the bottom layer
(``results``, ``units``, ``topology``, ``progress``, ``tempfiles``, ``accelerators``…) and
torch inside functions; never plots, ui, report, commands or a front end.
"""
