"""The documentation says what the code does: the generated reference, the quoted command lines, the tutorials.

* docs/reference/*.md are what tools/gen_reference.py writes from the code today (`make reference`);
* every `nbbench …` / `%iobench …` line quoted in README.md and docs/**/*.md parses with the current
  parser — a line holding "…" is a placeholder and is skipped;
* every tutorial in notebooks/ has no `assert`, at most 15 code cells, and at least 70 % of them
  committed with an output.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "…"
SHELL_OPS = {"|", "||", "&&", ";", ">", ">>", "2>", "<", "&"}


def _gen_reference():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "tools" / "gen_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", sorted(_gen_reference().pages()))
def test_reference_page_matches_the_code(name):
    expected = _gen_reference().pages()[name]
    path = ROOT / "docs" / "reference" / name
    assert path.exists(), f"{path} missing: run `make reference`"
    assert path.read_text() == expected, (
        f"docs/reference/{name} differs from what the code says (an option, a default, a help text, a metric or "
        f"an exit code changed): run `make reference` and commit the result"
    )


def _doc_files():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


_INLINE = re.compile(r"`([^`\n]+)`")
# at the start of a line or span, after a prompt (`$ `, `!`), an assignment (`r = `) or `python -m `
_START = re.compile(r"^\s*(?:\$\s+|!|[\w.]+\s*=\s*|python3? -m )?(%%?iobench|nbbench)(?=\s)")


def quoted_command_lines(text: str) -> list[str]:
    """Every command line that starts with ``nbbench `` / ``%iobench `` / ``%%iobench `` in code blocks and
    inline code spans, from that word to the end of the line (or span).  A ```text block is output, not
    commands, and is skipped."""
    found = []
    block = None  # None: prose; else the block's info string
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            block = line.strip()[3:].strip() if block is None else None
            continue
        if block == "text":
            continue
        spans = [line] if block is not None else _INLINE.findall(line)
        for span in spans:
            m = _START.search(span)
            if m:
                found.append(span[m.start(1) :].strip())
    return found


def _argv(line: str) -> tuple[str, list[str]]:
    lex = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
    lex.whitespace_split = True
    lex.commenters = "#"
    words = []
    for w in lex:
        if w in SHELL_OPS or w.startswith(("2>", ">")):
            break
        words.append(w)
    return words[0], words[1:]


def _all_command_lines():
    out = []
    for path in _doc_files():
        for line in quoted_command_lines(path.read_text()):
            if PLACEHOLDER not in line:
                out.append((str(path.relative_to(ROOT)), line))
    return out


def test_docs_quote_command_lines():
    lines = _all_command_lines()
    assert len(lines) >= 40, f"only {len(lines)} command lines found in README.md and docs/"
    assert any(p == "README.md" for p, _ in lines)


@pytest.mark.parametrize("where,line", _all_command_lines())
def test_quoted_command_line_parses(where, line):
    from nbbench import commands
    from nbbench.cli import TerminalContext

    prog, argv = _argv(line)
    if len(argv) == 1 and argv[0] in commands.REGISTRY:
        return  # a subcommand named in prose ("`nbbench dd`'s figure"), not a command line
    if prog == "nbbench":
        ctx = TerminalContext()
    else:
        ctx = commands.Context(prog=prog, returns_result=True, cell="" if prog == "%%iobench" else None)
    try:
        commands.parse(argv, ctx)
    except commands.HelpRequested:
        pass
    except commands.UsageProblem as exc:
        pytest.fail(f"{where}: `{line}` does not parse: {exc}")


def test_a_wrong_option_is_found():
    from nbbench import commands

    prog, argv = _argv("nbbench dd /data --bogus 3  # a comment")
    assert (prog, argv) == ("nbbench", ["dd", "/data", "--bogus", "3"])
    with pytest.raises(commands.UsageProblem):
        commands.parse(argv, commands.Context())
    assert quoted_command_lines(
        "see `nbbench dd DIR --json` and\n```\n$ nbbench gpu | head\n```\n```text\nnbbench lab: output\n```\n"
    ) == ["nbbench dd DIR --json", "nbbench gpu | head"]


# ------------------------------------------------------------------ tutorials
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _code_cells(path):
    import nbformat

    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_tutorial_shape(path):
    cells = _code_cells(path)
    source = "\n".join(c.source for c in cells)
    asserts = [ln for ln in source.splitlines() if re.match(r"\s*assert\b", ln)]
    assert not asserts, f"{path.name}: test plumbing in a tutorial: {asserts}"
    assert len(cells) <= 15, f"{path.name}: {len(cells)} code cells (at most 15)"
    shown = sum(bool(c.get("outputs")) for c in cells)
    assert shown >= 0.7 * len(cells), (
        f"{path.name}: {shown} of {len(cells)} code cells show an output (at least 70 %): run `make notebooks-outputs`"
    )
    errors = [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: committed with an error output"
