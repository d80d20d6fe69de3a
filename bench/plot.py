#!/usr/bin/env python3
"""Plots from the benchmarks' JSON (written by bench/run.sh):
  launch_args.png: ns per launch against argument count, raw OpenCL and libka, each path
  route.png:       launch + wait against work size on PoCL's basic and threaded devices and libka's routed queue
  graph.png:       ns per kernel of a step of small launches: ka_launch, a recorded graph, the raw driver,
                   one group of bars per device (DIR/graph.json and any `ka-bench graph --json` files given)
Usage: bench/plot.py DIR [GRAPH_JSON...]   (reads DIR/launch.json and DIR/route.json, writes the PNGs into DIR)"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

d = sys.argv[1] if len(sys.argv) > 1 else "docs/bench"

with open(f"{d}/launch.json") as f:
    launch = json.load(f)
fig, ax = plt.subplots(figsize=(7, 4.5))
for path, style in (("routed", "o"), ("threaded", "s"), ("direct", "o")):
    rows = sorted((r for r in launch["results"] if r["path"] == path), key=lambda r: r["args"])
    if not rows:
        continue
    x = [r["args"] for r in rows]
    ax.plot(x, [r["raw_ns_per_launch"] for r in rows], style + "--", label=f"raw OpenCL ({path} path's device)")
    ax.plot(x, [r["ka_ns_per_launch"] for r in rows], style + "-", label=f"libka ({path})")
ax.set_xlabel("kernel arguments")
ax.set_ylabel("ns per launch (median)")
ax.set_title(f"Launch cost on {launch['device']}")
ax.grid(True, alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(f"{d}/launch_args.png", dpi=110)

with open(f"{d}/route.json") as f:
    route = json.load(f)
fig, ax = plt.subplots(figsize=(7, 4.5))
x = route["sizes"]
ax.loglog(x, [v / 1000 for v in route["basic_ns"]], "o--", label="raw, PoCL basic (calling thread)")
ax.loglog(x, [v / 1000 for v in route["pthread_ns"]], "s--", label="raw, PoCL pthread (worker threads)")
ax.loglog(x, [v / 1000 for v in route["routed_ns"]], "^-", label="libka routed queue")
lim = route.get("inline_max_items", 0)
if lim:
    ax.axvline(lim, color="gray", alpha=0.5, linestyle=":", label=f"routing limit ({lim} items)")
ax.set_xlabel("work-items (saxpy)")
ax.set_ylabel("launch + wait, us (median)")
ax.set_title(f"PoCL routing on {route['device']}")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(f"{d}/route.png", dpi=110)

# graph.png: bars with min-max whiskers, one group per device (the same device twice: the first file's).
graphs, seen = [], set()
for path in [f"{d}/graph.json"] + sys.argv[2:]:
    if not os.path.exists(path) and path == f"{d}/graph.json":
        continue
    with open(path) as f:
        g = json.load(f)
    if (g["device"], g["path"]) not in seen:
        seen.add((g["device"], g["path"]))
        graphs.append(g)
wrote = [f"{d}/launch_args.png", f"{d}/route.png"]
if graphs:
    ways = (("ka_launch", "ka_launch x K"), ("graph", "ka_graph_launch"), ("raw_launch", "raw launch x K"),
            ("raw_graph", "raw CUDA graph"))
    fig, ax = plt.subplots(figsize=(max(5, 2.2 * len(graphs) + 1.5), 4.5))
    width = 0.2
    present = [[k for k, _ in ways if f"{k}_ns_per_kernel" in g] for g in graphs]  # each group centred
    for key, label in ways:
        xs, ys, lo, hi = [], [], [], []
        for gi, g in enumerate(graphs):
            if key not in present[gi]:
                continue
            v = g[f"{key}_ns_per_kernel"]
            xs.append(gi + (present[gi].index(key) - (len(present[gi]) - 1) / 2) * width)
            ys.append(v)
            lo.append(v - g[f"{key}_min"])
            hi.append(g[f"{key}_max"] - v)
        if xs:
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=label)
    ax.set_xlim(-0.6, len(graphs) - 0.4)
    ax.set_xticks(range(len(graphs)))
    ax.set_xticklabels([f"{g['device'][:28]}\n{g['selector']}, {g['kernels']} x {g['items']} items"
                        + ("" if g["native"] else "\n(graph replayed node by node)") for g in graphs], fontsize=8)
    if max(g["ka_launch_ns_per_kernel"] for g in graphs) > 20 * min(g["graph_ns_per_kernel"] for g in graphs):
        ax.set_yscale("log")
    ax.set_ylabel("ns per kernel (median, min-max)")
    ax.set_title("A step of small launches: per kernel")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{d}/graph.png", dpi=110)
    wrote.append(f"{d}/graph.png")
print("wrote " + ", ".join(wrote))
