#!/usr/bin/env bash
# libka's own instructions per launch on the default (adaptive) PoCL queue,
# counted by callgrind in ka-route-count's loop: the launch loop of
# `ka-bench launch`, with routing's measured times injected so that the
# chosen path (inline by default) does not depend on how slow valgrind makes
# each launch. (bench/callgrind_launch.sh fixes the path with
# KA_INLINE_SLOW_US=0 instead, which is the size rule, not adaptive routing.)
# Two runs, 500 and 1500 launches; the difference over the extra 1000 removes
# set-up and warm-up. Prints the instructions per launch in all, and in
# libka's own code (the self cost of functions in src/: the OpenCL calls and
# the loop left out), then libka's by function.
# Usage: bench/callgrind_route.sh [build-dir] [args] [launch|wait] [inline|threaded]
set -euo pipefail
build=${1:-build}; nargs=${2:-2}; mode=${3:-launch}; path=${4:-inline}
src=$(cd "$(dirname "$0")/../src" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for it in 500 1500; do
  valgrind --tool=callgrind --callgrind-out-file="$tmp/$it" --toggle-collect=route_count_loop \
    "$build/ka-route-count" "$it" "$nargs" "$mode" "$path" >"$tmp/$it.out" 2>&1
done
python3 - "$tmp/500" "$tmp/1500" "$src" "$nargs" "$mode" "$path" <<'PY'
import re, subprocess, sys
def load(f):
    out = subprocess.run(['callgrind_annotate', '--threshold=100', f], capture_output=True, text=True).stdout
    fns, total = {}, 0
    for line in out.splitlines():
        m = re.match(r'\s*([\d,]+)\s+\([^)]*\)\s+(\S.*)', line)
        if not m or '=>' in line: continue
        v, name = int(m.group(1).replace(',', '')), m.group(2).split(' [')[0]
        if 'PROGRAM TOTALS' in name: total = v
        elif ':' in name: fns[name] = fns.get(name, 0) + v
    return fns, total
(a, ta), (b, tb) = load(sys.argv[1]), load(sys.argv[2])
src = sys.argv[3]
own = {k: (b.get(k, 0) - a.get(k, 0)) / 1000 for k in set(a) | set(b) if k.startswith(src) or k.startswith('src/')}
own = {k: v for k, v in own.items() if abs(v) >= 0.5}
print('%s args, %s, %s path: %.0f instructions per launch, %.0f of them libka\'s own' %
      (sys.argv[4], sys.argv[5], sys.argv[6], (tb - ta) / 1000, sum(own.values())))
for k, v in sorted(own.items(), key=lambda kv: -kv[1]):
    print('  %7.1f  %s' % (v, k.replace(src + '/', '')))
PY
