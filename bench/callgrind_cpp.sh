#!/usr/bin/env bash
# Instructions per launch on the calling thread, a C loop of ka_launch against
# the same loop through ka.hpp's kernel::launch (saxpy, 4 arguments, 1
# work-item, no wait), counted by callgrind inside the loop alone; two
# iteration counts, the difference over the extra 1000 removes set-up.
# Usage: bench/callgrind_cpp.sh [build-dir]   (KA_DEVICE picks the device)
set -euo pipefail
build=${1:-build}
export KA_INLINE_SLOW_US=0   # as bench/callgrind_launch.sh: keep PoCL's routed path fixed
dir=$(mktemp -d)
"${CXX:-c++}" -std=c++17 -O2 -g -Wall -Wextra -Werror -Iinclude bench/callgrind_cpp.cpp -L"$build" -lka \
  -Wl,-rpath,"$(cd "$build" && pwd)" -o "$dir/cg"
count() { # impl iterations
  valgrind --tool=callgrind --callgrind-out-file="$dir/out" --toggle-collect="$1_loop" "$dir/cg" "$1" "$2" >/dev/null 2>&1
  callgrind_annotate "$dir/out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}'
}
for impl in c cpp; do
  a=$(count $impl 1200); b=$(count $impl 2200)
  printf '%-4s %6d instructions per launch\n' "$impl" $(( (b - a) / 1000 ))
done
rm -rf "$dir"
