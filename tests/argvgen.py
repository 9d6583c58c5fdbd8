"""Command lines for the property-based CLI tests (tests/test_cli_fuzz.py), drawn by hypothesis.

The option universe is read from the parsers themselves (:func:`universe`: every
subcommand's actions, their option strings, types, choices and nargs), so a new
subcommand or option is covered without touching this file.  Two kinds of argv:

* :func:`wild_argv` — anything: options of this or another subcommand, abbreviations,
  ``--opt=value``, missing or extra values, numbers, sizes, unicode, empty strings.
  Only parsed, never run.
* :func:`safe_argv` — runnable: every value bounded (sizes ≤ 16M, counts ≤ 2,
  durations ≤ 1 s, ``--ranks`` ≤ 2, one host), every path inside the run's temporary
  directory, ``--serve`` only on 127.0.0.1:0, no ``monitor -- COMMAND``.  Values may
  still be wrong (a usage error or a one-line probe error is a fine outcome).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from hypothesis import strategies as st

#: values that exercise the option types: sizes, durations, lists, signs, overflow, odd text
WILD_VALUES = [
    "0",
    "1",
    "-1",
    "2",
    "64",
    "-0",
    "+3",
    "007",
    "1.5",
    "-2.5",
    "1e3",
    "1e309",
    "-1e309",
    "nan",
    "inf",
    "-inf",
    "9" * 40,
    "0x10",
    "4k",
    "4K",
    "1M",
    "16M",
    "1G",
    "1.5G",
    "-1k",
    "0k",
    "1T",
    "1P",
    "1kb",
    "1KiB",
    "1MiB",
    "1 M",
    "M",
    "k",
    "1s",
    "0.5s",
    "2m",
    "1h",
    "1d",
    "-1s",
    "0s",
    "10ms",
    "1:30",
    "0,1",
    "0,2,4,8",
    "1,,2",
    ",",
    ",,",
    "-1,2",
    "a,b",
    "true",
    "false",
    "true,false",
    "yes,no,maybe",
    "all",
    "none",
    "auto",
    "0,1,x",
    "127.0.0.1:0",
    ":0",
    "0.0.0.0:9100",
    "[::1]:0",
    "host:",
    "host:99999",
    "localhost:-1",
    "9100",
    "cpu",
    "cuda",
    "cuda:7",
    "meta",
    "h100-resnet50",
    "a100-resnet50",
    "x-y",
    "cdm",
    "gloo",
    "nccl",
    "",
    " ",
    "\t",
    "\n",
    "é",
    "日本",
    "\x00",
    "\x7f",
    "-",
    "--",
    "-x",
    "--x=1",
    "=",
    "%",
    "%%",
    "{}",
    "'",
    '"',
    "a b",
    "$HOME",
    "~",
    ".",
    "..",
    "/",
    "/nonexistent/nbbench",
    "nosuchmodule:f",
    "os.path:nope",
    "bad:",
]

#: bounded values that parse, per option type; JUNK: bounded values that may not (a usage error)
SAFE_SIZES = ["1", "512", "4k", "64k", "1M", "3M", "16M"]
SAFE_INTS = ["1", "2"]
SAFE_INT_LISTS = ["0", "0,1", "1,2", "2"]
SAFE_DURATIONS = ["0.1", "0.3", "1", "1s", "300ms"]
SAFE_FRACTIONS = ["0", "0.5", "1"]
SAFE_BOOLS = ["true", "false", "true,false"]
SAFE_OTHER = ["1", "2", "all", "none", "auto", "h100-resnet50"]
JUNK = ["0", "-1", "x", "-1k", "1x", "", "2,", "a,b"]
SAFE_WORDS = [
    "a",
    "base",
    "run 1",
    "é",
    "",
    "1",
    "x,y",
    "dd",
    "all",
    "none",
    "auto",
    "cpu",
    "cuda",
    "meta",
    "nosuchmodule:f",
    "os.path:nope",
    "bad:",
    "lo",
    "0",
]
#: upper bounds a safe run's values keep (sizes ≤ 16M, counts ≤ 2, durations ≤ 1 s)
MAX_SIZE = 16 << 20
#: options a safe run never gives: many hosts (waits for a rendezvous)
NEVER = {"rdzv_host", "nnodes"}
#: where a safe run's object-storage requests go: a closed port on this machine (nothing leaves it)
LOCAL_ENDPOINT = "http://127.0.0.1:9"
#: positionals that name a path (by dest or metavar)
PATHISH = {"path", "source", "loader", "dir", "file", "dataset", "out", "png", "png_path"}


@dataclass
class Option:
    """One argparse action of one subcommand, as the generators need it."""

    strings: list[str]
    dest: str
    nargs: object
    type: object
    choices: list | None
    metavar: str | None
    takes_value: bool
    default: object = None

    @property
    def type_name(self) -> str:
        return getattr(self.type, "__name__", "") or ""


@dataclass
class Subcommand:
    name: str
    options: list[Option] = field(default_factory=list)
    positionals: list[Option] = field(default_factory=list)


def _option(action: argparse.Action) -> Option:
    takes = action.nargs != 0
    return Option(
        list(action.option_strings),
        action.dest,
        action.nargs,
        action.type,
        list(action.choices) if action.choices is not None else None,
        action.metavar if isinstance(action.metavar, str) else None,
        takes,
        action.default,
    )


def universe(ctx=None) -> dict[str, Subcommand]:
    """Every available subcommand's options and positionals, read from its parser."""
    from nbbench import commands
    from nbbench.cli import TerminalContext

    ctx = ctx or TerminalContext()
    out: dict[str, Subcommand] = {}
    for name in commands.names():
        if not commands.available(name):
            continue
        parser = commands.build_parser(commands.get_command(name), ctx)
        sub = Subcommand(name)
        for action in parser._actions:
            if action.dest == "help":
                continue
            (sub.options if action.option_strings else sub.positionals).append(_option(action))
        out[name] = sub
    return out


