"""Execute the tutorial notebooks in place and keep their outputs (``make notebooks-outputs``).

    PYTHONPATH=$PWD .venv/bin/python tools/notebook_outputs.py                 # every notebook in notebooks/
    PYTHONPATH=$PWD .venv/bin/python tools/notebook_outputs.py notebooks/02-storage-probes.ipynb

The notebooks are committed with the outputs of a real run, so GitHub, nbviewer and the
documentation site (mkdocs-jupyter, which renders them without executing) show the answers.
Each notebook runs headlessly (nbclient) in a fresh temporary directory with its own
temporary ``NBBENCH_HOME`` — nothing lands in the user's store or in the checkout — and
what only a live kernel can use is removed afterwards: the saved widget state
(``metadata.widgets``), the widget-view entries of the outputs (each keeps its one-line
``text/plain``) and the volatile execution metadata.  The sources are not touched, so
running it twice gives the same notebooks with fresh figures; a notebook whose run
raises is left as it was and the command exits 1 naming it.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: the text/plain of a bare ipywidgets container (a progress bar's HBox), or of the control panel's widget
#: (its static snapshot follows it as HTML): nothing to read without a kernel
WIDGET_REPR = re.compile(
    r"^(?:(HBox|VBox|Box|GridBox|HTML|Label|Output|FloatProgress|IntProgress)\(|<nbbench control panel: )"
)


#: a link in an HTML output to a file the run wrote (a report in its temporary folder): dead once committed
FILE_LINK = re.compile(r"<a href='(?![a-z]+:|#)[^']*'[^>]*>([^<]*)</a>")


def unlink_files(html: str) -> str:
    """Links to local files (relative or absolute paths, no scheme) become the path as code: on the
    documentation site they would point into the run's temporary folder."""
    return FILE_LINK.sub(lambda m: f"<code>{m.group(1)}</code>", html)


def strip_widget_state(nb) -> None:
    """No saved widget state, no widget-view outputs (their text/plain stays, unless it is a bare
    container's repr such as a finished progress bar's), no volatile ids."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.get("metadata", {}).pop("execution", None)
        if "outputs" in cell:
            cell["outputs"] = [
                o
                for o in cell["outputs"]
                if not (
                    o.get("output_type") == "display_data"
                    and set(o.get("data", {})) <= {"text/plain", WIDGET_VIEW}
                    and WIDGET_REPR.match(o.get("data", {}).get("text/plain", ""))
                )
            ]
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data and WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
            if data and "text/html" in data:
                html = data["text/html"]
                data["text/html"] = unlink_files("".join(html) if isinstance(html, list) else html)
            out.get("metadata", {}).pop("transient", None)


def execute(path: Path, timeout: int = 900) -> None:
    """Run notebook ``path`` from its first cell to its last and write it back with its outputs."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="nbbench-nbout-") as tmp:
        home, cwd = Path(tmp, "home"), Path(tmp, "cwd")
        home.mkdir()
        cwd.mkdir()
        old = os.environ.get("NBBENCH_HOME")
        os.environ["NBBENCH_HOME"] = str(home)  # the kernel inherits it: nothing lands in the user's store
        os.environ.setdefault("MPLBACKEND", "Agg")
        try:
            NotebookClient(
                nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
            ).execute()
        finally:
            if old is None:
                os.environ.pop("NBBENCH_HOME", None)
            else:
                os.environ["NBBENCH_HOME"] = old
    strip_widget_state(nb)
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--strip-only"]:  # re-strip committed outputs without running anything
        import nbformat

        for path in [Path(a) for a in argv[1:]] or sorted((ROOT / "notebooks").glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            strip_widget_state(nb)
            nbformat.write(nb, path)
        return 0
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    failed = []
    for path in paths:
        t0 = time.monotonic()
        try:
            execute(path)
        except Exception as exc:  # a cell raised: keep the committed notebook, name it, go on
            failed.append(path.name)
            print(f"FAILED {path.name}: {type(exc).__name__}: {str(exc).strip().splitlines()[-1:]}", file=sys.stderr)
            continue
        print(f"{path.name}: executed in {time.monotonic() - t0:.0f} s ({path.stat().st_size // 1024} KiB)")
    if failed:
        print(f"not updated: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
