"""The small protocol ranks and their launcher speak over a torch ``Store`` (a key-value server).

Keys (JSON values), under a per-run prefix:

``hb/R``      rank R's heartbeat counter (``add`` every 0.2 s): a peer that stops counting
              for :data:`DEAD_AFTER_S` is taken for dead (killed, crashed, host lost)
``info/R``    who rank R is: host, local rank, pid
``prog/R``    its latest progress: fraction and figures (the launcher sums them live)
``tmp/R``     the temporary files and directories it holds right now (the launcher removes
              what a killed rank leaves)
``stop``      set by the launcher (Stop, Ctrl-C) or a rank: every rank winds up its probe
``rec/R``     a rank's record when the group can no longer gather (a peer died)
``result``    rank 0's aggregate result (to the launcher under ``--ranks``)
``error``     a one-line error every rank agreed on (a failed preflight)
``gate/P``    how many ranks reached phase P's start (:class:`Gate`)
``abort``     a rank's probe failed: gates open for the others

Under ``--ranks`` the store is a :class:`torch.distributed.FileStore` in the launcher's private
directory (``NBBENCH_LAUNCH_STORE=file:DIR``, keys under ``NBBENCH_LAUNCH_TOKEN``): no socket;
under a bare torchrun or srun it is the process group's own store, under a prefix.
:class:`Watchdog` is the thread in each rank that beats, polls ``stop`` and watches the
peers, and sets the probe's cancel event when the run must end.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import threading
import time
from typing import Any

__all__ = [
    "Control",
    "Watchdog",
    "Gate",
    "connect_launcher_store",
    "open_file_store",
    "remove_left_files",
    "ENV_STORE",
    "ENV_TOKEN",
    "DEAD_AFTER_S",
    "BEAT_S",
]

ENV_STORE = "NBBENCH_LAUNCH_STORE"
ENV_TOKEN = "NBBENCH_LAUNCH_TOKEN"
BEAT_S = 0.2
#: how often a rank looks at its peers' heartbeats
PEER_CHECK_S = 1.0
#: a peer whose heartbeat has not moved for this long is taken for dead
DEAD_AFTER_S = float(os.environ.get("NBBENCH_RANK_DEAD_AFTER_S", "6"))


def open_file_store(directory: str, token: str, timeout_s: float = 30.0):
    """The control store of a ``--ranks`` run: ``DIR/ctl`` (a FileStore, shared by the launcher and
    the ranks, never removed by them: the launcher removes the directory), keys under ``token``."""
    from torch.distributed import FileStore, PrefixStore

    store = FileStore(os.path.join(directory, "ctl"), -1)
    store.set_timeout(datetime.timedelta(seconds=timeout_s))
    return PrefixStore(token, store)


def connect_launcher_store(environ=None, timeout_s: float = 30.0):
    """The launcher's store (None when this rank was not started by ``--ranks``)."""
    env = os.environ if environ is None else environ
    where = env.get(ENV_STORE) or ""
    if not where.startswith("file:"):
        return None
    return open_file_store(where[len("file:") :], env.get(ENV_TOKEN, "nbbench"), timeout_s)


