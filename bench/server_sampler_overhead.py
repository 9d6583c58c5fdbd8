"""What does the Jupyter server's live sampler (nbbench.server.live) cost?

The server extension keeps one :class:`~nbbench.server.live.LiveSampler` for all clients: a
Monitor at 1 Hz with the machine's sources (CPU, memory, the disk behind the root, network,
NVML GPUs), the pressure/throttling/per-disk source and one process tree per kernel.  Here it
runs with ``--kernels`` stand-in kernels (sleeping Python processes, each with ``--children``
children: DataLoader workers), as in a server with notebooks open.

Three figures:

1. the sampler's own CPU time (its thread, ``time.thread_time``) over ``--steady`` seconds of
   sampling, as % of one core — the target: <= 1 % at 1 Hz;
2. a CPU-bound loop in the same process (it holds the GIL: the worst case for a background
   thread), timed in interleaved rounds with the sampler ``running`` and ``paused``, and
   ``paused`` against ``paused`` again (an A/A pair: the noise floor).  The ratio is
   time(paused) / time(state) per round (1.000 = free), the median over rounds is printed with
   the A/A pair's spread as the floor a difference must clear to mean anything;
3. building one ``api/metrics`` answer (:meth:`LiveSampler.snapshot`): milliseconds each, and
   what one client polling every 2 s costs as % of one core.

Timings on a shared machine are noisy: this prints figures, it does not fail.

    .venv/bin/python bench/server_sampler_overhead.py [--rounds 12] [--seconds 1.0] [--steady 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _common import calibrate, work  # noqa: E402

from nbbench.server.live import LiveSampler  # noqa: E402

KERNEL = (
    "import subprocess, sys, time\n"
    "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)']) for _ in range({n})]\n"
    "time.sleep(3600)\n"
)


def sampler_cpu_s(live: LiveSampler) -> float:
    m = live._monitor
    return m.sampler_cpu_s + sum(getattr(s, "thread_cpu_s", 0.0) or 0.0 for s in m.sources)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--seconds", type=float, default=1.0, help="length of one timed loop")
    ap.add_argument("--steady", type=float, default=20.0, help="seconds of sampling for the thread's CPU share")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--kernels", type=int, default=3)
    ap.add_argument("--children", type=int, default=2)
    a = ap.parse_args(argv)
    kernels = [subprocess.Popen([sys.executable, "-c", KERNEL.format(n=a.children)]) for _ in range(max(0, a.kernels))]
    live = LiveSampler(interval=a.interval, idle_s=1e9)
    try:
        live.touch()
        live.track_kernels({k.pid: f"stand-in-{i}.ipynb" for i, k in enumerate(kernels)})
        time.sleep(3.0)  # the trees found, their children scanned
        mon = live._monitor
        n_tracked = len(live.kernel_figures())

        # 1. the thread's CPU share at its interval
        c0, t0, s0 = sampler_cpu_s(live), time.monotonic(), mon.n_samples
        time.sleep(a.steady)
        cpu_pct = 100.0 * (sampler_cpu_s(live) - c0) / (time.monotonic() - t0)
        samples = mon.n_samples - s0

        # 2. interleaved rounds: running / paused / paused again (A/A)
        mon.pause()
        n = calibrate(a.seconds)
        states = ["running", "paused", "paused_again"]
        times: dict[str, list[float]] = {k: [] for k in states}
        for r in range(a.rounds):
            for k in states[r % 3 :] + states[: r % 3]:
                if k == "running":
                    mon.resume()
                t = time.perf_counter()
                work(n)
                times[k].append(time.perf_counter() - t)
                mon.pause()
        mon.resume()
        ratio = [p / s for p, s in zip(times["paused"], times["running"])]
        floor = [p / s for p, s in zip(times["paused"], times["paused_again"])]

        # 3. one api/metrics answer
        reps = 20
        t = time.perf_counter()
        for _ in range(reps):
            live.snapshot()
        snap_ms = 1000.0 * (time.perf_counter() - t) / reps
    finally:
        live.stop()
        for k in kernels:
            for c in __import__("psutil").Process(k.pid).children(recursive=True):
                c.kill()
            k.kill()
            k.wait()

    q = statistics.quantiles(floor, n=4) if len(floor) >= 2 else [1.0, 1.0, 1.0]
    print(f"server live sampler at {a.interval:g} s, {n_tracked} kernel trees of {1 + a.children} processes each")
    print(f"  sampler thread: {cpu_pct:.2f} % of one core over {a.steady:g} s ({samples} samples)  [target <= 1 %]")
    print(
        f"  CPU-bound loop, paused/running: median {statistics.median(ratio):.3f} over {a.rounds} interleaved rounds"
        f"  (noise floor, paused/paused: median {statistics.median(floor):.3f}, IQR {q[0]:.3f}…{q[2]:.3f})"
    )
    print(
        f"  one api/metrics answer: {snap_ms:.2f} ms to build; one client every 2 s: "
        f"{snap_ms / 2000.0 * 100:.3f} % of one core"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
