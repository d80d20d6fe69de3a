#!/usr/bin/env bash
# Instructions per launch on the calling thread, libka against raw OpenCL,
# counted by callgrind inside the launch loop alone. The loop runs twice with
# different iteration counts; the difference divided by the extra iterations
# removes warm-up and set-up. Usage: bench/callgrind_launch.sh [build-dir] [args] [mode]
# mode: launch (default) or wait.
set -euo pipefail
build=${1:-build}; nargs=${2:-2}; mode=${3:-launch}
flag=--no-wait; [[ $mode == wait ]] && flag=--wait
count() { # impl iterations -> instructions inside the loop function
  local impl=$1 it=$2 fn=bench_${1}_loop out
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="$fn" \
    "$build/ka" bench launch --impl "$impl" $flag --iterations "$it" --reps 1 --args "$nargs" >/dev/null 2>&1
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}'
  rm -f "$out"
}
for impl in raw ka; do
  a=$(count $impl 500); b=$(count $impl 1500)
  echo "$impl: $(( (b - a) / 1000 )) instructions per $mode ($nargs args)"
done
