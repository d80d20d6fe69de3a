#!/usr/bin/env bash
# The MPI example on loopback: mpi_heat.sh MPIEXEC MPI_HEAT MODE
#   MODE = N (ranks): N ranks with a fresh kernel cache; the grid must equal,
#          bit for bit, the serial C loop (--check) and a one-rank run; the N
#          ranks must have compiled the program once (N - 1 cache loads);
#          with KA_TRACE=...%p..., each rank writes its own valid trace file.
#   MODE = fail: rank 1 of 2 gets a bad device selector; the job must end
#          (not hang) with a non-zero status and that rank's message.
set -uo pipefail
mpiexec=$1 exe=$2 mode=$3
# A copy of the build on a machine without MPI (scripts/gpu-pack.sh): skipped, and said.
if ! command -v "$mpiexec" > /dev/null; then echo "SKIP: no $mpiexec on this machine"; exit 77; fi
# Loopback, any number of ranks on 2 cores; allowed as root (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI's plugins stay loaded at exit, so a sanitizer's leak report names
# them (tests/lsan.supp leaves Open MPI's own allocations out, not libka's).
# Unwound fully (Open MPI is built without frame pointers), a leak's stack
# reaches the Open MPI library that a suppression names.
export OMPI_MCA_mca_base_component_disable_dlclose=1
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0
run=("$mpiexec" --oversubscribe)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(--nx 67 --ny 61 --steps 40 --quiet) # odd sizes: uneven row blocks, a partial work-group

if [[ $mode == fail ]]; then
  # MPMD: rank 0 as usual, rank 1 on a device that does not exist.
  timeout 300 "${run[@]}" -np 1 "$exe" "${args[@]}" : -np 1 "$exe" "${args[@]}" --device no-such-device \
    > "$dir/out" 2>&1
  rc=$?
  cat "$dir/out"
  if (( rc == 124 )); then echo "FAIL: the job hung (killed after 300 s)"; exit 1; fi
  if (( rc == 0 )); then echo "FAIL: the job succeeded with a bad device"; exit 1; fi
  grep -q "rank 1: cannot open device 'no-such-device'" "$dir/out" || { echo "FAIL: no message from rank 1"; exit 1; }
  echo "PASS: exit status $rc, rank 1's message shown"
  exit 0
fi

n=$mode
KA_CACHE_DIR=$dir/kcache1 timeout 300 "${run[@]}" -np 1 "$exe" "${args[@]}" --out "$dir/one.bin" > "$dir/one.out" 2>&1 \
  || { cat "$dir/one.out"; echo "FAIL: the one-rank run"; exit 1; }
KA_CACHE_DIR=$dir/kcache timeout 300 "${run[@]}" -np "$n" "$exe" "${args[@]}" --check --out "$dir/n.bin" > "$dir/n.out" 2>&1
rc=$?
cat "$dir/n.out"
(( rc == 0 )) || { echo "FAIL: the $n-rank run (status $rc)"; exit 1; }
grep -q "check: bit for bit equal to the serial C loop" "$dir/n.out" || { echo "FAIL: no check line"; exit 1; }
cmp "$dir/one.bin" "$dir/n.bin" || { echo "FAIL: $n ranks differ from one rank"; exit 1; }
grep -q "kernel cache: $((n - 1)) of $n builds loaded from the cache" "$dir/n.out" \
  || { echo "FAIL: the $n ranks did not compile exactly once"; exit 1; }
# KA_TRACE with %p: one trace file per rank, each a valid trace of its rank's launches.
src=$(cd "$(dirname "$0")" && pwd)
if command -v python3 > /dev/null; then
  mkdir -p "$dir/trace"
  KA_TRACE="$dir/trace/t.%p.json" KA_CACHE_DIR=$dir/kcache timeout 300 "${run[@]}" -np "$n" "$exe" "${args[@]}" \
    > "$dir/t.out" 2>&1 || { cat "$dir/t.out"; echo "FAIL: the traced run"; exit 1; }
  files=("$dir"/trace/t.*.json)
  (( ${#files[@]} == n )) || { ls "$dir/trace"; echo "FAIL: ${#files[@]} trace files for $n ranks"; exit 1; }
  for f in "${files[@]}"; do python3 "$src/check_trace.py" "$f" || { echo "FAIL: $f"; exit 1; }; done
fi
echo "PASS: $n ranks equal the one-rank run and the serial C loop bit for bit; one compile; a trace per rank"
