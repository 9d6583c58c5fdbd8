"""Processes for the store's contention and crash tests: a writer saving N results, a reader
listing history in a loop, a busy loop.  Each prints one JSON line at the end (what it did, and
every error it met with its type and message) and exits 0 only when it met none."""

from __future__ import annotations

import json
import sys
import traceback


def writer(path: str, tag: str, n: int, timeout: float) -> int:
    from nbbench.results import Result
    from nbbench.store import Store

    errors, saved = [], []
    try:
        st = Store(path, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - reported with its message
        print(
            json.dumps(
                {"tag": tag, "saved": [], "errors": [f"open: {type(exc).__name__}: {exc}", traceback.format_exc()]}
            ),
            flush=True,
        )
        return 1
    for i in range(n):
        res = Result(kind="stress", params={"tag": tag, "i": i}, metrics={"iops": float(i)}).finish()
        try:
            saved.append(st.save(res, label=tag, environment={"id": f"env-{i % 3}", "host": "h"}))
        except Exception as exc:  # noqa: BLE001
            errors.append(f"save {i}: {type(exc).__name__}: {exc} (cause: {exc.__cause__!r})")
    print(json.dumps({"tag": tag, "saved": saved, "errors": errors}), flush=True)
    return 1 if errors else 0


def reader(path: str, stop_file: str) -> int:
    import os

    from nbbench.store import Store

    errors, reads = [], 0
    st = Store(path)
    while not os.path.exists(stop_file):
        try:
            st.history(kind="stress")
            reads += 1
        except Exception as exc:  # noqa: BLE001
            errors.append(f"history: {type(exc).__name__}: {exc} (cause: {exc.__cause__!r})")
    print(json.dumps({"reads": reads, "errors": errors}), flush=True)
    return 1 if errors else 0


def busy() -> int:
    while True:
        pass


def saver_forever(path: str) -> int:
    """Save results one after another, printing each committed run id (flushed) after its commit."""
    from nbbench.results import Result
    from nbbench.store import Store

    st = Store(path, timeout=30)
    i = 0
    while True:
        res = Result(kind="crash", params={"i": i}, metrics={"x": float(i)}).finish()
        rid = st.save(res, environment={"id": f"env-{i % 2}"})
        print(rid, flush=True)
        i += 1


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "writer":
        sys.exit(writer(args[0], args[1], int(args[2]), float(args[3])))
    if what == "reader":
        sys.exit(reader(args[0], args[1]))
    if what == "busy":
        sys.exit(busy())
    if what == "saver":
        sys.exit(saver_forever(args[0]))
    raise SystemExit(f"unknown: {what}")
