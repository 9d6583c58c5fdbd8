"""Walk a tar stream's headers in the bytes already read: members and WebDataset samples.

:class:`TarWalker` is fed the chunks a reader reads, in order, of any size (a header
split between two reads is put together), and never reads anything itself: member
data it does not keep is skipped by arithmetic.  It understands ustar / GNU / pax
headers (the ustar name prefix, GNU long names ``L``, pax ``path`` and ``size``
records), ends at the first all-zero block, and stops with :attr:`TarWalker.error`
set on a block that is not a tar header: its checksum is verified on the first header
and on any without the ``ustar`` magic; past the first, a header with the magic at its
place is taken as one (summing 512 bytes per member would cost a third of a core at
1 GB/s of shards).

Samples are counted as WebDataset groups them (``group_by_keys``): a member
``dir/000123.jpg`` has the key ``dir/000123`` (up to the first dot of the base name)
and the suffix ``jpg``; consecutive members with the same key are one sample, and a new
sample starts when the key changes or a suffix repeats.  Members whose name has no dot
are not part of a sample.  With ``collect=True`` the members' data are kept and each
finished sample is handed back as ``(key, {suffix: bytes})`` (the streaming dataset of
:mod:`nbbench.probes.shards.tarshards` reads shards this way).
"""

from __future__ import annotations

import os
import re

from ..storage.files import _open_noatime

__all__ = ["TarWalker", "split_key", "count_samples"]

_BLOCK = 512
_ZERO = bytes(_BLOCK)
_KEY = re.compile(r"^((?:.*/|)[^./]+)[.]([^/]*)$")
_REGULAR = (b"0", b"\0", b"7")


def split_key(name: str) -> tuple[str, str] | None:
    """``"a/000123.seg.png"`` -> ``("a/000123", "seg.png")`` (WebDataset's rule); None without a dot."""
    m = _KEY.match(name)
    return (m.group(1), m.group(2).lower()) if m else None


def _octal(field: bytes) -> int:
    if field and field[0] & 0x80:  # GNU base-256 for large values
        v = field[0] & 0x3F
        for b in field[1:]:
            v = (v << 8) | b
        return v
    text = field.split(b"\0", 1)[0].strip(b" ")
    return int(text, 8) if text else 0


def _pax(data: bytes) -> dict[str, str]:
    out, i = {}, 0
    while i < len(data):
        sp = data.find(b" ", i)
        if sp < 0:
            break
        try:
            n = int(data[i:sp])
        except ValueError:
            break
        rec = data[sp + 1 : i + n - 1]
        k, _, v = rec.partition(b"=")
        out[k.decode("utf-8", "surrogateescape")] = v.decode("utf-8", "surrogateescape")
        i += n if n > 0 else len(data)
    return out


