#!/usr/bin/env python3
"""Writes the hostile inputs of issues 28 and 40 into DIR (tools/bench.sh --bombs measures them).

Each is generated as it is written (a member of gigabytes is a stream of small writes, compressed
fast), so nothing large is held; they are never committed. Usage: tools/bombs.py DIR
"""
import io
import os
import sys
import tarfile
import zipfile

MiB = 1 << 20
POOL = b"apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata:\n  name: blue\nspec:\n  ipv4:\n    cidrs: [10.40.0.0/16]\n    maskSize: 24\n"


class Repeated(io.RawIOBase):
    """`unit` repeated to `size` bytes, as a readable stream."""

    def __init__(self, unit, size):
        self.chunk = unit * (MiB // len(unit))
        self.left = size

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(len(buffer), self.left, len(self.chunk))
        buffer[:n] = self.chunk[:n]
        self.left -= n
        return n


def write(path, *parts):
    with open(path, "wb") as out:
        for unit, size in parts:
            stream = Repeated(unit, size)
            while chunk := stream.read(MiB):
                out.write(chunk)


def tar_gz(path, members):
    """A .tar.gz of (name, unit, size) members, compressed at level 1 (the input is repetitive)."""
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, unit, size in members:
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BufferedReader(Repeated(unit, size), MiB))


def zip_of(path, name, unit, size):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1, allowZip64=True) as archive:
        with archive.open(name, "w", force_zip64=True) as member:
            stream = Repeated(unit, size)
            while chunk := stream.read(MiB):
                member.write(chunk)


def laughs(path):
    text = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for name, previous in zip("bcdefghi", "abcdefgh"):
        text += f"{name}: &{name} [{', '.join(['*' + previous] * 9)}]\n"
    with open(path, "w") as out:
        out.write(text)


def main():
    # One argument, a directory: `--help` (or any flag) is not a place to write 1.3 GB into.
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__.strip(), file=sys.stdout if sys.argv[1:] in (["-h"], ["--help"]) else sys.stderr)
        sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    at = lambda name: os.path.join(out, name)
    write(at("comments-1000m.yaml"), (b"#\n", 1000 * MiB))
    tar_gz(at("five-900m.tar.gz"), [(f"m{i}.yaml", b"#\n", 900 * MiB) for i in range(5)] + [("pool.yaml", POOL, len(POOL))])
    tar_gz(at("member-3g.tar.gz"), [("big.yaml", b"#\n", 3 << 30)])
    zip_of(at("member-3g.zip"), "big.yaml", b"#\n", 3 << 30)
    laughs(at("laughs.yaml"))
    write(at("line-200m.yaml"), (POOL, len(POOL)), (b"---\na: ", 7), (b"x", 200 * MiB))
    write(at("sequence-100m.yaml"), (POOL, len(POOL)), (b"---\n", 4), (b"- 1\n", 100 * MiB))
    # Issue 40: documents the snapshot only counts, a gigabyte of markers, a pool field nobody reads.
    empty = b"--- {}\n"
    write(at("empty-10m.yaml"), (POOL, len(POOL)), (empty, 10 * MiB // len(empty) * len(empty)))
    write(at("empty-100m.yaml"), (POOL, len(POOL)), (empty, 100 * MiB // len(empty) * len(empty)))
    write(at("markers-1023m.yaml"), (POOL, len(POOL)), (b"---\n", 1023 * MiB))
    head = b'{"apiVersion":"cilium.io/v2","kind":"CiliumPodIPPool","metadata":{"name":"blue","managedFields":[0'
    tail = b']},"spec":{"ipv4":{"cidrs":["10.40.0.0/16"],"maskSize":24}}}'
    write(at("pool-5m-entries.json"), (head, len(head)), (b",0", 10_000_000), (tail, len(tail)))


if __name__ == "__main__":
    main()
