"""Exposure: Jupyter servers without authentication or bound beyond loopback; sshd_config."""

from __future__ import annotations

import glob
import ipaddress
import os
import posixpath
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .base import Check, Unreadable, na, read_text, under

__all__ = [
    "check_jupyter",
    "assess_server",
    "check_sshd",
    "parse_sshd_config",
    "SshdSetting",
    "is_loopback",
    "listening_on_port",
]


def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    h = host.strip("[]").strip()
    if h in ("localhost", "ip6-localhost", "ip6-loopback"):
        return True
    if h in ("", "*", "0.0.0.0", "::"):
        return False
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False  # a host name: it resolves to some interface's address


def _listening(pid: int) -> list[str] | None:
    """Addresses the process listens on (psutil), None when they cannot be read."""
    try:
        import psutil

        p = psutil.Process(pid)
        conns = p.net_connections(kind="inet") if hasattr(p, "net_connections") else p.connections(kind="inet")
        return sorted({c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN})
    except Exception:  # noqa: BLE001 - another user's process, psutil missing
        return None


def _hex_addr(h: str) -> str:
    """/proc/net/tcp{,6} address (little-endian 32-bit words) -> text."""
    import socket
    import struct

    raw = bytes.fromhex(h)
    words = b"".join(struct.pack("<I", struct.unpack(">I", raw[i : i + 4])[0]) for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, words)


def listening_on_port(port: int, root: str = "/") -> list[str] | None:
    """Addresses listening on TCP ``port`` per /proc/net/tcp and tcp6 (readable by every user)."""
    found, read_any = set(), False
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            text = read_text(root, name)
        except Unreadable:
            continue
        read_any = True
        for line in text.splitlines()[1:]:
            parts = line.split()
            if len(parts) < 4 or parts[3] != "0A":  # 0A = LISTEN
                continue
            addr, _, p = parts[1].partition(":")
            try:
                if int(p, 16) == int(port):
                    found.add(_hex_addr(addr))
            except ValueError:
                continue
    return sorted(found) if read_any and found else None


def assess_server(info: dict[str, Any], listening: list[str] | None = None) -> Check:
    """One running server's info (a jpserver-*.json) -> a Check."""
    url = info.get("url") or f"http://{info.get('hostname')}:{info.get('port')}/"
    src = info.get("_file", "the server's runtime file")
    token = info.get("token") or ""
    password = bool(info.get("password"))
    sock = info.get("sock") or ""
    host = info.get("hostname")
    data = {
        "url": url,
        "pid": info.get("pid"),
        "hostname": host,
        "port": info.get("port"),
        "token": bool(token),
        "password": password,
        "sock": sock,
        "listening": listening,
    }
    name, group = f"jupyter server :{info.get('port')}" if not sock else f"jupyter server {sock}", "exposure"
    auth = "token" if token else ("password" if password else "no token and no password")
    if sock:
        ev = f"{url} on the unix socket {sock}, {auth} ({src})"
        return Check(name, "ok", ev, "", group, data)
    if listening:
        wide = [a for a in listening if not is_loopback(a)]
        bound = ", ".join(listening) + " (its listening sockets)"
    else:
        wide = [] if is_loopback(host) else [host or "all interfaces"]
        bound = f"{host} ({src})"
    ev = f"{url} pid {info.get('pid')}, listening on {bound}, {auth}"
    if not token and not password:
        where = (
            "anyone who can reach it"
            if wide
            else "any local user or process (and anything that can reach this port through a tunnel or port mapping)"
        )
        fix = (
            "restart it with a token or a password (jupyter server password), not with an empty "
            "--IdentityProvider.token= / --ServerApp.token=, and bind it to 127.0.0.1 "
            "(--ServerApp.ip=127.0.0.1) behind an SSH tunnel"
        )
        return Check(name, "fail", ev + f": {where} can run code as this user", fix, group, data)
    if wide:
        why = f": reachable beyond loopback ({', '.join(wide)}) — the token is the only guard and travels in URLs"
        fix = (
            "bind to 127.0.0.1 (--ServerApp.ip=127.0.0.1) and reach it through ssh -L 8888:127.0.0.1:8888, "
            "or put it behind TLS and a login (JupyterHub)"
        )
        return Check(name, "warn", ev + why + ("" if info.get("secure") else ", over plain http"), fix, group, data)
    return Check(name, "ok", ev, "", group, data)


def check_jupyter(runtime_dir: str | None = None, servers: Iterable[dict] | None = None) -> list[Check]:
    """Running Jupyter servers (``jupyter_server``'s own list) and their exposure."""
    name, group = "jupyter servers", "exposure"
    if servers is None:
        try:
            from jupyter_core.paths import jupyter_runtime_dir
            from jupyter_server.serverapp import list_running_servers
        except ImportError:
            return [na(name, "jupyter_server is not installed here, so there are no servers to list", group)]
        runtime_dir = runtime_dir or jupyter_runtime_dir()
        try:
            servers = []
            for info in list_running_servers(runtime_dir):
                info = dict(info)
                info.setdefault("_file", os.path.join(runtime_dir, f"jpserver-{info.get('pid')}.json"))
                servers.append(info)
        except OSError as exc:
            return [na(name, f"cannot read the runtime directory {runtime_dir}: {exc}", group)]
    servers = list(servers)
    if not servers:
        where = runtime_dir or "the Jupyter runtime directory"
        found = f"no running Jupyter server found in {where} (jupyter_server.serverapp.list_running_servers)"
        return [Check(name, "ok", found, "", group, {"runtime_dir": runtime_dir})]
    out = []
    for info in servers:
        pid = info.get("pid")
        listening = _listening(int(pid)) if pid else None
        if not listening and info.get("port") and not info.get("sock"):
            listening = listening_on_port(int(info["port"]))
        out.append(assess_server(info, listening))
    return out


