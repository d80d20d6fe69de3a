#!/usr/bin/env bash
# Instructions per launch on the calling thread, libka against raw OpenCL,
# counted by callgrind inside the launch loop alone. Each loop runs twice with
# different iteration counts; the difference over the extra iterations removes
# set-up and warm-up. For libka it also splits off the instructions spent in
# the OpenCL calls (clSetKernelArg, clEnqueueNDRangeKernel), leaving libka's
# own cost, which does not depend on PoCL's worker threads (valgrind
# serializes threads, so PoCL's own count varies with the queue's state).
# Usage: bench/callgrind_launch.sh [build-dir] [args] [launch|wait] [routed|threaded]
set -euo pipefail
build=${1:-build}; nargs=${2:-2}; mode=${3:-launch}; path=${4:-routed}
flag=--no-wait; [[ $mode == wait ]] && flag=--wait
# Under valgrind every inline launch is slow enough to be demoted to the
# threaded device half-way through a run; keep the path fixed.
export KA_INLINE_SLOW_US=0
# prints: total enqueue setarg
count() {
  local impl=$1 it=$2 out
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="bench_${impl}_loop" \
    "$build/ka-bench" launch --impl "$impl" $flag --iterations "$it" --reps 1 --args "$nargs" --path "$path" >/dev/null 2>&1
  callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null | awk '
    /PROGRAM TOTALS/ {gsub(",","",$1); t=$1}
    /\?\?\?:clEnqueueNDRangeKernel \[/ {gsub(",","",$1); e=$1}
    /\?\?\?:clSetKernelArg \[/ {gsub(",","",$1); s=$1}
    /\?\?\?:clWaitForEvents \[/ {gsub(",","",$1); w=$1}
    /\?\?\?:clGetEventInfo \[/ {gsub(",","",$1); g=$1}
    /\?\?\?:clReleaseEvent \[/ {gsub(",","",$1); r=$1}
    /\?\?\?:clSetEventCallback \[/ {gsub(",","",$1); c=$1}
    /\?\?\?:clFlush \[/ {gsub(",","",$1); f=$1}
    END {printf "%.0f %.0f\n", t, e+s+w+g+r+c+f}'
  rm -f "$out"
}
# A run first, uncounted, so PoCL's and libka's caches hold every build.
"$build/ka-bench" launch --iterations 10 --reps 1 --args "$nargs" --path "$path" >/dev/null 2>&1
for impl in raw ka; do
  read -r ta oa < <(count $impl 500)
  read -r tb ob < <(count $impl 1500)
  per=$(( (tb - ta) / 1000 )); cl=$(( (ob - oa) / 1000 ))
  printf '%-8s %-4s %6d instructions per %s (%d args): %6d in OpenCL calls, %5d outside them\n' "$path" \
    "$impl" "$per" "$mode" "$nargs" "$cl" $((per - cl))
done
