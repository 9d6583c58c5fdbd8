"""The results store: SQLite, embedded, one file.

Location: ``$NBBENCH_HOME/results.sqlite``; without ``NBBENCH_HOME`` the user's data
directory (``platformdirs.user_data_dir("nbbench")``, e.g. ``~/.local/share/nbbench``).
A save waits up to ``$NBBENCH_STORE_TIMEOUT`` seconds (default 60) for another
process's lock.

The database runs in WAL mode so readers never block a writer, every write is one
``BEGIN IMMEDIATE`` transaction with a generous busy timeout, so several processes
(two notebooks, a notebook and a terminal) can save at once without losing rows.
Environment fingerprints are stored once per distinct id.

Whatever goes wrong with the store itself — ``NBBENCH_HOME`` is not a directory, the
file is not a SQLite database, a read-only filesystem, a full disk, a lock held past
the timeout, a schema newer than this nbbench — is one :class:`StoreError` whose
message is a sentence saying what and what to do; the front ends show the result
anyway and that sentence as "not saved: …" (:func:`nbbench.commands.finish`).

The modules: :mod:`~nbbench.store.connection` (connections, WAL, the retries on a locked or
busy database, transactions), :mod:`~nbbench.store.schema` (the version and its migrations),
:mod:`~nbbench.store.runs` (:class:`Store`: save, look up, list, delete) and
:mod:`~nbbench.store.errors` (:class:`StoreError` and its sentences).

Layer: the bottom (with units, results, env, topology).  It imports only :mod:`nbbench.results`
(and :mod:`nbbench.env` for a save's fingerprint).
"""

from __future__ import annotations

import os
import threading

from .connection import default_path
from .errors import StoreError, store_error
from .runs import Store
from .schema import SCHEMA_VERSION

__all__ = ["Store", "StoreError", "store_error", "default_path", "default_store", "default_timeout", "SCHEMA_VERSION"]


_default: Store | None = None
_default_lock = threading.Lock()


def default_timeout() -> float:
    """Seconds a save waits for another process's lock: ``$NBBENCH_STORE_TIMEOUT``, default 60."""
    text = os.environ.get("NBBENCH_STORE_TIMEOUT", "").strip()
    try:
        value = float(text) if text else 60.0
    except ValueError:
        raise StoreError(f"NBBENCH_STORE_TIMEOUT={text!r} is not a number of seconds") from None
    return value if value >= 0 else 60.0


def default_store() -> Store:
    """The store at :func:`default_path` (re-opened when ``NBBENCH_HOME`` or
    ``NBBENCH_STORE_TIMEOUT`` changes); :class:`StoreError` when it cannot be opened."""
    global _default
    with _default_lock:
        timeout = default_timeout()
        if _default is None or _default.path != default_path() or _default.timeout != timeout:
            _default = Store(timeout=timeout)
        return _default
