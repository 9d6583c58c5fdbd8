"""Each fact once per card: every result kind's card, as the terminal (text) and the notebook,
panel and report (HTML) draw it from a stored result (tests/fixtures/results/<kind>.json,
one per kind in :data:`nbbench.results.KINDS`), says a sentence once and a figure with its
unit once.  What is folded (the "all metrics" table, "how it was measured") is a reference
kept apart: it is checked on its own, not against the card.

A figure counts as repeated when it is written twice in the card's prose (answer, subject,
qualifiers, story, warnings, advice), or in the prose under the answer and again in an open
table; the answer's figures may stand once more in the open table they sum up (the sweep's
best row), and two rows of a table may hold the same value (two processes that both read 0 B).  A sentence
counts as repeated when a run of six words comes back anywhere in the card.
"""

from __future__ import annotations

import html as _html
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from nbbench.results import KINDS, Result

FIXTURES = Path(__file__).parent / "fixtures" / "results"

#: a number and its unit, as the cards write them: "494 samples/s", "1.61 ksamples/s", "32.1 %"
FIGURE = re.compile(
    r"(?<![\w.+])[-+−]?\d+(?:\.\d+)?\s?"
    r"(?:[kMGTPµmn]?(?:B/s|B|samples/s|files/s|batches/s|IOPS|s\b|W\b)|KiB|MiB|GiB|TiB|%|°C|cores?\b)"
)
WORD = re.compile(r"[\w.+%/()'`-]+")
SHINGLE = 6


def _load(kind: str) -> Result:
    return Result.from_dict(json.loads((FIXTURES / f"{kind}.json").read_text()))


def _figures(text: str) -> list[str]:
    return [" ".join(m.group(0).replace("−", "-").split()) for m in FIGURE.finditer(text)]


def _repeated_runs(text: str) -> list[str]:
    """Runs of SHINGLE words that come back later in ``text`` without overlapping."""
    words = [w.lower() for w in WORD.findall(text)]
    seen: dict[tuple, int] = {}
    out = []
    for i in range(len(words) - SHINGLE + 1):
        key = tuple(words[i : i + SHINGLE])
        if key in seen and i - seen[key] >= SHINGLE:
            out.append(" ".join(key))
            continue
        seen.setdefault(key, i)
    return out


def _repeats(prose: list[str], tables: list[str]) -> list[str]:
    """What ``prose`` (the answer first) and ``tables`` say more than once."""
    problems = []
    count = Counter(f for p in prose for f in _figures(p))
    in_answer = set(_figures(prose[0])) if prose else set()
    in_tables = Counter(f for t in tables for f in _figures(t))
    for fig, n in count.items():
        if n > 1 or (in_tables[fig] and fig not in in_answer):
            problems.append(f"figure {fig!r}: {n}× in the prose, {in_tables[fig]}× in a table")
    runs = _repeated_runs("\n".join(prose + tables))
    problems += [f"words repeated: {r!r}" for r in dict.fromkeys(runs)]
    return problems


def _text_card(r: Result) -> tuple[list[str], list[str]]:
    """The terminal card without its folded sections: (prose lines, table lines)."""
    prose, tables = [], []
    for line in r.text_table(width=100, details=False, ansi=False).splitlines():
        if line.startswith("  details: "):
            continue
        (tables if line.startswith("    ") else prose).append(line)
    return prose, tables


def _html_card(r: Result) -> tuple[list[str], list[str]]:
    """The HTML card without its folded ``<details>``: (prose, tables) as plain text."""
    page = re.sub(r"<details.*?</details>", "", r._repr_html_(), flags=re.S)
    page = re.sub(r"<img[^>]*>", "", page)
    tables = re.findall(r"<table.*?</table>", page, flags=re.S)
    prose = re.sub(r"<table.*?</table>", "\n", page, flags=re.S)

    def plain(s):
        s = re.sub(r"</(td|th)>", " | ", s)
        s = re.sub(r"<(br|/div|/p|/li|/tr)[^>]*>", "\n", s)
        return _html.unescape(re.sub(r"<[^>]+>", "", s))

    return [ln for ln in plain(prose).splitlines() if ln.strip()], [plain(t) for t in tables]


def test_there_is_a_fixture_for_every_kind():
    assert {p.stem for p in FIXTURES.glob("*.json")} >= set(KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("view", ["text", "html"])
def test_a_card_says_each_fact_once(kind, view):
    r = _load(kind)
    prose, tables = (_text_card if view == "text" else _html_card)(r)
    problems = _repeats(prose, tables)
    assert not problems, f"{kind} ({view}):\n  " + "\n  ".join(problems) + "\n\n" + "\n".join(prose + tables)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_folded_section_says_each_sentence_once(kind):
    r = _load(kind)
    for sec in r.present().sections:
        if not sec.folded:
            continue
        body = "\n".join(" | ".join(map(str, row)) for row in sec.rows)
        runs = _repeated_runs(body)
        assert not runs, (kind, sec.title, runs)


def test_the_check_finds_what_it_is_for():
    """The rule fails on a card that repeats itself (so that a green run means something)."""
    assert _repeats(["494 samples/s at AU 32.1 %", "The loader delivered 494 samples/s."], [])
    assert _repeats(["a card", "280 MB/s write"], ["write | 280 MB/s"])
    assert not _repeats(["280 MB/s write"], ["write | 280 MB/s"])
    assert _repeats(
        [
            "CUDA not available: this torch is a CPU-only build",
            "why: this torch is a CPU-only build: install a CUDA build",
        ],
        [],
    )
    assert not _repeats(["494 samples/s at AU 32.1 %"], ["a | 0 B", "b | 0 B"])
