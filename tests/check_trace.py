#!/usr/bin/env python3
"""Checks a KA_TRACE file: valid JSON in Chrome's trace event format, every
span complete ("X" with ts, dur >= 0, pid, tid, args.queue and status), each
queue's track named, and the counts given as arguments:
  check_trace.py FILE [queue=ID] [saxpy=N] [launch=N] [write=N] ...
queue=ID counts only that queue's spans; a kernel's name counts its launches;
the other words are span categories."""
import json
import sys


def main():
    path, args = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    named = {e["tid"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    cats = {"launch", "write", "read", "copy", "fill", "finish", "wait"}
    counts = {}
    queue = int(args.pop("queue")) if "queue" in args else None
    for e in events:
        if e.get("ph") == "M":
            continue
        assert e["ph"] == "X", e
        assert e["cat"] in cats, e
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert e["tid"] in named, ("track without a name", e)
        assert e["args"]["status"] == "KA_OK", e
        if queue is not None and e["args"]["queue"] != queue:
            continue
        counts[e["cat"]] = counts.get(e["cat"], 0) + 1
        if e["cat"] == "launch":
            assert len(e["args"]["global"]) == 3 and len(e["args"]["local"]) == 3, e
            counts[e["name"]] = counts.get(e["name"], 0) + 1
        if e["cat"] in ("write", "read", "copy", "fill"):
            assert e["args"]["bytes"] > 0, e
    bad = {k: (int(v), counts.get(k, 0)) for k, v in args.items() if counts.get(k, 0) != int(v)}
    if bad:
        print("check_trace: expected vs found:", bad, "all counts:", counts)
        return 1
    print("check_trace: %s: %d events, counts %s" % (path, len(events), counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