class TarWalker:
    """Headers, members and samples of a tar stream fed in chunks (see the module doc)."""

    def __init__(self, collect: bool = False):
        self.collect = collect
        self.members = 0  # regular-file members
        self.samples = 0  # WebDataset samples begun
        self.ended = False  # the end-of-archive block was seen
        self.error: str | None = None
        self.offset = 0  # stream bytes fed so far
        self._checked = False  # a header's checksum was verified
        self._hdr = bytearray()
        self._skip = 0  # bytes to pass over (data not kept, padding)
        self._take = 0  # bytes to keep (a member's data, a long name, a pax record)
        self._buf = bytearray()
        self._taking: tuple | None = None  # ("member", name) | ("longname",) | ("pax",)
        self._pad = 0
        self._next_name: str | None = None
        self._next_size: int | None = None
        self._key: str | None = None
        self._suffixes: set[str] = set()
        self._sample: dict[str, bytes] = {}
        self._done: list[tuple[str, dict]] = []

    # ------------------------------------------------------------ feeding
    def feed(self, chunk) -> list[tuple[str, dict]]:
        """Walk ``chunk`` (the next bytes of the stream); with ``collect``, the samples finished in it."""
        mv = memoryview(chunk)
        n, i = len(mv), 0
        self.offset += n
        while i < n and not self.ended:
            if self._skip:
                k = min(self._skip, n - i)
                i += k
                self._skip -= k
                continue
            if self._take:
                k = min(self._take, n - i)
                self._buf += mv[i : i + k]
                i += k
                self._take -= k
                if not self._take:
                    self._taken()
                continue
            if not self._hdr and n - i >= _BLOCK:  # the whole header in this chunk: no gathering
                i += _BLOCK
                self._header(bytes(mv[i - _BLOCK : i]), self.offset - n + i - _BLOCK)
                continue
            k = min(_BLOCK - len(self._hdr), n - i)
            self._hdr += mv[i : i + k]
            i += k
            if len(self._hdr) == _BLOCK:
                h = bytes(self._hdr)
                self._hdr.clear()
                self._header(h, self.offset - n + i - _BLOCK)
        if not self.collect:
            return []
        out, self._done = self._done, []
        return out

    def finish(self) -> list[tuple[str, dict]]:
        """The stream has ended: the last sample (with ``collect``)."""
        if self.collect and self._sample:
            self._done.append((self._key, self._sample))
            self._sample = {}
        out, self._done = self._done, []
        return out

    # ------------------------------------------------------------ headers
    def _header(self, h: bytes, at: int) -> None:
        if h == _ZERO:
            self.ended = True
            return
        try:
            size = _octal(h[124:136])
            # the checksum (a sum over 512 bytes) is checked on the first header and wherever the
            # ustar magic is missing; after that, the magic at 257 says a header is where one should be
            ok = (h[257:262] == b"ustar" and self._checked) or _octal(h[148:156]) == sum(h[:148]) + 256 + sum(h[156:])
        except ValueError:
            ok = False
        if not ok:
            self.error = f"not a tar header at offset {at} (checksum)"
            self.ended = True
            return
        self._checked = True
        name = h[:100].split(b"\0", 1)[0]
        if h[257:262] == b"ustar":
            prefix = h[345:500].split(b"\0", 1)[0]
            if prefix:
                name = prefix + b"/" + name
        kind = h[156:157]
        pad = -size % _BLOCK
        if kind == b"L":
            self._start(("longname",), size, pad)
            return
        if kind == b"x":
            self._start(("pax",), size, pad)
            return
        text = self._next_name if self._next_name is not None else name.decode("utf-8", "surrogateescape")
        if self._next_size is not None:
            size, pad = self._next_size, -self._next_size % _BLOCK
        self._next_name = self._next_size = None
        if kind not in _REGULAR:
            self._skip = size + pad
            return
        self.members += 1
        kept = self._member(text)
        if kept:
            self._start(("member", kept), size, pad)
        else:
            self._skip = size + pad

    def _start(self, what: tuple, size: int, pad: int) -> None:
        self._taking, self._pad = what, pad
        self._buf = bytearray()
        self._take = size
        if not size:
            self._taken()

    def _taken(self) -> None:
        what, data = self._taking, bytes(self._buf)
        self._buf = bytearray()
        self._skip = self._pad
        if what[0] == "longname":
            self._next_name = data.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        elif what[0] == "pax":
            rec = _pax(data)
            if "path" in rec:
                self._next_name = rec["path"]
            if rec.get("size", "").isdigit():
                self._next_size = int(rec["size"])
        else:
            self._sample[what[1]] = data

    def _member(self, name: str) -> str | None:
        """Count the member into a sample; the suffix to keep its data under (with ``collect``), else None."""
        ks = split_key(name)
        if ks is None:
            return None
        key, suffix = ks
        if key != self._key or suffix in self._suffixes:
            if self.collect and self._sample:
                self._done.append((self._key, self._sample))
            self._sample = {}
            self.samples += 1
            self._key, self._suffixes = key, {suffix}
        else:
            self._suffixes.add(suffix)
        return suffix if self.collect else None


def count_samples(path: str) -> tuple[int, int]:
    """(members, samples) of the tar file at ``path``, reading its headers only (read-only; member
    data are jumped over, not read)."""
    w = TarWalker()
    fd = _open_noatime(path)
    try:
        off = 0
        while not w.ended:
            if w._skip:
                off += w._skip
                w.offset += w._skip
                w._skip = 0
                continue
            chunk = os.pread(fd, w._take or (_BLOCK - len(w._hdr)), off)
            if not chunk:
                break
            w.feed(chunk)
            off += len(chunk)
    finally:
        os.close(fd)
    return w.members, w.samples
