#!/usr/bin/env python3
"""Draws a KA_TRACE file (Chrome trace event format) as a static HTML page:
one row per queue (named by its thread_name record), one box per span,
coloured by category, labelled with its name and duration, over a time axis.
For a quick look where no trace viewer is at hand (chrome://tracing,
ui.perfetto.dev open the same file interactively).

  scripts/trace_view.py trace.json out.html [title]
"""
import html
import json
import sys

COLOURS = {"launch": "#4e79a7", "write": "#f28e2b", "read": "#e15759", "copy": "#76b7b2",
           "fill": "#59a14f", "finish": "#b07aa1", "wait": "#9c9c9c"}


def main():
    src, out = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else src
    with open(src) as f:
        events = json.load(f)["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M"}
    spans = [e for e in events if e.get("ph") == "X"]
    if not spans:
        sys.exit("trace_view: no spans in " + src)
    rows = sorted({(e["pid"], e["tid"]) for e in spans})
    t0 = min(e["ts"] for e in spans)
    t1 = max(e["ts"] + e["dur"] for e in spans)
    span_us = max(t1 - t0, 1.0)
    width, left, row_h, top = 1300, 230, 110, 60
    scale = (width - left - 120) / span_us
    height = top + row_h * len(rows) + 60
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="DejaVu Sans, sans-serif">'
           % (width, height), '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="24" font-size="16" font-weight="bold">%s</text>' % html.escape(title)]
    # time axis: about 10 ticks in ms
    step = 10 ** len(str(int(span_us / 10))) / 10 if span_us >= 10 else 1
    while span_us / step > 12:
        step *= 2
    t = 0.0
    while t <= span_us:
        x = left + t * scale
        svg.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x, top - 10, x, height - 40))
        svg.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#555">%.3g ms</text>'
                   % (x, height - 25, t / 1000))
        t += step
    for i, key in enumerate(rows):
        y = top + i * row_h
        label = names.get(key, "pid %d tid %d" % key)
        svg.append('<text x="10" y="%d" font-size="12">%s</text>' % (y + 28, html.escape(label[:34])))
        free = [0.0, 0.0, 0.0]  # label levels: where each is free again
        for e in sorted((e for e in spans if (e["pid"], e["tid"]) == key), key=lambda e: e["ts"]):
            x = left + (e["ts"] - t0) * scale
            w = max(e["dur"] * scale, 2)
            c = COLOURS.get(e["cat"], "#888")
            dur = "%.1f us" % e["dur"] if e["dur"] < 1000 else "%.2f ms" % (e["dur"] / 1000)
            svg.append('<rect x="%.1f" y="%d" width="%.1f" height="26" fill="%s"><title>%s</title></rect>'
                       % (x, y + 10, w, c, html.escape(json.dumps(e["args"]))))
            lv = next((k for k in range(3) if free[k] <= x), 2)
            free[lv] = x + 7 * max(len(e["name"]), len(dur)) + 6
            ly = y + 50 + 24 * lv
            svg.append('<text x="%.1f" y="%d" font-size="11">%s</text>' % (x + 1, ly, html.escape(e["name"])))
            svg.append('<text x="%.1f" y="%d" font-size="10" fill="#555">%s</text>' % (x + 1, ly + 11, dur))
    lx = left
    for cat, c in COLOURS.items():
        svg.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (lx, height - 16, c))
        svg.append('<text x="%d" y="%d" font-size="11">%s</text>' % (lx + 16, height - 6, cat))
        lx += 90
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("<!doctype html><html><body style='margin:0'>%s</body></html>\n" % "\n".join(svg))


if __name__ == "__main__":
    main()
