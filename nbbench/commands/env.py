"""``%iobench env`` / ``nbbench env``: the environment fingerprint and exact-version exports."""

from __future__ import annotations

import sys

from ..results import ProbeError
from ..results.system.env import EnvResult
from . import Command
from .options import Opt


class EnvCommand(Command):
    help = "environment fingerprint; export exact package versions"
    description = (
        "The fingerprint stored with every result: host, OS, container, CPUs and memory "
        "(with cgroup limits), Python, every installed package, torch/CUDA/cuDNN, GPUs. "
        "--export writes an exact package list a colleague can install from."
    )
    saves = False

    arguments = (
        Opt(
            "--export",
            ["requirements", "conda"],
            help="write exact package versions: requirements (name==version) or conda (explicit list)",
        ),
        Opt("--out", help="file to write the export to (default: print it)", metavar="FILE"),
    )

    def run(self, args, ctx):
        from .. import env, envexport

        if args.export:
            try:
                if args.export == "requirements":
                    text = envexport.export_requirements(args.out)
                else:
                    text = envexport.export_conda(args.out)
            except envexport.ExportError as exc:
                raise ProbeError(str(exc)) from None
            except OSError as exc:
                raise ProbeError(f"cannot write {args.out}: {exc.strerror}") from None
            return {
                "export": args.export,
                "out": args.out,
                "text": text,
                "packages": sum(1 for ln in text.splitlines() if ln and not ln.startswith(("#", "@"))),
            }
        fp = env.fingerprint()
        res = EnvResult(env_id=fp["id"], extra={"fingerprint": fp})
        res.metrics["packages_count"] = len(fp["packages"])
        res.metrics["cpus_usable_count"] = fp["cpus"]["usable"]
        if fp["memory"]["total_bytes"]:
            res.metrics["memory_total_bytes"] = fp["memory"]["total_bytes"]
        if fp["memory"]["cgroup_limit_bytes"]:
            res.metrics["memory_cgroup_limit_bytes"] = fp["memory"]["cgroup_limit_bytes"]
        res.advise("{command} writes them as name==version", "env", "--export requirements --out FILE")
        return res.finish()

    def show(self, value, args, ctx):
        if isinstance(value, dict) and "export" in value:
            if value["out"]:
                ctx.echo(f"wrote {value['packages']} exact package versions to {value['out']}")
            else:
                sys.stdout.write(value["text"])
            return
        ctx.display(value)
