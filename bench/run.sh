#!/usr/bin/env bash
# Runs the PoCL benchmarks, keeps their JSON and tables under docs/bench/ and
# draws the plots. Run on a quiet machine: bench/run.sh [build-dir]
set -euo pipefail
build=${1:-build}
out=docs/bench
mkdir -p "$out"
{ date -u +%Y-%m-%dT%H:%MZ; uname -srm; nproc; grep -m1 "model name" /proc/cpuinfo || true; } > "$out/machine.txt"
"$build/ka-bench" launch --args 1,2,4,8,16,32,40 --iterations 2000 --reps 9 --json > "$out/launch.json"
"$build/ka-bench" launch --args 2,40 --iterations 2000 --reps 9 > "$out/launch.txt"
"$build/ka-bench" wait --iterations 500 --reps 9 --json > "$out/wait.json"
"$build/ka-bench" wait --iterations 500 --reps 9 > "$out/wait.txt"
"$build/ka-bench" route --reps 7 --json > "$out/route.json"
"$build/ka-bench" route --reps 7 > "$out/route.txt"
for s in 0 3000 10000 100000; do
  echo "spin $s ns:"
  "$build/ka-bench" wait --iterations 500 --reps 5 --spin "$s" | grep -E "spin then sleep|raw clWait"
done > "$out/wait_spin.txt"
"$build/ka-bench" graph --reps 21 --json > "$out/graph.json"
"$build/ka-bench" graph --reps 21 > "$out/graph.txt"
bench/callgrind_graph.sh "$build" > "$out/callgrind_graph.txt"
{ for p in routed threaded; do for a in 2 40; do bench/callgrind_launch.sh "$build" "$a" launch "$p"; done; done
  bench/callgrind_launch.sh "$build" 2 wait routed; } > "$out/callgrind.txt"
/usr/bin/python3 bench/plot.py "$out"
