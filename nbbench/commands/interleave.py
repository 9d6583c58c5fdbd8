"""``nbbench vs "SETTING A" "SETTING B" … --rounds N``: settings of one probe, interleaved.

Each SETTING is a command line of the same measuring subcommand, parsed by that subcommand's
one parser (``"dd /data --direct"``, ``"dd /data --buffered"``).  Every round runs each setting
once, in the order given (A B A B …, as ``bench/`` measures pairs): a slow spell of a shared
machine then falls on every setting alike.  The runs of each setting are merged as
``--repeat`` merges them (:func:`nbbench.results.runs.merge`: medians, spread, run quality), and
each headline figure of B, C, … is compared with A's: the ratio with its 95 % interval
(:func:`nbbench.stats.ratio_interval`; one round: from the windows of each run, with that caveat).
"""

from __future__ import annotations

import copy
import shlex

from . import Command, HelpRequested, UsageProblem, parse
from .options import Opt
from .repeat import repeat_count

__all__ = ["VsCommand", "compare_settings"]

EXAMPLE = '"dd /data --direct" "dd /data --buffered"'
_REFUSED = {"json": "--json", "return_result": "-o", "label": "--label", "no_save": "--no-save"}


class VsCommand(Command):
    description = (
        "Measure two or more settings of one probe interleaved — A B A B …, --rounds N rounds — and "
        "compare them: each setting's median with its spread, and the ratio of each to the first with "
        'its 95 % interval ("no significant change" when the interval contains 1). Each SETTING is the '
        'probe\'s own command line in quotes, e.g. "dd /data --direct" "dd /data --buffered".'
    )

    arguments = (
        Opt(
            "settings",
            help="a command line of a measuring subcommand, quoted; two or more, the same subcommand",
            metavar="SETTING",
            nargs="+",
        ),
        Opt(
            "--rounds",
            repeat_count,
            5,
            "rounds: each setting runs once per round, in the order given (default 5)",
            metavar="N",
        ),
    )

    def run(self, args, ctx):
        invs = _parse_settings(args.settings, ctx)
        return compare_settings(invs, args.settings, args.rounds, ctx)


def _measuring() -> list[str]:
    """The subcommands that measure (``Command.measures``), in the registry's order."""
    from . import REGISTRY, get_command

    out = []
    for name in REGISTRY:
        try:
            if get_command(name).measures:
                out.append(name)
        except (ImportError, AttributeError):
            continue
    return out


def _parse_settings(texts: list[str], ctx) -> list:
    """Each SETTING parsed by its subcommand's parser; a usage problem names the setting."""
    prog = f"{ctx.prog} vs".strip()
    if len(texts) < 2:
        raise UsageProblem(
            f"give two or more settings to compare, each in quotes: {ctx.command_text('vs', EXAMPLE)}", prog=prog
        )
    invs = []
    for text in texts:
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise UsageProblem(f"cannot split setting {text!r}: {exc}", prog=prog) from None
        if not argv or argv[0] == "vs":
            raise UsageProblem(f'setting {text!r}: give a probe\'s command line, e.g. "dd /data --direct"', prog=prog)
        sub = copy.copy(ctx)  # parse() notes -q / --json on its context: not on this one
        try:
            inv = parse(argv, sub)
        except UsageProblem as exc:
            raise UsageProblem(f"setting {text!r}: {exc}", prog=exc.prog, usage=exc.usage) from None
        except HelpRequested:
            raise UsageProblem(
                f"setting {text!r}: for a probe's options run {ctx.command_text(argv[0], '--help')}", prog=prog
            ) from None
        if not getattr(inv.command, "measures", False):
            raise UsageProblem(
                f"setting {text!r}: {inv.name} does not measure; vs compares settings of {', '.join(_measuring())}",
                prog=prog,
            )
        if getattr(inv.args, "repeat", 1) != 1:
            raise UsageProblem(f"setting {text!r}: --repeat goes with a single probe; vs takes --rounds N", prog=prog)
        for dest, flag in _REFUSED.items():
            if getattr(inv.args, dest, None):
                raise UsageProblem(f"setting {text!r}: {flag} belongs to vs itself, not to a setting", prog=prog)
        invs.append(inv)
    names = {inv.name for inv in invs}
    if len(names) > 1:
        raise UsageProblem(
            f"the settings run different probes ({', '.join(sorted(names))}): vs compares settings of one probe",
            prog=prog,
        )
    return invs