# ------------------------------------------------------------------------------------------ wild
def _abbrev(s: str) -> list[str]:
    return [s[:n] for n in range(3, len(s))] if s.startswith("--") else []


def wild_argv(uni: dict[str, Subcommand]) -> st.SearchStrategy[list[str]]:
    """Any argv: a subcommand (or junk), then options, values and positionals in any order."""
    names = sorted(uni)
    every_opt = sorted({s for sub in uni.values() for o in sub.options for s in o.strings})

    @st.composite
    def draw(data_draw):
        head = data_draw(
            st.one_of(
                st.sampled_from(names),
                st.sampled_from(["help", "-h", "--help", "--version", "", "x", "DD", "d"]),
                st.text(max_size=6),
            )
        )
        sub = uni.get(head) or uni[data_draw(st.sampled_from(names))]
        own = sorted(
            {s for o in sub.options for s in o.strings}
            | {a for o in sub.options for s in o.strings for a in _abbrev(s)}
        )
        value = st.one_of(
            st.sampled_from(WILD_VALUES),
            st.text(max_size=10),
            st.integers(-(10**12), 10**12).map(str),
            st.floats(allow_nan=True, allow_infinity=True).map(repr),
        )
        for o in sub.options:
            if o.choices:
                value = st.one_of(value, st.sampled_from([str(c) for c in o.choices]))
        opt = st.one_of(
            st.sampled_from(own or ["--x"]),
            st.sampled_from(every_opt),
            st.sampled_from(["-", "--", "-x", "--nope", "-qv", "-vq", "--json", "-h", "--help"]),
        )
        unit = st.one_of(
            opt.map(lambda o: [o]),
            st.tuples(opt, value).map(list),
            st.tuples(opt, value).map(lambda t: [f"{t[0]}={t[1]}"]),
            value.map(lambda v: [v]),
        )
        units = data_draw(st.lists(unit, max_size=8))
        return [head] + [tok for u in units for tok in u]

    return draw()


# ------------------------------------------------------------------------------------------ safe
def _pool(o: Option, junk: bool = False) -> list[str] | None:
    """The safe values of a typed option (None: a free-text option, handled by name); ``junk``: with
    bounded values that may not parse."""
    pool = _valid_pool(o)
    if o.type_name == "serve_address":
        return pool  # listeners: 127.0.0.1:0 only, never a junk value that could name another address
    return pool + JUNK if (pool is not None and junk) else pool


def _valid_pool(o: Option) -> list[str] | None:
    t = o.type_name
    if o.choices:
        return [str(c) for c in o.choices]
    if t in ("size",):
        return SAFE_SIZES
    if t in ("size_list",):
        return SAFE_SIZES + ["4k,64k", "1M,16M"]
    if t in ("duration", "_interval", "_table_interval", "_window"):
        return SAFE_DURATIONS
    if t in ("int_list",):
        return SAFE_INT_LISTS
    if t in ("bool_list",):
        return SAFE_BOOLS
    if t in ("fraction",):
        return SAFE_FRACTIONS
    if t in ("serve_address",):
        return ["127.0.0.1:0"]
    if t in ("int", "positive_int", "nonneg_int"):
        return SAFE_INTS
    if o.type is not None:  # choice lists, a type this file does not know
        return SAFE_OTHER
    return None