class Control:
    """JSON values on a torch Store under the keys above."""

    def __init__(self, store, world_size: int):
        self.store = store
        self.world_size = world_size

    def set(self, key: str, value: Any) -> None:
        self.store.set(key, json.dumps(value, default=str, allow_nan=True))

    def has(self, key: str) -> bool:
        return bool(self.store.check([key]))

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, ``default`` when it is not set (never waits)."""
        if not self.has(key):
            return default
        raw = self.store.get(key)
        text = raw.decode() if isinstance(raw, (bytes, bytearray)) else str(raw)
        if not text:
            return default
        try:
            return json.loads(text)
        except ValueError:
            return default

    def beats(self) -> list[int]:
        """Every rank's heartbeat counter, in one round trip (every rank has beaten once before the
        start barrier, so every key exists by the time anyone asks)."""
        keys = [f"hb/{r}" for r in range(self.world_size)]
        try:
            return [int(v) for v in self.store.multi_get(keys)]
        except (AttributeError, NotImplementedError):  # a store without multi_get
            return [int(self.store.add(k, 0)) for k in keys]

    def beat(self, rank: int) -> None:
        self.store.add(f"hb/{rank}", 1)

    def stop_reason(self) -> str | None:
        return self.get("stop")

    def request_stop(self, reason: str) -> None:
        if not self.has("stop"):
            self.set("stop", reason)

    def per_rank(self, name: str) -> dict[int, Any]:
        """``name/R`` for every rank that set it."""
        out = {}
        for r in range(self.world_size):
            v = self.get(f"{name}/{r}")
            if v is not None:
                out[r] = v
        return out


class Watchdog(threading.Thread):
    """In each rank: beat, publish progress and temp files, poll ``stop``, watch the peers.

    Sets ``cancel`` (the probe's) when ``stop`` is set, when a peer's heartbeat stops
    for :data:`DEAD_AFTER_S` (``dead`` names it), when the store is lost (``lost``) or, under
    ``--ranks``, when the launching process (``parent``, its pid) is gone.
    """

    def __init__(
        self, control: Control, rank: int, cancel: threading.Event, temp_files=None, parent: int | None = None
    ):
        super().__init__(name=f"nbbench-rank{rank}-watchdog", daemon=True)
        self.control = control
        self.rank = rank
        self.cancel = cancel
        self.temp_files = temp_files
        self.parent = parent
        self.stop_reason: str | None = None
        self.dead: list[int] = []
        self.lost: str | None = None
        self._halt = threading.Event()
        self._armed = False
        self._progress: dict | None = None
        self._sent_progress = None
        self._sent_tmp = None
        self._seen: dict[int, tuple[int, float]] = {}
        self._checked = 0.0
        self._lock = threading.Lock()

    def arm(self) -> None:
        """Start watching the peers (after the start barrier: every rank has beaten by then)."""
        now = time.monotonic()
        self._seen = {r: (-1, now) for r in range(self.control.world_size) if r != self.rank}
        self._armed = True

    def progress(self, fraction, metrics) -> None:
        """A progress callback for the probe: the latest state, published on the next beat."""
        with self._lock:
            self._progress = {
                "f": fraction,
                "m": {
                    k: v for k, v in (metrics or {}).items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                },
                "t": time.time(),
            }

    def halt(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(2.0)

    def run(self) -> None:
        c = self.control
        while not self._halt.is_set():
            try:
                self._tick(c)
            except Exception as exc:  # noqa: BLE001 - the store is gone: the run cannot be coordinated
                if not self._halt.is_set():
                    self.lost = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                    self.cancel.set()
                return
            self._halt.wait(BEAT_S)

    def _tick(self, c: Control) -> None:
        c.beat(self.rank)
        with self._lock:
            prog = self._progress
        if prog is not None and prog is not self._sent_progress:
            c.set(f"prog/{self.rank}", prog)
            self._sent_progress = prog
        if self.temp_files is not None:
            tmp = sorted(self.temp_files())
            if tmp != self._sent_tmp:
                c.set(f"tmp/{self.rank}", tmp)
                self._sent_tmp = tmp
        if self.parent and os.getppid() != self.parent:  # the launcher was killed: nobody waits for this run
            c.request_stop(f"the launching process (pid {self.parent}) is gone")
        reason = c.stop_reason()
        if reason and self.stop_reason is None:
            self.stop_reason = str(reason)
            self.cancel.set()
        elif not reason and self.cancel.is_set():  # this rank was interrupted (Ctrl-C) or lost a peer
            c.request_stop(
                f"rank {self.rank} lost rank(s) {', '.join(map(str, self.dead))}"
                if self.dead
                else f"rank {self.rank} was interrupted"
            )
        now = time.monotonic()
        if self._armed and now - self._checked >= PEER_CHECK_S:
            self._checked = now
            beats = c.beats()
            for r, (last, since) in list(self._seen.items()):
                if beats[r] != last:
                    self._seen[r] = (beats[r], now)
                elif now - since > DEAD_AFTER_S and r not in self.dead:
                    self.dead.append(r)
                    self.cancel.set()


class Gate:
    """The ranks meet just before a timed phase (``ready(phase)`` of the probes), so their
    phases start together; cancellable, unlike a collective: it opens on the watchdog's
    cancel (stop, a dead peer) and when a rank's probe failed (``abort``)."""

    def __init__(self, control: Control, world_size: int, cancel: threading.Event, poll_s: float = 0.001):
        self.control = control
        self.world_size = world_size
        self.cancel = cancel
        self.poll_s = poll_s
        self.waited_s: dict[str, float] = {}

    def __call__(self, phase: str) -> None:
        t = time.monotonic()
        key = f"gate/{phase}"
        store = self.control.store
        store.add(key, 1)
        wait = self.poll_s
        n = 0
        while store.add(key, 0) < self.world_size:
            if self.cancel.is_set():
                break
            n += 1
            if n % 20 == 0 and self.control.has("abort"):
                break
            time.sleep(wait)
            if n > 2000:  # 1 ms polls for the first seconds (ranks leave together), then lighter on the store
                wait = 0.01
        self.waited_s[phase] = time.monotonic() - t

    def abort(self, reason: str) -> None:
        try:
            self.control.set("abort", reason)
        except Exception:  # noqa: BLE001
            pass


def _gone(pid) -> bool:
    """The process is no more (or a zombie: killed, not yet reaped)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, TypeError, ValueError):
        return False
    try:
        with open(f"/proc/{int(pid)}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def remove_left_files(control: Control, host: str | None = None) -> list[str]:
    """Remove the temporary files (and directories) that ranks listed (``tmp/R``) and could not remove themselves:
    those of ranks whose process is gone — on ``host`` only (None: this machine runs them all)."""
    from ..tempfiles import PREFIX

    removed = []
    try:
        infos, held = control.per_rank("info"), control.per_rank("tmp")
    except Exception:  # noqa: BLE001 - no store, nothing known to remove
        return removed
    for r, paths in held.items():
        info = infos.get(r) or {}
        if host is not None and info.get("host") != host:
            continue
        if info.get("pid") is not None and not _gone(info["pid"]):
            continue
        for p in paths or []:
            if not os.path.basename(p).startswith(PREFIX) or not os.path.lexists(p):
                continue
            try:
                if os.path.isdir(p) and not os.path.islink(p):  # a directory of its own (DCP's)
                    shutil.rmtree(p, ignore_errors=True)
                    if os.path.lexists(p):
                        continue
                else:
                    os.unlink(p)
                removed.append(p)
            except OSError:
                pass
    return removed
