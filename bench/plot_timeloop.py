#!/usr/bin/env python3
"""Plot of `ka-bench timeloop --json`: microseconds per step against grid size N (N x N cells),
serial C, OpenMP and libka, one panel per JSON file (one machine each).
Usage: bench/plot_timeloop.py OUT.png TITLE=FILE.json [TITLE=FILE.json ...]"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

out, runs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4.5), squeeze=False)
for ax, (title, path) in zip(axes[0], runs):
    with open(path) as f:
        r = json.load(f)
    rows = sorted(r["sizes"], key=lambda s: s["n"])
    x = [s["n"] for s in rows]
    for key, label, style in (("serial_us", "serial C", "s--"), ("openmp_us", f"OpenMP ({r['omp_threads']} threads)", "^-"),
                              ("ka_us", "libka, default queue", "o-")):
        ax.plot(x, [s[key] for s in rows], style, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(x, [str(n) for n in x])
    ax.set_xlabel("grid size N (N x N floats)")
    ax.set_ylabel("us per step (median)")
    ax.set_title(f"{title}\n{r['device']}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
fig.suptitle("Heat-equation time loop: ka-bench timeloop")
fig.tight_layout()
fig.savefig(out, dpi=110)
