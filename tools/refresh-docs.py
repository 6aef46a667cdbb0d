#!/usr/bin/env python3
"""Re-runs every offline example in docs/*.md and rewrites its output in place.

A ```console block holds commands (`$ kubectl ciliumpool ...`) each followed by its output.
Commands reading files (-f) are re-run with the debug binary (build it first: `cargo build`);
others (live-cluster examples) are left as they are. tests/docs_output.rs fails when a block
is stale, so run this after changing output and review the diff.
"""
import pathlib
import re
import shlex
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "debug" / "kubectl-ciliumpool"
PROMPT = "$ kubectl ciliumpool "


def run(args):
    proc = subprocess.run([str(BINARY), *args, "--color=never"], cwd=ROOT, capture_output=True, text=True)
    return "\n".join(line.rstrip() for line in (proc.stdout + proc.stderr).rstrip("\n").split("\n"))


def refresh_block(block):
    out, command = [], None
    for line in block.split("\n"):
        if line.startswith(PROMPT):
            command = shlex.split(line[len(PROMPT):])
            out.append(line)
            if "-f" in command:
                out.append(run(command))
        elif command is None or "-f" not in command:
            out.append(line)
    return "\n".join(out)


def main():
    for doc in sorted((ROOT / "docs").glob("*.md")):
        text = doc.read_text()
        new = re.sub(r"(```console\n)(.*?)(\n```)", lambda m: m.group(1) + refresh_block(m.group(2)) + m.group(3), text, flags=re.S)
        if new != text:
            doc.write_text(new)
            print(f"updated {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
