#!/usr/bin/env python3
"""Plot and table of `ka-bench primitives --json`.

  bench/plot_prims.py OUT.png TITLE=FILE.json [TITLE=FILE.json ...]
      one panel per file (a device): per row, the speed of libka, CUB and the OpenMP loop relative
      to the row's reference (CUB where the file has it, else OpenMP), log scale; the row's goal for
      libka as a black tick; rows that are not available are left out.
      e.g. bench/plot_prims.py prims.png "H200=bench_primitives_cuda.json" "PoCL 16 cores=bench_primitives_pocl.json"
  bench/plot_prims.py --table FILE.json [FILE.json ...]
      the same figures as text, with each goal met or MISSED (no matplotlib needed; gpu-check.sh's summary).
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def goals(run, r):
    """(ratio, goal, what) for each goal of the row that applies on this device."""
    out = []
    if r.get("goal_vs_cub") is not None and r.get("ka_vs_cub") is not None:
        out.append((r["ka_vs_cub"], r["goal_vs_cub"], "CUB"))
    if r.get("goal_vs_omp") is not None and r.get("ka_vs_omp") is not None:
        out.append((r["ka_vs_omp"], r["goal_vs_omp"], "OpenMP"))
    return out


def table(path):
    run = load(path)
    print(f"primitives on {run['device']} ({run['selector']}): n = {run['n']}, sort n = {run['sort_n']}, "
          f"{run['reps']} reps (OpenMP {run['omp_reps']}, {run['host_threads']} threads), {run['cub']}; "
          f"checked {str(run['checked']).lower()}")
    print(f"  {'row':<20} {'libka ms':>9} {'rate':>9} {'unit':>6} {'OMP ms':>9} {'ka/OMP':>7} "
          f"{'CUB ms':>9} {'ka/CUB':>7}  goals")
    missed = 0
    for r in run["rows"]:
        if not r["available"]:
            print(f"  {r['row']:<20} not available: {r['not_available']}")
            continue

        def f(v, fmt):
            return format(v, fmt) if v is not None else "-".rjust(int(fmt.split(".")[0]))
        g = []
        for ratio, goal, what in goals(run, r):
            ok = ratio >= goal
            missed += not ok
            g.append(f"vs {what} >= {goal:g}: {'met' if ok else 'MISSED'}")
        if r.get("cub_ms") is None and r.get("cub_not_available") and run["cub"].startswith("CUB "):
            g.append(f"CUB: {r['cub_not_available']}")
        print(f"  {r['row']:<20} {f(r['ka_ms'], '9.3f')} {f(r['ka_rate'], '9.3f')} {r['unit']:>6} "
              f"{f(r['omp_ms'], '9.3f')} {f(r['ka_vs_omp'], '7.3f')} {f(r['cub_ms'], '9.3f')} "
              f"{f(r['ka_vs_cub'], '7.3f')}  {'; '.join(g)}{'' if r['checked'] else '  WRONG RESULT'}")
    return missed


def plot(out, runs):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(11, 4.2 * len(runs)), squeeze=False)
    for ax, (title, path) in zip(axes[:, 0], runs):
        run = load(path)
        rows = [r for r in run["rows"] if r["available"]]
        has_cub = any(r.get("cub_ms") is not None for r in rows)
        ref = "CUB" if has_cub else "OpenMP"
        w = 0.27
        for k, (key, label, colour) in enumerate((("ka_ms", "libka", "tab:blue"), ("cub_ms", "CUB", "tab:red"),
                                                    ("omp_ms", f"OpenMP ({run['host_threads']} threads)",
                                                     "tab:green"))):
            xs, ys = [], []
            for i, r in enumerate(rows):
                base = r.get("cub_ms") if has_cub else r.get("omp_ms")
                if r.get(key) is None or not base:
                    continue
                xs.append(i + (k - 1) * w)
                ys.append(base / r[key])  # speed relative to the reference: its time / this time
            if xs:
                ax.bar(xs, ys, w, label=label, color=colour)
        for i, r in enumerate(rows):
            for ratio, goal, what in goals(run, r):
                if what == ref:
                    ax.plot([i - 1.5 * w, i - 0.5 * w], [goal, goal], color="black", lw=2)
        ax.axhline(1.0, color="gray", lw=0.8, ls=":")
        ax.set_yscale("log")
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([r["row"] for r in rows], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(f"speed relative to {ref}")
        ax.set_title(f"{title}: {run['device']}, n = {run['n']}, sort n = {run['sort_n']} "
                     f"(black: libka's goal)", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv):
    if len(argv) >= 2 and argv[0] == "--table":
        for i, p in enumerate(argv[1:]):
            if i:
                print()
            table(p)
        return 0
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        print(__doc__, file=sys.stderr)
        return 2
    plot(argv[0], [a.split("=", 1) for a in argv[1:]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
