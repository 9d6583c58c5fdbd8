"""Signal handlers that chain: one installed for SIGTERM and SIGHUP keeps the handler it replaces,
and hands each signal on to it — or, where there was none, to the default action, re-delivered so
the process ends as it would have.  A signal the process ignores (``nohup``) stays ignored.

The temp files' clean-up (:mod:`nbbench.tempfiles`), the ranks' launcher and the s3 write test
each install their own handler this way, one chained to the next.
"""

from __future__ import annotations

import os
import signal
import threading

__all__ = ["chain_signal", "install_signal_handler"]


def chain_signal(signum, frame, prev) -> None:
    """Hand the signal on: to the handler that was there before (``prev``), else its default action
    (restored and the signal re-delivered, so the process ends as it would have)."""
    if callable(prev):
        prev(signum, frame)
        return
    if prev == signal.SIG_IGN:
        return
    # default action: restore it and re-deliver, so the process ends as it would have
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_signal_handler(handler, previous: dict) -> None:
    """``handler`` for SIGTERM and SIGHUP (from the main thread), the handler it replaces kept in
    ``previous`` for :func:`chain_signal`.  A signal the process ignores stays ignored (nohup)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            prev = signal.getsignal(sig)
            if prev is handler or prev == signal.SIG_IGN:
                continue
            previous[sig] = prev
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread of the main interpreter
            pass
