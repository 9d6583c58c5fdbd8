"""``%iobench doctor [PATH]`` / ``nbbench doctor [PATH]``."""

from __future__ import annotations

from . import Command
from .options import Opt, choice_list, positive_int

_CHECKS = ("shm", "nofile", "mount", "block", "vm", "cpu", "memory", "limits", "gpu", "jupyter", "ssh")


class DoctorCommand(Command):
    help = "audit the environment: /dev/shm, limits, mounts, exposure"
    description = (
        "Audit the settings behind fast numbers and what is exposed: /dev/shm for DataLoader "
        "workers, the open-file limit, PATH's mount (filesystem, atime options, O_DIRECT) and its "
        "block device (read-ahead, scheduler, rotational, queue depth), vm.dirty ratios and swap, "
        "usable CPUs and the memory limit, the container's limits (CPU quota, cpuset, pids, /dev/shm) and "
        "the stalls measured so far (quota throttling, pressure stall information), the GPU stack, "
        "running Jupyter servers without a token "
        "or bound beyond loopback, and sshd allowing passwords or root. Each finding has a status "
        "(ok / warn / fail / n/a), the evidence and the fix."
    )
    epilog = "Example: %iobench doctor /dataset   ·   nbbench doctor /dataset --json"

    arguments = (
        Opt(
            "path",
            help="the directory to check storage for (default: the current directory)",
            metavar="PATH",
            nargs="?",
            default=None,
        ),
        Opt(
            "--checks",
            choice_list(_CHECKS),
            None,
            f"only these checks, comma-separated ({','.join(_CHECKS)})",
            metavar="LIST",
        ),
        Opt("--skip", choice_list(_CHECKS), None, "leave these checks out, e.g. --skip gpu", metavar="LIST"),
        Opt(
            "--workers",
            positive_int,
            None,
            "DataLoader workers /dev/shm must serve (default: min(8, usable CPUs))",
            metavar="N",
        ),
    )

    def run(self, args, ctx):
        from ..doctor import CHECKS, doctor

        checks = list(args.checks or CHECKS)
        if args.skip:
            checks = [c for c in checks if c not in args.skip]
        p = ctx.progress("doctor")
        try:
            res = doctor(args.path, checks=checks, workers=args.workers, progress=p)
        except BaseException:
            p.close("failed")
            raise
        p.close("ok")
        return res
