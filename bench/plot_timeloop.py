#!/usr/bin/env python3
"""Plot of `ka-bench timeloop --json`: microseconds per step against grid size N (N x N or N x N x N
cells), one panel per JSON file (a machine, or --dims 2 and --dims 3 of one), every implementation
the file holds: serial C, OpenMP, libka's queues and graph, hand-written CUDA and its graph (libka
solid, its references dashed, each graph in the colour of its loop).
Usage: bench/plot_timeloop.py OUT.png TITLE=FILE.json [TITLE=FILE.json ...]
  e.g. bench/plot_timeloop.py timeloop_cuda.png 2-D=bench_timeloop_cuda.json 3-D=bench_timeloop3_cuda.json"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

# key of "<key>_us": label, line style, colour
IMPLS = (("serial", "serial C", "s:", "tab:gray"),
         ("openmp", "OpenMP ({threads} threads)", "^--", "tab:green"),
         ("ka", "libka, default queue", "o-", "tab:blue"),
         ("ka_inline", "libka, all inline", "v-", "tab:cyan"),
         ("ka_off", "libka, routing off", "x-", "tab:purple"),
         ("ka_graph", "libka, ka_graph of 2 steps", "D-", "tab:orange"),
         ("cuda", "hand-written CUDA", "o--", "tab:red"),
         ("cuda_graph", "hand-written CUDA, CUDA graph", "D--", "tab:brown"))

out, runs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4.5), squeeze=False)
for ax, (title, path) in zip(axes[0], runs):
    with open(path) as f:
        r = json.load(f)
    dims = r.get("dims", 2)
    rows = sorted(r["sizes"], key=lambda s: s["n"])
    x = [s["n"] for s in rows]
    for key, label, style, colour in IMPLS:
        if all(f"{key}_us" in s for s in rows):
            ax.plot(x, [s[f"{key}_us"] for s in rows], style, color=colour,
                    label=label.format(threads=r.get("omp_threads", "?")))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(x, [str(n) for n in x])
    ax.set_xlabel("grid size N (" + " x ".join(["N"] * dims) + " floats)")
    ax.set_ylabel("us per step (median)")
    what = f"{'7' if dims == 3 else '5'}-point stencil"
    what = what if f"{dims}-D" in title else f"{dims}-D, {what}"
    ax.set_title(f"{title}: {what}\n{r['device']}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
fig.suptitle("Heat-equation time loop: ka-bench timeloop")
fig.tight_layout()
fig.savefig(out, dpi=110)
