"""Run a probe so that Ctrl-C, the notebook's interrupt button and a Stop button
all end it the same way: the cancel event is set, the probe winds up within
0.5 s, cleans up after itself and returns a result marked ``interrupted``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

__all__ = ["run_cancellable"]


def run_cancellable(
    fn: Callable[[threading.Event], T], cancel: threading.Event | None = None, name: str = "nbbench-probe"
) -> T:
    """Run ``fn(cancel)`` in a worker thread and wait for it.

    A KeyboardInterrupt arriving while waiting sets ``cancel`` and keeps waiting for
    the probe to return its (interrupted) result; a second one is re-raised.
    Exceptions raised by ``fn`` are re-raised here.
    """
    cancel = cancel or threading.Event()
    box: dict = {}
    # an Event, not Thread.is_alive(): a KeyboardInterrupt that lands inside Thread.join
    # can leave the thread looking finished while it still runs (CPython gh-90882)
    done = threading.Event()

    def target():
        try:
            box["value"] = fn(cancel)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc
        finally:
            done.set()

    t = threading.Thread(target=target, name=name, daemon=True)
    t.start()
    interrupts = 0
    while not done.is_set():
        try:
            done.wait(0.05)
        except KeyboardInterrupt:
            interrupts += 1
            cancel.set()
            if interrupts > 1:
                raise
    if "error" in box:
        raise box["error"]
    return box["value"]
