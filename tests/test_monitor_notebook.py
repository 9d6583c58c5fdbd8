"""A notebook executed headlessly (nbclient): the monitored cell's final PNG is in the saved file."""

import base64
import io
import re

import nbformat
import pytest

pytestmark = pytest.mark.slow

BUSY = """%%iobench monitor --interval 0.1 --gpu none
import time
t = time.time()
x = 0
while time.time() - t < 1.5:
    x += 1
print("loop done")
"""


def _execute(tmp_path, cells):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    NotebookClient(
        nb, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    path = tmp_path / "executed.ipynb"
    nbformat.write(nb, path)
    return nbformat.read(path, as_version=4)  # what a viewer or GitHub gets


def test_saved_notebook_holds_the_final_png_of_the_monitored_cell(tmp_path):
    from PIL import Image

    nb = _execute(
        tmp_path,
        [
            "%load_ext nbbench",
            BUSY,
            "from nbbench.store import default_store\nprint(default_store().count('monitor'))",
            "%%iobench monitor --no-save --gpu none\n1/0",
        ],
    )
    outs = nb.cells[1].outputs
    pngs = [o for o in outs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(pngs) == 1, [o.output_type for o in outs]
    data = base64.b64decode(pngs[0].data["image/png"])
    img = Image.open(io.BytesIO(data))
    assert img.format == "PNG" and img.size[0] > 300
    # the final frame (drawn after the loop), not a live one: its text says how long the cell ran
    text = pngs[0].data["text/plain"]
    span = float(text.splitlines()[1].split()[0])
    assert span >= 1.45
    assert any(o.output_type == "stream" and "loop done" in o.text for o in outs)
    summary = [
        o for o in outs if o.output_type in ("display_data", "execute_result") and "text/html" in o.get("data", {})
    ]
    assert summary and "monitor cell" in summary[-1].data["text/plain"]
    # the result was saved in the store
    assert nb.cells[2].outputs[0].text.strip() == "1"
    # a failing cell: plot finalised (a run of a few ms: the sentence saying why there is no plot
    # replaces the live frame, no empty axes saved), the error re-raised (the cell errs)
    err = nb.cells[3].outputs
    shown = [o.get("data", {}) for o in err if o.output_type == "display_data"]
    assert any(
        "shorter than two 200 ms windows: no plot" in d.get("text/plain", "") and "image/png" not in d for d in shown
    ), shown
    assert [o.ename for o in err if o.output_type == "error"][-1] == "ZeroDivisionError"
    # shown once: the cell's own traceback (its frames), not a second copy when the magic re-raises
    errors = [o for o in err if o.output_type == "error"]
    assert len(errors) == 1, [o.output_type for o in err]
    assert any("1/0" in re.sub(r"\x1b\[[0-9;]*m", "", line) for line in errors[0].traceback)
    # after the monitor's result, which says it failed
    assert any("FAILED" in o.get("data", {}).get("text/plain", "") for o in err if o.output_type == "display_data")


def test_interrupt_button_keeps_the_samples_and_finishes_the_plot(tmp_path):
    """The notebook's interrupt (SIGINT to the kernel) mid-cell: the run ends as interrupted."""
    import time

    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:

        def run(code, timeout=60, interrupt_after=None):
            msg_id = kc.execute(code)
            outs, t0, sent = [], time.monotonic(), False
            started = None  # the interrupt is timed from the live plot's first frame: the monitor runs by then
            while True:
                if (
                    interrupt_after is not None
                    and not sent
                    and started is not None
                    and time.monotonic() - started > interrupt_after
                ):
                    km.interrupt_kernel()
                    sent = True
                try:
                    msg = kc.get_iopub_msg(timeout=0.2)
                except Exception:  # noqa: BLE001 - queue.Empty
                    if time.monotonic() - t0 > timeout:
                        raise AssertionError(f"no reply within {timeout} s") from None
                    continue
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                if started is None and msg["msg_type"] == "display_data":
                    started = time.monotonic()
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    return outs
                outs.append(msg)

        run("%load_ext nbbench")
        outs = run(
            "%%iobench monitor --interval 0.1 --gpu none\nimport time\nt = time.time()\n"
            "while time.time() - t < 30:\n    sum(range(1000))",
            interrupt_after=3.0,
        )
        kinds = [m["msg_type"] for m in outs]
        assert "error" in kinds or any("KeyboardInterrupt" in str(m["content"]) for m in outs)
        html = [
            m["content"]["data"]["text/html"]
            for m in outs
            if m["msg_type"] in ("display_data", "execute_result") and "text/html" in m["content"]["data"]
        ]
        assert html and "interrupted" in html[-1]
        finals = [m for m in outs if m["msg_type"] == "update_display_data"]
        assert finals and "image/png" in finals[-1]["content"]["data"]
        outs = run(
            "from nbbench.store import default_store\n"
            "r = default_store().find(1)[0]\n"
            "print(r.status, r.metrics['samples_count'] >= 10, "
            "len(r.samples['timeline']['t_s']) == r.metrics['samples_count'])"
        )
        text = "".join(m["content"].get("text", "") for m in outs if m["msg_type"] == "stream")
        # the samples up to the interrupt are kept (3 s at 0.1 s: about 30; 10 leaves room for a busy machine)
        assert text.strip() == "interrupted True True"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