def compare_settings(invs: list, texts: list[str], rounds: int, ctx):
    """Run ``invs`` (parsed settings of one probe) interleaved for ``rounds`` rounds; one
    :class:`~nbbench.results.interleave.InterleaveResult`."""
    from ..compare.direction import better
    from ..results import Result
    from ..results.interleave import LETTERS, InterleaveResult, ratio_text
    from ..results.quality import assess
    from ..results.runs import headline_keys, merge
    from ..stats import ratio_interval
    from .repeat import scale_of

    letters = LETTERS[: len(invs)]
    per: list[list] = [[] for _ in invs]
    stopped = None
    try:
        for r in range(rounds):
            for i, inv in enumerate(invs):
                if ctx.cancel.is_set():
                    stopped = stopped or "interrupted"
                    break
                ctx.run_of = f"round {r + 1} of {rounds}, {letters[i]}"
                value = inv.command.run(inv.args, ctx)
                if not isinstance(value, Result):
                    raise UsageProblem(
                        f"setting {texts[i]!r} gives no result to compare (several hosts?)",
                        prog=f"{ctx.prog} vs".strip(),
                    )
                per[i].append(value)
                if value.status != "ok":
                    stopped = f"{letters[i]} {value.status} in round {r + 1}" + (
                        f": {value.reason}" if value.reason else ""
                    )
                    break
            if stopped:
                break
    finally:
        ctx.run_of = ""
    merged = [merge(rs, planned=rounds) if rs else None for rs in per]
    for m, rs, inv in zip(merged, per, invs):
        if m is not None:
            assess(m, rs, scale_of(inv.command, inv.args))
    res = InterleaveResult(params={"probe": invs[0].name, "settings": list(texts), "rounds": rounds})
    base = merged[0]
    keys = headline_keys(base) if base is not None else []
    settings, ratios = [], []
    for i, (m, text) in enumerate(zip(merged, texts)):
        if m is None:
            continue
        settings.append(
            {
                "setting": letters[i],
                "command": text,
                "runs": list(m.runs or [m.metrics]),
                "metrics": {k: m.metrics.get(k) for k in keys},
                "headline": keys,
                "spread": m.extra.get("spread"),
                "labels": dict(m.labels),
                "params": dict(m.params),
                "qualifiers": dict(m.qualifiers()),
                "status": m.status,
            }
        )
        for k in keys:
            res.metrics[f"{letters[i].lower()}_{k}"] = m.metrics.get(k)
        quality = {q["text"] for q in m.extra.get("quality") or []}
        for w in m.warnings:  # the run-quality words of every setting are said together, below
            if w not in quality:
                res.warn(f"{letters[i]}: {w}")
        if i == 0:
            continue
        for k in keys:
            way = better(k, base.kind)
            ri = ratio_interval(
                [x.get(k) for x in (base.runs or [base.metrics])],
                [x.get(k) for x in (m.runs or [m.metrics])],
                higher_is_better=None if way is None else way == "higher",
                baseline_windows=per[0][-1].windows(k) if len(per[0]) == 1 else None,
                candidate_windows=per[i][-1].windows(k) if len(per[i]) == 1 else None,
            )
            rec = {"figure": k, "of": f"{letters[i]}/{letters[0]}", **ri.to_dict()}
            rec["text"] = ratio_text(rec)
            ratios.append(rec)
    _quality_once(res, [(letters[i], m) for i, m in enumerate(merged) if m is not None])
    res.samples["settings"] = settings
    res.extra["ratios"] = ratios
    res.extra["differ"] = _differences(settings)
    if per[0]:
        res.started_at = per[0][0].started_at
    if base is not None:
        res.labels = {k: v for k, v in base.labels.items() if all(s["labels"].get(k) == v for s in settings)}
    res.finish(
        "ok" if not stopped else ("interrupted" if "interrupted" in stopped else "failed"),
        None if not stopped else f"stopped: {stopped}",
    )
    return res


def _differences(settings: list[dict]) -> list[str]:
    """What differs between the settings, as their results name it (the qualifiers beside the
    answer: engine, cache…), then the parameters: 'cache: A direct, B buffered-cold'."""
    out = _differ(settings, "qualifiers")
    named = {d.split(":")[0] for d in out}
    return out + [d for d in _differ(settings, "params") if d.split(":")[0] not in named]


def _differ(settings: list[dict], field: str) -> list[str]:
    keys = []
    for s in settings:
        keys += [k for k in s[field] if k not in keys]
    out = []
    for k in keys:
        if k == "direct" and field == "params":
            continue  # said by the cache the results name
        vals = [s[field].get(k) for s in settings]
        if len({str(v) for v in vals}) > 1:
            out.append((f"{k}: " if k else "") + ", ".join(f"{s['setting']} {v}" for s, v in zip(settings, vals)))
    return out


def _quality_once(res, named) -> None:
    """The settings' run-quality findings as one sentence each: too short (every setting's short phases,
    the largest advice), unstable (each setting's spread and outlier), warm-up."""
    shorts, unstable, other = [], [], []
    for letter, m in named:
        for q in m.extra.get("quality") or []:
            if q["kind"] == "too_short" and q["text"] not in [t for _, t in shorts]:
                shorts.append((letter, q["text"]))
            elif q["kind"] == "unstable":
                unstable.append((letter, q))
            elif q["kind"] != "too_short":
                other.append(f"{letter}: {q['text']}")
    if shorts:
        phases = "; ".join(f"{letter} {t.split(': too short to trust')[0]}" for letter, t in shorts)
        advice = max((t.split("too short to trust — ", 1)[-1] for _, t in shorts), key=len)
        res.warn(f"too short to trust: {phases} — {advice}")
    if unstable:
        outliers = {q.get("outlier_run") for _, q in unstable}
        one = len(outliers) == 1 and None not in outliers  # the same run is the outlier everywhere: said once
        parts = "; ".join(
            f"{letter}'s "
            + ", ".join(f"{d:.0f} % in {k.split('_bytes')[0].split('_per_s')[0]}" for k, d in q["figures"].items())
            + (f" (run {q['outlier_run']} the outlier)" if q.get("outlier_run") and not one else "")
            for letter, q in unstable
        )
        tail = f" — run {next(iter(outliers))} is the outlier of each" if one else ""
        res.warn(f"unstable: runs differ by {parts}{tail}")
    for t in other:
        res.warn(t)
