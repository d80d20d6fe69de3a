#!/usr/bin/env bash
# Instructions per kernel of `ka-bench graph`'s three ways (K ka_launch calls,
# one ka_graph_launch, K raw clEnqueueNDRangeKernel), counted by callgrind in
# each timed loop alone. Each count runs twice with different step counts; the
# difference over the extra steps removes set-up, warm-up and the check. The
# OpenCL calls (with, on the routed path, the kernel itself, which PoCL's
# `basic` device runs inside the enqueue) are split from the rest: libka's own
# cost, and the loop's.
# Usage: bench/callgrind_graph.sh [build-dir] [kernels] [items]
set -euo pipefail
build=${1:-build}; kernels=${2:-10}; items=${3:-1024}
# Under valgrind every inline launch is slow enough to be demoted to the
# threaded device; keep the path fixed.
export KA_INLINE_SLOW_US=0
# prints: total in-OpenCL-calls kernel-work-group-function
count() {
  local fn=$1 steps=$2 out
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="$fn" \
    "$build/ka-bench" graph --kernels "$kernels" --items "$items" --iterations "$steps" --reps 1 >/dev/null 2>&1
  callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null | awk '
    function v() { gsub(",", "", $1); return $1 }
    /PROGRAM TOTALS/ {t = v()}
    /\?\?\?:cl(EnqueueNDRangeKernel|SetKernelArg|Flush|Finish) \[/ {o += v()}
    /kernel_chain_workgroup \[/ {w += v()}
    END {printf "%.0f %.0f %.0f\n", t, o, w}'
  rm -f "$out"
}
# A run first, uncounted, so PoCL's and libka's caches hold every build.
"$build/ka-bench" graph --kernels "$kernels" --items "$items" --iterations 5 --reps 1 >/dev/null 2>&1
per_kernel() { echo $(( ($2 - $1) / (100 * kernels) )); }
for way in ka_steps:"ka_launch x $kernels" replays:ka_graph_launch rawcl_steps:"raw OpenCL x $kernels"; do
  fn=bench_graph_${way%%:*}
  read -r ta oa wa < <(count "$fn" 20)
  read -r tb ob wb < <(count "$fn" 120)
  t=$(per_kernel "$ta" "$tb"); o=$(per_kernel "$oa" "$ob"); w=$(per_kernel "$wa" "$wb")
  printf '%-22s %6d instructions per kernel: %6d in OpenCL calls (the kernel itself %d of them), %5d outside them\n' \
    "${way#*:}" "$t" "$o" "$w" $((t - o))
done
