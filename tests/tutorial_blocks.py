#!/usr/bin/env python3
"""Compiles and runs every ```c block of docs/TUTORIAL.md against the built library.

Each ```c block must follow a line `<!-- file: NAME.c [NAME2.c ...] -->`: the blocks of one
program, in document order, make its source (a block may belong to several programs). A ```c
block without that line fails the test: every block is compiled. Each program checks its own
results and exits non-zero on a wrong one.

A program that includes <mpi.h> is an MPI program: run with --mpi, under `MPIEXEC -np 2`; the
other mode runs the others. Without MPI at configure time (--mpiexec empty) --mpi skips (77).

Usage: tutorial_blocks.py [--mpi] --lib-dir DIR --src DIR [--san SANITIZERS] [--cc CC]
                          [--mpiexec X --mpi-include 'DIR;DIR' --mpi-libs 'LIB;LIB'] [--keep DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

MARK = re.compile(r"^<!--\s*file:\s*(.+?)\s*-->\s*$")
NAME = re.compile(r"^[A-Za-z0-9_]+\.c$")


def parse(path):
    """Returns ({program: [(first line number, text)]}, [errors])."""
    programs, errors = {}, []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i, last = 0, ""
    while i < len(lines):
        line = lines[i]
        fence = line.strip()
        if fence.startswith("```"):
            lang = fence[3:].strip()
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            if j == len(lines):
                errors.append(f"{path}:{i + 1}: a code block that is never closed")
                break
            if lang == "c":
                m = MARK.match(last)
                if not m:
                    errors.append(f"{path}:{i + 1}: a ```c block with no <!-- file: NAME.c --> line before it")
                else:
                    names = m.group(1).split()
                    bad = [n for n in names if not NAME.match(n)]
                    if bad:
                        errors.append(f"{path}:{i + 1}: bad program name(s) {bad}")
                    for n in names:
                        programs.setdefault(n, []).append((start + 1, "\n".join(lines[start:j])))
            i, last = j + 1, ""
            continue
        if line.strip():
            last = line.strip()
        i += 1
    return programs, errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", action="store_true")
    ap.add_argument("--lib-dir", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--san", default="")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--mpiexec", default="")
    ap.add_argument("--mpi-include", default="")
    ap.add_argument("--mpi-libs", default="")
    ap.add_argument("--keep", default="")
    a = ap.parse_args()

    doc = os.path.join(a.src, "docs", "TUTORIAL.md")
    programs, errors = parse(doc)
    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    chosen = {n: b for n, b in programs.items() if any("#include <mpi.h>" in t for _, t in b) == a.mpi}
    kind = "MPI programs" if a.mpi else "programs"
    if not chosen:
        print(f"FAIL: no {kind} in {doc}")
        return 1
    if a.mpi and not (a.mpiexec and os.access(a.mpiexec, os.X_OK)):
        print(f"SKIP: MPI was not found when the build was configured (or mpiexec '{a.mpiexec}' is missing): "
              f"{len(chosen)} MPI program(s) of the tutorial not run")
        return 77

    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror"]
    if a.san:
        flags += [f"-fsanitize={a.san}", "-fno-omit-frame-pointer"]
    env = dict(os.environ)
    if a.mpi:
        # Loopback on any machine, as root too (CI runs as root); sanitizer runs as tests/mpi_heat.sh.
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mca_base_component_disable_dlclose="1")
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""), "fast_unwind_on_malloc=0"]))

    with tempfile.TemporaryDirectory() as tmp:
        out = a.keep or tmp
        os.makedirs(out, exist_ok=True)
        for name, blocks in chosen.items():
            src = os.path.join(out, name)
            with open(src, "w", encoding="utf-8") as f:
                for line, text in blocks:
                    # Compiler messages name the tutorial's own lines.
                    f.write(f'#line {line} "docs/TUTORIAL.md"\n{text}\n')
            exe = os.path.join(out, name[:-2])
            cmd = [a.cc, *flags, "-I", os.path.join(a.src, "include"), "-o", exe, src]
            if a.mpi:
                cmd += [f"-I{d}" for d in a.mpi_include.split(";") if d]
            cmd += ["-L", a.lib_dir, "-lka", f"-Wl,-rpath,{a.lib_dir}"]
            if a.mpi:
                cmd += [lib for lib in a.mpi_libs.split(";") if lib]
            cmd += ["-lm"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                print(r.stdout + r.stderr)
                print(f"FAIL: {name} ({len(blocks)} blocks) does not compile: {' '.join(cmd)}")
                return 1
            run = [a.mpiexec, "--oversubscribe", "-np", "2", exe] if a.mpi else [exe]
            try:
                r = subprocess.run(run, capture_output=True, text=True, env=env, timeout=600)
            except subprocess.TimeoutExpired as e:
                print((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout or "")
                print(f"FAIL: {name} ran past 600 s")
                return 1
            print(f"--- {' '.join(run[:-1] + [name[:-2]])}\n{r.stdout}{r.stderr}", end="")
            if r.returncode:
                print(f"FAIL: {name} exited with status {r.returncode}")
                return 1
        print(f"PASS: {len(chosen)} {kind} of docs/TUTORIAL.md compiled, ran and checked their results "
              f"({', '.join(chosen)}); every ```c block belongs to a program")
    return 0


if __name__ == "__main__":
    sys.exit(main())
