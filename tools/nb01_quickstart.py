import sys; sys.path.insert(0, __import__("os").path.dirname(__file__))
from mknb import write_notebook
write_notebook("notebooks/01-quickstart.ipynb", [
"""#md
# nbbench quickstart

nbbench answers, without leaving JupyterLab: is the GPU stack sound, is the storage where the dataset
lives fast enough, does the input pipeline keep the GPU fed, and is the environment set up right.
Every result is kept with a fingerprint of the machine and its package versions.

Load the extension once per kernel:""",
"%load_ext nbbench",
"""#md
`%iobench` alone (or `%iobench help`) lists the subcommands; `%iobench SUBCOMMAND --help` shows one's options.""",
"%iobench help",
"""#md
## The GPU stack

`%iobench gpu` says whether torch can use CUDA, on which devices, whether torch's CUDA build and the driver
fit together — and why not when they don't. On a machine without a GPU it says so, with the reason, and
carries on. When CUDA works it also runs a short sanity benchmark (matmul TFLOP/s, host↔device copies).""",
"%iobench gpu",
"""#md
`-o` returns the result object, like `%timeit -o`. `-q` keeps the cell quiet. Every result has `metrics`
(base units, the unit in the key), `labels`, `warnings`, raw `samples`, a `status`, and `to_dict()` /
`to_frame()`.""",
"""r = %iobench gpu -o -q
print("available:", r.available)
print("reason:   ", r.reason)
[(v["status"], v["check"]) for v in r.verdicts]""",
"r.to_frame()",
"""#md
## Where results are kept

Every run from a magic or the CLI is saved (unless `--no-save`) in SQLite at
`$NBBENCH_HOME/results.sqlite`, by default in your user data directory. `history()` is a DataFrame.""",
"""import nbbench
st = nbbench.default_store()
print(st.path)
st.history()[["run_id", "kind", "label", "status", "summary"]].tail()""",
"""#md
## The environment

The fingerprint stored with each result: host, OS, container, usable CPUs (affinity and cgroup quota),
memory limit, Python, every installed package, torch / CUDA / cuDNN builds, GPUs.
`--export requirements` writes an exact `name==version` list a colleague can install from.""",
"%iobench env",
"""import tempfile, os
req = os.path.join(tempfile.mkdtemp(), "requirements-exact.txt")
%iobench env --export requirements --out {req}
print(open(req).read().splitlines()[:5])""",
"""#md
## The same from a terminal

Everything here is also `nbbench SUBCOMMAND …` for users who come in over SSH; `--json` prints the
result's dict for scripts.""",
"""import sys, json, subprocess
out = subprocess.run([sys.executable, "-m", "nbbench", "gpu", "--json", "--no-bench", "--no-save"],
                     capture_output=True, text=True, check=True).stdout
json.loads(out)["available"]""",
])