def _unsafe_default(o: Option) -> bool:
    """A typed option whose default a safe run must not keep (too big, too long, unbounded)."""
    d = o.default
    if d is None or isinstance(d, bool):
        return o.type is not None
    if isinstance(d, str) and o.type is not None:
        try:
            d = o.type(d)
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            return True
    if isinstance(d, (list, tuple)):
        return any(not isinstance(v, bool) and isinstance(v, (int, float)) and v > 2 for v in d)
    if isinstance(d, (int, float)):
        limit = 1.0 if o.type_name in ("duration", "_window") else (MAX_SIZE if "size" in o.type_name else 2)
        return d > limit
    return False


def safe_argv(
    uni: dict[str, Subcommand], tmp_paths: list[str], out_paths: list[str], name: str | None = None
) -> st.SearchStrategy:
    """A runnable argv for subcommand ``name`` (any, if None): every value bounded, every path in the
    temporary directory; half of them with values that parse, half with some that may not."""
    names = [name] if name else sorted(uni)
    words = st.sampled_from(SAFE_WORDS)

    def value_of(o: Option, junk: bool) -> st.SearchStrategy[str]:
        if o.dest == "endpoint_url":  # object storage: only a closed port on this machine, never a network host
            return st.just(LOCAL_ENDPOINT)
        pool = _pool(o, junk)
        if pool is not None:
            return st.sampled_from(pool)
        key = {o.dest.lower(), (o.metavar or "").lower()}
        if key & {"out", "png", "file"}:
            return st.sampled_from(out_paths)
        if key & PATHISH:
            return st.sampled_from(tmp_paths)
        if o.dest == "serve":
            return st.just("127.0.0.1:0")
        return words

    @st.composite
    def draw(data_draw):
        cmd = data_draw(st.sampled_from(names))
        junk = data_draw(st.booleans())
        sub = uni[cmd]
        argv = [cmd]
        for o in sub.options:
            if o.dest in NEVER:
                continue
            if not o.takes_value:
                if data_draw(st.integers(0, 3)) == 0:
                    argv.append(o.strings[-1])
                continue
            if _unsafe_default(o) or o.dest == "endpoint_url" or data_draw(st.booleans()):
                argv += [o.strings[-1], data_draw(value_of(o, junk))]
        for p in sub.positionals:
            if p.nargs == argparse.REMAINDER:
                continue  # monitor -- COMMAND: never run a program
            key = {p.dest.lower(), (p.metavar or "").lower()}
            one = st.sampled_from(tmp_paths) if key & PATHISH else words
            if cmd == "s3" or key & {"url"}:
                one = st.sampled_from(["s3://bench/objects/", "s3://no-such-bucket/x/"] + tmp_paths[:1])
            if p.nargs == "?" and data_draw(st.booleans()):
                continue
            n = data_draw(st.integers(1, 2)) if p.nargs in ("+", "*") else 1
            argv += [data_draw(one) for _ in range(n)]
        return argv

    return draw()


def check_safe(argv: list[str], root: str, uni: dict[str, Subcommand]) -> None:
    """Refuse (AssertionError) an argv the safe generator must never make: the guard of the guard."""
    sub = uni[argv[0]]
    assert "--" not in argv[1:], argv
    for o in sub.options:
        for s in o.strings:
            if s in argv and o.dest in NEVER:
                raise AssertionError(f"{s} in a run: {argv}")
            if s in argv and o.takes_value and argv.index(s) + 1 < len(argv):
                v = argv[argv.index(s) + 1]
                if o.dest == "ranks" and v.isdigit():
                    assert int(v) <= 2, argv
                if o.dest == "serve":
                    assert v.startswith("127.0.0.1:0") or not v[:1].isdigit(), argv
                if o.dest in ("out", "png"):
                    assert v.startswith(root), argv
                if o.dest == "endpoint_url":
                    assert v == LOCAL_ENDPOINT, argv
    if argv[0] == "s3":  # never the default endpoint (AWS's): every run names the local one
        assert "--endpoint-url" in argv, argv