# ------------------------------------------------------------------------ sshd
@dataclass
class SshdSetting:
    value: str
    file: str
    line: int
    match: str | None = None  # the Match block it sits in, None when global

    def where(self) -> str:
        s = f"{self.file}:{self.line}"
        if self.match:
            s += f", inside 'Match {self.match}'"
        return s


@dataclass
class SshdConfig:
    settings: dict[str, SshdSetting] = field(default_factory=dict)  # global, first match wins
    conditional: dict[str, list[SshdSetting]] = field(default_factory=dict)  # inside Match blocks
    files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def parse_sshd_config(root: str = "/", path: str = "/etc/ssh/sshd_config") -> SshdConfig:
    """sshd_config with its Includes (in place, globbed, sorted), first value wins (sshd_config(5))."""
    cfg = SshdConfig()
    state = {"match": None}

    def visit(p: str, depth: int) -> None:
        if depth > 16:
            cfg.problems.append(f"Include nesting deeper than 16 at {p}")
            return
        text = read_text(root, p)  # Unreadable propagates for the main file
        cfg.files.append(p)
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                words = line.split()
            if not words:
                continue
            key = words[0]
            if "=" in key:  # Key=value
                key, _, first = key.partition("=")
                words = [key] + ([first] if first else []) + words[1:]
            key_l = key.lower()
            args = words[1:]
            if key_l == "match":
                m = " ".join(args)
                state["match"] = None if m.lower() == "all" else m
                continue
            if key_l == "include":
                for pattern in args:
                    if not pattern.startswith("/"):
                        pattern = posixpath.join("/etc/ssh", pattern)
                    hits = sorted(glob.glob(str(under(root, pattern))))
                    for h in hits:
                        rel = "/" + os.path.relpath(h, str(root)) if str(root) != "/" else h
                        try:
                            visit(rel, depth + 1)
                        except Unreadable as exc:
                            cfg.problems.append(str(exc))
                continue
            value = " ".join(args)
            s = SshdSetting(value=value, file=p, line=n, match=state["match"])
            if state["match"] is None:
                cfg.settings.setdefault(key_l, s)
            else:
                cfg.conditional.setdefault(key_l, []).append(s)

    visit(path, 0)
    return cfg


def check_sshd(root: str = "/") -> list[Check]:
    group = "exposure"
    try:
        cfg = parse_sshd_config(root)
    except Unreadable as exc:
        return [
            na("ssh password login", f"{exc}: no SSH server configured here", group),
            na("ssh root login", f"{exc}: no SSH server configured here", group),
        ]
    files = ", ".join(cfg.files)
    out = []

    def get(key: str, default: str) -> tuple[str, str]:
        s = cfg.settings.get(key)
        if s is None:
            return default, f"not set in {files}: sshd's default"
        return s.value.lower(), s.where()

    def first_file_hint(key: str) -> str:
        s = cfg.settings.get(key)
        if s is not None and s.file != "/etc/ssh/sshd_config":
            return f" — the first value wins, so change it in {s.file} (or a file sorted before it)"
        return ""

    pa, pa_where = get("passwordauthentication", "yes")
    kbd, kbd_where = get("kbdinteractiveauthentication", get("challengeresponseauthentication", "yes")[0])
    pam, _ = get("usepam", "no")
    data = {"PasswordAuthentication": pa, "KbdInteractiveAuthentication": kbd, "UsePAM": pam, "files": cfg.files}
    fix = (
        "set PasswordAuthentication no (and KbdInteractiveAuthentication no) and reload sshd: key-only login"
        + first_file_hint("passwordauthentication")
    )
    cond = [c for c in cfg.conditional.get("passwordauthentication", []) if c.value.lower() == "yes"]
    name = "ssh password login"
    if pa == "yes":
        out.append(Check(name, "fail", f"PasswordAuthentication yes ({pa_where})", fix, group, data))
    elif kbd == "yes" and pam == "yes":
        why = f"but KbdInteractiveAuthentication yes ({kbd_where}) with UsePAM yes still asks for passwords"
        out.append(Check(name, "warn", f"PasswordAuthentication {pa} ({pa_where}), {why}", fix, group, data))
    elif cond:
        why = "but yes for some users: " + "; ".join(c.where() for c in cond)
        out.append(Check(name, "warn", f"PasswordAuthentication {pa} ({pa_where}), {why}", fix, group, data))
    else:
        out.append(Check(name, "ok", f"PasswordAuthentication {pa} ({pa_where})", "", group, data))

    pr, pr_where = get("permitrootlogin", "prohibit-password")
    data = {"PermitRootLogin": pr, "files": cfg.files}
    fix = "set PermitRootLogin prohibit-password (keys only) or no, and reload sshd" + first_file_hint(
        "permitrootlogin"
    )
    condr = [c for c in cfg.conditional.get("permitrootlogin", []) if c.value.lower() == "yes"]
    name = "ssh root login"
    if pr == "yes":
        out.append(
            Check(name, "fail", f"PermitRootLogin yes ({pr_where}): root may log in with a password", fix, group, data)
        )
    elif condr:
        why = "but yes for " + "; ".join(c.where() for c in condr)
        out.append(Check(name, "warn", f"PermitRootLogin {pr} ({pr_where}), {why}", fix, group, data))
    else:
        out.append(Check(name, "ok", f"PermitRootLogin {pr} ({pr_where})", "", group, data))
    for p in cfg.problems:
        out[0].evidence += f" (note: {p})"
    return out
