"""py-spy's raw output once it is written: cut to whole lines when py-spy was
cut off, gzipped in place with the process chains' command lines redacted."""

from __future__ import annotations

import os
import re
from pathlib import Path

from writerprof.probes.writerprof_probe.redact import redact_joined
from writerprof.run import ownfile


def keep_whole_lines(file: Path) -> None:
    """Cut a raw file back to its last whole line (py-spy cut off while writing)."""
    try:
        with open(file, "r+b") as f:
            data = f.read()
            f.truncate(data.rfind(b"\n") + 1)
        if file.stat().st_size == 0:
            file.unlink()
    except OSError:
        pass


def compress(file: Path, chain: bytes = b"") -> str:
    """gzip py-spy's file in place (its process chains repeat long command
    lines on every line: 20 to 30 times smaller), the command lines redacted
    (redact_joined: argv joined with spaces); the name it now has. chain: the
    process chain (`process PID:"CMDLINE";` frames, see process_chain) to put at the root of
    every line, for the file of a py-spy that followed one process (it writes
    none of its own: no --subprocesses)."""
    import gzip  # (only with py-spy: a default record's process goes without it)

    target = file.with_name(file.name + ".gz")
    redacted: dict[bytes, bytes] = {}
    temporary = None
    try:
        temporary, fd = ownfile.temporary_beside(target)
        with open(file, "rb") as raw, open(fd, "wb") as out, gzip.GzipFile(fileobj=out, mode="wb",
                                                                           compresslevel=6) as packed:
            packed.writelines(_redact_chain(_rooted(chain, line), redacted) for line in raw)
        os.replace(temporary, target)
        file.unlink()
    except OSError:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        return file.name
    return target.name


def _rooted(chain: bytes, line: bytes) -> bytes:
    if not chain:
        return line
    # A sample with no Python frame (" COUNT"): the chain alone, as py-spy writes it.
    return chain[:-1] + line if line.startswith(b" ") else chain + line


def process_chain(processes: list[tuple[int, str]]) -> bytes:
    """The root frames py-spy --subprocesses writes for a stack of the last of
    processes [(pid, command line)], CMD first: `process PID:"CMDLINE";` each.
    A newline or a double quote in a command line (`python -c` code, a PEM
    key) would end the line or the frame early, and leave the rest unredacted
    and unreadable: written as \\n and '."""
    return b"".join(f'process {pid}:"{_one_line(cmdline)}";'.encode("utf-8", "surrogateescape")
                    for pid, cmdline in processes)


def _one_line(cmdline: str) -> str:
    return cmdline.replace("\n", "\\n").replace('"', "'")


_CHAIN_FRAME = re.compile(rb'process \d+:"')


def _redact_chain(line: bytes, seen: dict[bytes, bytes]) -> bytes:
    """A raw line with each process frame's command line redacted (py-spy
    joins argv with spaces: a credential with spaces in it is redacted whole;
    `seen` caches them: every line repeats them)."""
    out, at = [], 0
    for match in _CHAIN_FRAME.finditer(line):
        if match.start() < at:
            continue
        end = line.find(b'";', match.end())
        end = end if end >= 0 else line.rfind(b'"')
        if end < match.end():
            break
        cmdline = line[match.end():end]
        if cmdline not in seen:
            text = cmdline.decode("utf-8", "surrogateescape")
            seen[cmdline] = redact_joined(text).encode("utf-8", "surrogateescape")
        out += [line[at:match.end()], seen[cmdline]]
        at = end
    return b"".join(out + [line[at:]]) if out else line
