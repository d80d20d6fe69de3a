#!/usr/bin/env python3
"""Plots from the benchmarks' JSON (written by bench/run.sh):
  launch_args.png: ns per launch against argument count, raw OpenCL and libka, each path
  route.png:       launch + wait against work size on PoCL's basic and threaded devices and libka's routed queue
Usage: bench/plot.py DIR   (reads DIR/launch.json and DIR/route.json, writes the PNGs into DIR)"""
import json
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
print(f"wrote {d}/launch_args.png and {d}/route.png")
