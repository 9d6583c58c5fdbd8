"""Write notebooks/05-control-panel.ipynb, execute it, and keep its outputs without widget state.

    PYTHONPATH=$PWD .venv/bin/python tools/nb05_control_panel.py

Every tutorial is committed with its outputs (``make notebooks-outputs``, tools/notebook_outputs.py);
this script also writes notebook 05's source.  The panel is a widget, and a
notebook shows a widget only where its state is (JupyterLab with the kernel running).  On
GitHub and nbviewer what shows is the panel's static snapshot (:mod:`nbbench.panel.snapshot`),
an ordinary HTML output under the widget that nbbench refreshes after each run.  So this
script executes the notebook headlessly (nbclient, a temporary NBBENCH_HOME, nothing
written to the user's store), then removes what only a live kernel can use: the saved
widget state (``metadata.widgets``) and the widget-view entries of the outputs (each keeps
its one-line ``text/plain``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from mknb import write_notebook  # noqa: E402
from notebook_outputs import execute  # noqa: E402

PATH = Path(__file__).resolve().parent.parent / "notebooks" / "05-control-panel.ipynb"

CELLS = [
    """#md
# The control panel

Every nbbench probe behind one ipywidgets app, for when clicking is quicker than typing magics:

* **PATH** — a directory (write and read probes make their own temporary file there), a regular file or a block
  device (read probes only). It is checked as you type: what it is, its filesystem and device, the free space,
  and whether `O_DIRECT` works there.
* **Tabs** — GPU · Storage (dd, randread, files, presets) · DataLoader (feed, sweep) · Monitor · History. Each tab
  keeps its own last run — status line, progress bar, result (the answer first), live plot — and shows only the
  fields that matter for what is chosen.
* **Run / Stop** — runs happen in a background thread, one at a time, so the notebook stays usable. Stop ends a
  run within half a second; its partial result is kept, marked *interrupted*.
* Every run is saved to the results store, exactly as `%iobench …` would save it (untick *save* to skip).""",
    """import nbbench

p = nbbench.panel()      # or: %load_ext nbbench, then %iobench panel /dataset
p""",
    """#md
The panel's cell returns at once: the kernel only handles the panel's buttons while no cell is busy.
Under the widget sits a **static snapshot** of the panel — plain HTML that nbbench rebuilds after each run. In
JupyterLab only its first line shows; on GitHub or nbviewer, where widgets cannot show, it is what you see.

The same panel can be driven from code — handy in scripts and to see what a button does:""",
    """p.select("GPU")
p.tab("GPU").bench.value = False     # the checkbox on the GPU tab
record = p.run()                     # what the Run button does
p.wait(120)                          # block this cell until it ends (the button never does)
print(record)                        # how it went (ran; what its checks found) and its answer""",
    """#md
The status line beside *Run* says whether the probe ran (green *done*, orange *interrupted*, red *failed*) and,
for a check, what it found: on a machine without a usable GPU the check runs fine and its verdict is red.

A storage probe on a scratch directory, not saved (the *save* box unticked — a try-out):""",
    """import tempfile

scratch = tempfile.mkdtemp(prefix="nbbench-05-")
p.path = scratch                                  # what typing into the PATH field does
p.select("Storage")
p.tab("Storage").dd_size.value = "256M"           # the dd probe's "size" field
p.save.value = False
p.run()
p.wait(300)
p.save.value = True
print(f"{p.last.status}: {p.result.answer_line()}")""",
    """#md
Results land in the store (`$NBBENCH_HOME/results.sqlite`, by default your data directory); the History tab
shows them and compares two or more, in % against the first. The dd above was not saved:""",
    """nbbench.history().tail()[["run_id", "kind", "label", "status", "summary"]]""",
    """import shutil

shutil.rmtree(scratch)                            # the dd removed its own file; this removes the folder""",
    """#md
## What you learned

* The panel runs the same probes as `%iobench` with the same checks: a value the CLI refuses, the panel refuses
  in red, naming the field you typed into.
* Each tab keeps its own last run; the status line's colour is the verdict (green ok, amber warn, red fail).
* A saved notebook keeps a static snapshot of the panel, so it still says something where widgets cannot show.

**On your own data:** open `%iobench panel /path/to/your/dataset`, run *dd* and *randread* on the Storage tab,
then *feed* on the DataLoader tab; label the runs (`baseline`, `new-disk`) and compare them on the History tab.""",
]


if __name__ == "__main__":
    write_notebook(str(PATH), CELLS)
    execute(PATH)
    print(f"wrote {PATH} ({PATH.stat().st_size // 1024} KiB)")
