#!/usr/bin/env bash
# Strong or weak scaling of examples/mpi_heat on one machine: the same grid
# (strong) or the same rows per rank (weak) on 1 and more ranks, each rank on
# its own device (PoCL by default), interleaved repetitions, the median of each.
#
#   scripts/mpi_scaling.sh BUILD_DIR [CONFIG...]
#
# CONFIG is RANKSxTHREADS: ranks, and PoCL worker threads per rank
# (POCL_CPU_MAX_CU_COUNT / POCL_MAX_PTHREAD_COUNT; 0 = PoCL's default, all
# cores). Default: 1x0 1x1 2x1, the useful set on a 2-core machine. On GPUs,
# set KA_DEVICE or leave it unset (rank N of a node takes cuda:N) and give
# RANKSx0 configs.
# Environment: GRIDS ("NXxNY:STEPS ...", default "512x512:200 2048x2048:20"),
# WEAK (1: a config of R ranks runs NX x (NY * R), and the last column is the
# efficiency, first config's time over this one's; default 0: strong scaling,
# the speedup), REPS (default 5), JSON (a file for the results). The exch% column:
# the exchange's wall time as a share of the step (mpi_heat's line; the slowest
# rank; the interior kernel runs meanwhile), "-" for one rank.
set -euo pipefail
build=${1:?usage: scripts/mpi_scaling.sh BUILD_DIR [RANKSxTHREADS...]}
shift
configs=("$@")
((${#configs[@]})) || configs=(1x0 1x1 2x1)
grids=(${GRIDS:-512x512:200 2048x2048:20})
reps=${REPS:-5}
exe=$build/mpi_heat
[[ -x $exe ]] || { echo "mpi_scaling: no $exe (configure with MPI found)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

weak=${WEAK:-0}
one() { # config grid -> "us-per-step exchange-share" (the share "-" for one rank)
  local ranks=${1%x*} threads=${1#*x} nx=${2%%x*} rest=${2#*x}
  local ny=${rest%%:*} steps=${rest#*:} env=() us share
  ((threads)) && env=(-x POCL_CPU_MAX_CU_COUNT="$threads" -x POCL_MAX_PTHREAD_COUNT="$threads")
  ((weak)) && ny=$((ny * ranks))
  mpirun --oversubscribe --bind-to none "${env[@]}" -np "$ranks" "$exe" --nx "$nx" --ny "$ny" --steps "$steps" --quiet \
    > "$tmp/out"
  us=$(sed -n 's/.* grid, .*: \([0-9.]*\) us per step.*/\1/p' "$tmp/out")
  share=$(sed -n 's/.*exchange: [0-9.]* us per step, \([0-9.]*\)% of the step.*/\1/p' "$tmp/out")
  [[ -n $us ]] || { echo "mpi_scaling: no time from mpi_heat ($1, $2):" >&2; cat "$tmp/out" >&2; exit 1; }
  echo "$us ${share:--}"
}

for g in "${grids[@]}"; do one "${configs[0]}" "$g" > /dev/null; done # warm the kernel cache
for ((r = 0; r < reps; r++)); do
  for g in "${grids[@]}"; do
    for c in "${configs[@]}"; do
      res=$(one "$c" "$g") || exit 1
      echo "$g $c $res" >> "$tmp/all"
    done
  done
done

median() { sort -g | awk '{a[NR] = $1} END {if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
kind=strong last=speedup
((weak)) && kind=weak last=efficiency
echo "mpi_heat $kind scaling: $(nproc) cores, $reps interleaved repetitions, median us per step"
((weak)) && echo "(grid: per rank; R ranks run NX x (NY * R))"
printf '%-16s %-10s %12s %8s %10s\n' grid:steps ranksxthr "us/step" "exch%" "$last"
json="["
for g in "${grids[@]}"; do
  base=
  for c in "${configs[@]}"; do
    m=$(awk -v g="$g" -v c="$c" '$1 == g && $2 == c {print $3}' "$tmp/all" | median)
    x=$(awk -v g="$g" -v c="$c" '$1 == g && $2 == c && $4 != "-" {print $4}' "$tmp/all" | median)
    [[ -z $base ]] && base=$m
    s=$(awk -v b="$base" -v m="$m" 'BEGIN {printf "%.2f", b / m}')
    printf '%-16s %-10s %12.1f %8s %10s\n' "$g" "$c" "$m" "${x:--}" "$s"
    json+="{\"grid\":\"$g\",\"config\":\"$c\",\"scaling\":\"$kind\",\"us_per_step\":$m,\"exchange_percent\":${x:-null},\"$last\":$s},"
  done
done
json="${json%,}]"
[[ -n ${JSON:-} ]] && echo "$json" > "$JSON"
exit 0
