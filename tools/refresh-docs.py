#!/usr/bin/env python3
"""Re-runs every offline console example in docs/*.md and examples/README.md and rewrites its output in place.

A console example is a `$ kubectl ciliumpool ...` line inside a fenced block (any info string),
followed by its output up to the next `$ ` line or the fence. Commands reading files (-f) are
re-run with the debug binary (build it first: `cargo build`) through `sh -c`, each block in its
own scratch directory holding a copy of examples/ and a `gitops/` copy of the example's pools
(the same rules as tests/integration/docs_output.rs); others (live-cluster examples) are left as they are.
A documented `[exit N]` last line is kept and set to the real exit code. Output written with
`...` lines (elisions) is kept when the real output still matches it, else replaced whole.
tests/integration/docs_output.rs fails when an example is stale, so run this after changing output and
review the diff.
"""
import pathlib
import re
import shlex
import shutil
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "debug" / "kubectl-ciliumpool"
PROMPT = "$ kubectl ciliumpool "
EXIT = re.compile(r"^\[exit (\d+)\]$")


def pages():
    return sorted((ROOT / "docs").glob("*.md")) + [ROOT / "examples" / "README.md"]


def reads_files(command):
    return any(w in ("-f", "--filename") or w.startswith("--filename=") for w in command.split())


def scratch():
    dir = pathlib.Path(tempfile.mkdtemp(prefix="refresh-docs-"))
    shutil.copytree(ROOT / "examples", dir / "examples")
    (dir / "gitops").mkdir()
    shutil.copy(ROOT / "examples" / "snapshot" / "pools.yaml", dir / "gitops" / "pools.yaml")
    return dir


def run(dir, command):
    script = "%s --color=never %s" % (shlex.quote(str(BINARY)), command)
    proc = subprocess.run(["sh", "-c", script], cwd=dir, capture_output=True, text=True)
    lines = [line.rstrip() for line in (proc.stdout + proc.stderr).rstrip("\n").split("\n")]
    return proc.returncode, lines


def matches(documented, real):
    if not documented:
        return not real
    if documented[0] == "...":
        return any(matches(documented[1:], real[skip:]) for skip in range(len(real) + 1))
    return bool(real) and real[0] == documented[0] and matches(documented[1:], real[1:])


def refresh_block(lines):
    """Rewrites the examples of one fenced block (its lines without the fences)."""
    dir, out, i = None, [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not (line.startswith(PROMPT) and reads_files(line)):
            continue
        documented = []
        while i < len(lines) and not lines[i].startswith("$ "):
            documented.append(lines[i])
            i += 1
        exit_line = bool(documented) and EXIT.match(documented[-1])
        if exit_line:
            documented.pop()
        if dir is None:
            dir = scratch()
        code, real = run(dir, line[len(PROMPT):])
        out.extend(documented if "..." in documented and matches(documented, real) else real)
        if exit_line:
            out.append("[exit %d]" % code)
    if dir is not None:
        shutil.rmtree(dir)
    return out


def refresh(text):
    lines, out, block = text.split("\n"), [], None
    for line in lines:
        if line.startswith("```"):
            if block is None:
                block = []
                out.append(line)
            else:
                out.extend(refresh_block(block))
                out.append(line)
                block = None
        elif block is None:
            out.append(line)
        else:
            block.append(line)
    if block is not None:
        out.extend(block)
    return "\n".join(out)


def main():
    for doc in pages():
        text = doc.read_text()
        new = refresh(text)
        if new != text:
            doc.write_text(new)
            print(f"updated {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
