#!/usr/bin/env bash
# Verifies libka on a machine with an NVIDIA GPU, from a build made elsewhere
# by scripts/gpu-pack.sh, in one command that ends within its time budget:
#
#   scripts/gpu-check.sh BUILD_DIR OUTDIR
#
# Steps, in order, each with its own time limit and log, the next one run
# whatever the last one gave:
#   a  nvidia-smi; `ka info --json`; the binaries' shared libraries (ldd)
#   b  the whole test suite (ctest) with KA_DEVICE=cuda:0 (the C++ and Fortran tests and examples
#      among them, each named in the summary), then its launch, graph, API, scan and debug tests
#      again with KA_DEBUG=1
#   c  the kernel tests (ka_testsuite, test_kernels, test_dialect*) on PoCL, KA_DEVICE=pocl
#   d  the same on NVIDIA's OpenCL through the OpenCL back-end: an ICD folder holding only
#      NVIDIA's library, OCL_ICD_VENDORS pointed at it, KA_DEVICE=opencl:0
#   e  ka-bench launch, wait, saxpy, graph and hostmem on cuda:0, timeloop on cuda:0
#      (libka and its graph against hand-written CUDA and its graph, 2-D and --dims 3), graph,
#      timeloop and timeloop --kernels 6 on PoCL (--json)
#   f  the PTX and SASS of libka's saxpy and heat stencils (timeloop, 2-D and 3-D) and of
#      hand-written CUDA ones, and their instruction counts
#   g  MPI (Open MPI carried in the build): mpi_heat on 1 and 2 ranks on the GPU(s), checked
#      bit for bit; strong scaling on the GPU(s) and on PoCL's cores (scripts/mpi_scaling.sh)
#   h  test_prims and test_prims_select with inputs past 2^31 (KA_BIG_TESTS=1); examples/saxpy traced (KA_TRACE), checked
#   i  the host back-end on the machine's CPU cores: the whole suite with KA_DEVICE=host, then
#      ka-bench timeloop, fork, saxpy, barriers (also on PoCL), launch and compile on host, and
#      timeloop and fork again on two cores (taskset, KA_NUM_THREADS=2, OMP_NUM_THREADS=2),
#      timeloop on one
#   m  two GPUs (nothing, said, where there are fewer): test_two_devices on cuda:0 and cuda:1;
#      mpi_heat with one rank per GPU checked bit for bit (1 and 2 ranks, the serial loop),
#      strong scaling (4096^2, 8192^2) and weak scaling (4096^2 per rank) with the exchange's
#      share of a step, and the device-pointer exchange (fails where MPI is not CUDA-aware)
#   x  (not in the default steps) GPU_CHECK_EXTRA's command, before step p
#   p  (not in the default steps) ka-bench primitives: every primitive against CUB (in the same
#      process, where the build has libka_cub_bench.so) and OpenMP on cuda:0 (2^28 elements), then
#      against OpenMP on the CPU's cores through PoCL and the host back-end (2^24); the table of
#      each in the summary, primitives.png where matplotlib is installed
# Then OUTDIR holds: summary.txt (tests passed/failed per device, the benchmarks' ratios
# against their goals), ka_kernels.ptx, raw_kernels.ptx and gpu-check.tar.gz (every log, JSON
# file and the summary).
#
# Environment: GPU_CHECK_BUDGET (seconds for the whole run, default 500: under 9 minutes
# with room for start-up), GPU_CHECK_STEPS (the steps to run, default "abcdefghim"),
# GPU_CHECK_DEVICE (the device of steps b, e and p, default cuda:0; another one only to try
# the script where there is no GPU), GPU_CHECK_HOST (step i's parts, default all),
# GPU_CHECK_PRIMS (options added to each of step p's runs, e.g. "--only sort,scan"),
# GPU_CHECK_TESTS (step b's ctest regex instead of the whole suite), GPU_CHECK_ONLY (glob
# patterns of the runs to make, e.g. "b_* p_primitives_cuda"; the others are left out, said in
# the log), GPU_CHECK_EXTRA (step x: a command line of the caller's, run with the build's paths).
# The primitives alone: GPU_CHECK_STEPS=ap (7 minutes at most: 150 s on the GPU, 150 s on PoCL,
# 120 s on the host back-end).
# Exit status: 0 when every step ran and passed, 1 otherwise (the summary says which),
# 2 usage error.
set -uo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: scripts/gpu-check.sh BUILD_DIR OUTDIR" >&2
  exit 2
fi
T0=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET:-500}
STEPS=${GPU_CHECK_STEPS:-abcdefghim}
DEV=${GPU_CHECK_DEVICE:-cuda:0}
REPO=$(cd "$(dirname "$0")/.." && pwd -P)
if ! BUILD=$(cd "$1" 2>/dev/null && pwd -P); then
  echo "gpu-check: no build folder '$1'" >&2
  exit 2
fi
mkdir -p "$2" && OUT=$(cd "$2" && pwd -P) || { echo "gpu-check: cannot make '$2'" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
LOGS=$WORK/gpu-check
mkdir -p "$LOGS"
: > "$LOGS/steps.tsv"
KA=$BUILD/ka
KA_BENCH=$BUILD/ka-bench

now() { date -u +%H:%M:%S; }
elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "[$(now) +$(elapsed)s] $*" | tee -a "$LOGS/gpu-check.log"; }

# ---- time: each step gets min(its cap, what is left after the later steps' reserves) --
# reserve: seconds kept for each step still to come (so a slow step cannot starve them);
# 15 s more for the summary and the tarball.
declare -A RESERVE=([a]=10 [b]=60 [c]=30 [d]=30 [e]=150 [f]=15 [g]=60 [h]=40 [i]=120 [m]=60 [x]=30 [p]=200)
reserve_after() { # the reserves of the steps after $1 that will run
  local s=$1 sum=15 later=0 x
  for x in a b c d e f g h i m x p; do
    [[ $later == 1 && $STEPS == *$x* ]] && sum=$((sum + RESERVE[$x]))
    [[ $x == "$s" ]] && later=1
  done
  echo $sum
}
CUR_STEP=a
# Seconds the next command of the current step may take, given its own cap.
limit() {
  local cap=$1 left
  left=$(( BUDGET - $(elapsed) - $(reserve_after "$CUR_STEP") ))
  (( left < cap )) && cap=$left
  echo $cap
}

# run NAME CAP CMD...: runs CMD under `timeout` with its output in NAME.log; records
# NAME, exit status, seconds, limit. 124/137: timed out; 125: not run (out of time).
run() {
  local name=$1 cap=$2 lim rc t1 pat keep=1 pats
  shift 2
  if [[ -n ${GPU_CHECK_ONLY:-} ]]; then
    keep=0
    read -r -a pats <<< "$GPU_CHECK_ONLY" # words, not expanded against the files here
    for pat in "${pats[@]}"; do [[ $name == $pat ]] && keep=1; done
    (( keep )) || { say "$name: left out (GPU_CHECK_ONLY)"; return 0; }
  fi
  lim=$(limit "$cap")
  if (( lim < 5 )); then
    say "$name: not run, out of time"
    printf '%s\t%s\t%s\t%s\n' "$name" 125 0 "$lim" >> "$LOGS/steps.tsv"
    return 125
  fi
  say "$name: start (limit ${lim}s): $*"
  t1=$(date +%s)
  timeout -k 10 "$lim" "$@" > "$LOGS/$name.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" $(( $(date +%s) - t1 )) "$lim" >> "$LOGS/steps.tsv"
  say "$name: exit $rc after $(( $(date +%s) - t1 ))s"
  return $rc
}

# ---- the build's absolute paths -------------------------------------------------------
# CTest files, the binaries' RPATH and some tests hold the paths the build was made at.
declare -A PACK=()
if [[ -f $BUILD/gpu-pack.env ]]; then
  while IFS='=' read -r k v; do [[ -n $k ]] && PACK[$k]=$v; done < "$BUILD/gpu-pack.env"
else
  say "warning: $BUILD/gpu-pack.env missing (not made by scripts/gpu-pack.sh?): absolute paths not recreated"
fi
same_dir() { [[ -d $1 && -d $2 && $(cd "$1" && pwd -P) == "$(cd "$2" && pwd -P)" ]]; }
# Makes the absolute path $1 lead to $2 (a symbolic link), unless it already does.
link_path() {
  local orig=$1 here=$2
  [[ -z $orig ]] && return 0
  if same_dir "$orig" "$here"; then
    say "paths: $orig is $here"
    return 0
  fi
  if [[ -e $orig || -L $orig ]]; then
    say "warning: $orig exists and is not $here: tests that use the build's absolute paths may fail"
    return 1
  fi
  if mkdir -p "$(dirname "$orig")" && ln -s "$here" "$orig"; then
    say "paths: linked $orig -> $here"
  else
    say "warning: cannot link $orig -> $here"
    return 1
  fi
}
link_path "${PACK[KA_PACK_SRC]:-}" "$REPO"
link_path "${PACK[KA_PACK_BUILD]:-}" "$BUILD"

export LD_LIBRARY_PATH=$BUILD/gpu-libs:$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KA_CACHE_DIR=$WORK/kcache # the benchmarks' kernel cache (the tests set their own)
for d in /usr/local/cuda/bin /usr/local/cuda/targets/x86_64-linux/bin; do
  [[ -d $d ]] && PATH=$PATH:$d
done
export PATH
say "gpu-check: build $BUILD (${PACK[KA_PACK_COMMIT]:-unknown commit}, packed ${PACK[KA_PACK_DATE]:-?}), repository $REPO"
say "gpu-check: logs in $WORK, budget ${BUDGET}s, steps $STEPS"

# ctest over a test-name regex (empty: all), with the step's time as --stop-time.
# -j: jobs. The environment comes from the caller.
ctest_run() {
  local name=$1 cap=$2 jobs=$3 regex=$4 lim stop
  lim=$(limit "$cap")
  stop=$(date -d "+$(( lim > 15 ? lim - 10 : lim )) seconds" +%H:%M:%S)
  # -V: every test's whole output, also of passing ones (skips and known driver
  # issues inside a passing test show only there).
  local args=(-V -j "$jobs" --stop-time "$stop")
  [[ -n $regex ]] && args+=(-R "$regex")
  (cd "$BUILD" && ctest -N ${regex:+-R "$regex"}) > "$LOGS/$name.list" 2>&1
  run "$name" "$cap" sh -c 'cd "$0" && exec ctest "$@"' "$BUILD" "${args[@]}"
}
# Counts of a ctest log: "passed failed timed-out skipped not-run listed". Timed out: cut by
# a test's own limit or the step's; not run: never started (or never reported).
ctest_counts() {
  local log=$LOGS/$1.log list=$LOGS/$1.list p f t s n
  p=$(grep -cE 'Test +#[0-9]+: .* Passed +[0-9.]+ sec' "$log" 2>/dev/null)
  s=$(grep -cE 'Test +#[0-9]+: .*\*\*\*Skipped' "$log" 2>/dev/null)
  t=$(grep -cE 'Test +#[0-9]+: .*\*\*\*Timeout' "$log" 2>/dev/null)
  f=$(grep -E 'Test +#[0-9]+: ' "$log" 2>/dev/null | grep -vcE ' Passed +[0-9.]+ sec|\*\*\*(Skipped|Not Run|Timeout)')
  n=$(sed -n 's/^Total Tests: *//p' "$list" 2>/dev/null)
  [[ $n =~ ^[0-9]+$ ]] || n=$(( ${p:-0} + ${f:-0} + ${t:-0} + ${s:-0} ))
  echo "${p:-0} ${f:-0} ${t:-0} ${s:-0} $(( n - ${p:-0} - ${f:-0} - ${t:-0} - ${s:-0} )) $n"
}
ctest_names() { # the tests of log $1 whose result matches $2 (failed: "fail", timed out: "Timeout")
  local lines
  lines=$(grep -E 'Test +#[0-9]+: ' "$LOGS/$1.log" 2>/dev/null)
  if [[ $2 == fail ]]; then
    lines=$(grep -vE ' Passed +[0-9.]+ sec|\*\*\*(Skipped|Not Run|Timeout)' <<< "$lines")
  else
    lines=$(grep -E "\*\*\*$2" <<< "$lines")
  fi
  sed -E 's/.*Test +#[0-9]+: ([^ ]+) .*/\1/' <<< "$lines" | tr '\n' ' '
}
KERNEL_TESTS='^(ka_testsuite|test_kernels|test_dialect.*)$'
# The Fortran heat loop (the `libka` module) against the same loop in C on a device.
fh() { # NAME CAP DEVICE SIZES STEPS
  [[ -x $BUILD/fortran-heat-bench ]] || { say "no fortran-heat-bench in the build (no Fortran compiler there): $1 not run"; return 0; }
  run "e_bench_$1" "$2" sh -c '"$0" --device "$3" --sizes "$4" --steps "$5" --reps 15 --json > "$1" 2> "$2"; rc=$?; cat "$1" "$2"; exit $rc' \
    "$BUILD/fortran-heat-bench" "$LOGS/bench_$1.json" "$LOGS/bench_$1.stderr" "$3" "$4" "$5"
}

# ---- a: the machine ------------------------------------------------------------------
if [[ $STEPS == *a* ]]; then
  CUR_STEP=a
  run a_nvidia_smi 20 sh -c 'nvidia-smi && nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv'
  run a_ka_info 30 sh -c '"$0" info --json > "$1"; rc=$?; cat "$1"; exit $rc' "$KA" "$LOGS/ka_info.json"
  run a_ldd 10 sh -c 'for f in "$0"/ka "$0"/ka-bench "$0"/libka.so "$0"/tests/test_launch "$0"/tests/test_waits; do echo "== $f"; ldd "$f"; done' "$BUILD"
  grep -q "not found" "$LOGS/a_ldd.log" && say "warning: a library is not found (a_ldd.log)"
fi

# ---- b: the whole suite on cuda:0 ----------------------------------------------------
if [[ $STEPS == *b* ]]; then
  CUR_STEP=b
  KA_DEVICE=$DEV ctest_run b_ctest_cuda 240 3 "${GPU_CHECK_TESTS:-}"
  # KA_DEBUG=1 on the GPU: guard zones, full checks, and no false alarms in the launch, graph and API tests.
  KA_DEBUG=1 KA_DEVICE=$DEV ctest_run b_ctest_cuda_debug 60 2 "test_debug|test_kscan|test_graph|test_api_rules|test_launch"
fi

# ---- c: kernel tests on PoCL ---------------------------------------------------------
if [[ $STEPS == *c* ]]; then
  CUR_STEP=c
  KA_DEVICE=pocl ctest_run c_ctest_pocl 150 2 "$KERNEL_TESTS"
fi

# ---- d: kernel tests on NVIDIA's OpenCL ----------------------------------------------
NV_OCL=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
if [[ $STEPS == *d* ]]; then
  CUR_STEP=d
  if [[ -e $NV_OCL ]]; then
    mkdir -p "$WORK/icd"
    echo "$NV_OCL" > "$WORK/icd/nvidia.icd"
    OCL_ICD_VENDORS=$WORK/icd run d_ka_info_nvidia_opencl 20 "$KA" info
    # The ICD folder need not hide the system's other OpenCL platforms (PoCL stayed
    # listed first on one such machine): take the OpenCL device that NVIDIA's is.
    nv_sel=$(sed -n 's/^\[\(opencl:[0-9]*\)\] NVIDIA.*/\1/p' "$LOGS/d_ka_info_nvidia_opencl.log" | head -n1)
    if [[ -n $nv_sel ]]; then
      say "d: NVIDIA's OpenCL is $nv_sel"
      OCL_ICD_VENDORS=$WORK/icd KA_DEVICE=$nv_sel ctest_run d_ctest_nvidia_opencl 100 2 "$KERNEL_TESTS"
    else
      say "d: no OpenCL device named NVIDIA in ka info: NVIDIA's OpenCL not tested"
      printf '%s\t%s\t%s\t%s\n' d_ctest_nvidia_opencl 126 0 0 >> "$LOGS/steps.tsv"
    fi
  else
    say "d: $NV_OCL not found: NVIDIA's OpenCL not tested"
    printf '%s\t%s\t%s\t%s\n' d_ctest_nvidia_opencl 126 0 0 >> "$LOGS/steps.tsv"
  fi
fi

# ---- e: benchmarks on cuda:0 ---------------------------------------------------------
if [[ $STEPS == *e* ]]; then
  CUR_STEP=e
  for b in launch wait saxpy graph hostmem; do
    run "e_bench_$b" 60 sh -c '"$0" "$1" --device "$4" --json > "$2" 2> "$3"; rc=$?; cat "$3"; exit $rc' \
      "$KA_BENCH" "$b" "$LOGS/bench_$b.json" "$LOGS/bench_$b.stderr" "$DEV"
  done
  # saxpy at 2^20 and 2^24 floats too (the default run above: 2^28).
  for n in 20 24; do
    run "e_bench_saxpy$n" 30 sh -c '"$0" saxpy --device "$3" --n $((1 << $4)) --json > "$1" 2> "$2"; rc=$?; cat "$2"; exit $rc' \
      "$KA_BENCH" "$LOGS/bench_saxpy$n.json" "$LOGS/bench_saxpy$n.stderr" "$DEV" "$n"
  done
  # The heat time loop: libka and a ka_graph of two steps against the stencil hand-written in
  # CUDA and a CUDA graph of its two steps, 2-D (N x N) and 3-D (N x N x N), libka's kernel
  # with int indices as the hand-written one's (IDX=int); then libka's with size_t indices
  # (the timeloop's default) against the same hand-written kernel, and the six-kernel step
  # (libka alone: no hand-written one).
  tl() { # name seconds args...
    local name=$1 cap=$2
    shift 2
    run "e_bench_$name" "$cap" sh -c 'b=$0 j=$1 e=$2 d=$3; shift 3; "$b" timeloop --device "$d" "$@" --json > "$j" 2> "$e"; rc=$?; cat "$e"; exit $rc' \
      "$KA_BENCH" "$LOGS/bench_$name.json" "$LOGS/bench_$name.stderr" "$DEV" "$@"
  }
  # 200 steps a run at every size (the default's 10 at large sizes leave the final wait's
  # microseconds in the per-step figure).
  tl timeloop_cuda 60 --impl ka,ka_graph,cuda,cuda_graph --sizes 16,64,256,1024,2048,4096,8192 --define IDX=int --steps 200 --reps 9
  tl timeloop3_cuda 60 --dims 3 --impl ka,ka_graph,cuda,cuda_graph --sizes 64,128,256,512 --define IDX=int --steps 200 --reps 9
  tl timeloop_cuda_size_t 40 --impl ka,cuda --sizes 256,1024,4096,8192 --steps 200
  tl timeloop3_cuda_size_t 40 --dims 3 --impl ka,cuda --sizes 128,256,512 --steps 200
  tl timeloop6_cuda 40 --kernels 6 --impl ka,ka_graph --sizes 64,256,1024,4096 --steps 100
  # The Fortran heat loop against the C one on the GPU and PoCL's cores (host: step i).
  fh fortran_heat_cuda 40 "$DEV" 16,64,256,1024,4096 500
  fh fortran_heat_pocl 60 pocl 16,64,256,1024 200
  # The graph's goal on PoCL is against its own launches on the same host.
  run e_bench_graph_pocl 30 sh -c '"$0" graph --device pocl --json > "$1" 2> "$2"; rc=$?; cat "$2"; exit $rc' \
    "$KA_BENCH" "$LOGS/bench_graph_pocl.json" "$LOGS/bench_graph_pocl.stderr"
  # The heat time loop on the host's cores (PoCL) against serial C and OpenMP.
  run e_bench_timeloop_pocl 120 sh -c '"$0" timeloop --device pocl --json > "$1" 2> "$2"; rc=$?; cat "$2"; exit $rc' \
    "$KA_BENCH" "$LOGS/bench_timeloop_pocl.json" "$LOGS/bench_timeloop_pocl.stderr"
  # The six-kernel step: default routing against all-inline and routing off (PoCL's cores).
  run e_bench_timeloop6_pocl 150 sh -c '"$0" timeloop --kernels 6 --sizes 64,128,256,512,1024 --device pocl --json > "$1" 2> "$2"; rc=$?; cat "$2"; exit $rc' \
    "$KA_BENCH" "$LOGS/bench_timeloop6_pocl.json" "$LOGS/bench_timeloop6_pocl.stderr"
  # The primitives: step p.
fi

# ---- f: PTX and SASS of libka's kernels and of hand-written ones ----------------------
# libka's saxpy (`ka-bench saxpy`) and heat stencils (`ka-bench timeloop`, 2-D and 3-D)
# through the CUDA prelude, as libka hands them to NVRTC (prelude, #line, source); the
# hand-written ones as a CUDA programmer writes them (the timeloop's `cuda` column). libka's
# entry of each is the instantiation a launch of its dimensions takes (saxpy 1, heat 2, heat3 3).
if [[ $STEPS == *f* ]]; then
  CUR_STEP=f
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')
  [[ $cc =~ ^[0-9]+$ ]] || cc=90
  {
    # As libka embeds it: the shared header's text in place of its #include.
    sed -e '/^#include "ka_kernel_common.h"/{r '"$REPO/include/ka_kernel_common.h" -e 'd' -e '}' "$REPO/include/ka_kernel_cuda.h"
    printf '#line 1 "kernel source"\n'
    cat <<'EOF'
KA_KERNEL(saxpy, KA_GLOBAL float *y, KA_CONST(float) x, float a, uint n) {
    if (!ka_in_range()) return;
    size_t i = ka_global_id(0);
    y[i] = a * x[i] + y[i];
}
EOF
    "$KA_BENCH" timeloop --print-source ka
  } > "$LOGS/ka_kernels.cu"
  {
    cat <<'EOF'
struct nd_t { unsigned long long x, y, z, w; };
extern "C" __global__ void saxpy(const nd_t nd, float *y, const float *__restrict__ x, float a, unsigned n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nd.x) return;
    y[i] = a * x[i] + y[i];
}
EOF
    "$KA_BENCH" timeloop --print-source cuda
  } > "$LOGS/raw_kernels.cu"
  if command -v nvcc >/dev/null; then
    run f_ptx 40 sh -c 'cd "$0" && nvcc --version | tail -n2 &&
      cp ka_kernels.cu ka_kernels_size_t.cu
      for k in ka_kernels ka_kernels_size_t raw_kernels; do
        d=; [ $k = ka_kernels ] && d=-DIDX=int
        nvcc -ptx -arch=sm_$1 -std=c++17 $d -o $k.ptx $k.cu || exit 1
        if command -v cuobjdump >/dev/null; then
          nvcc -cubin -arch=sm_$1 -std=c++17 $d -o $k.cubin $k.cu && cuobjdump -sass $k.cubin > $k.sass; rm -f $k.cubin
        fi
      done' "$LOGS" "$cc"
  else
    say "f: nvcc not found: no PTX"
    printf '%s\t%s\t%s\t%s\n' f_ptx 127 0 0 >> "$LOGS/steps.tsv"
  fi
  # An entry's instructions: PTX, the lines of its body that are neither directives,
  # labels nor braces; SASS, the lines with an /*addr*/ opcode in its `Function :` block.
  # $2: the entry's name (raw) or its mangled prefix (libka's instantiation).
  ptx_count() { awk -v e="$2" 'index($0, ".entry " e) {on = 1} on && /^\}/ {exit} on && /^[ \t]+(@!?%p[0-9]+[ \t]+)?[a-z]/ {n++} END {print n + 0}' "$1" 2>/dev/null; }
  sass_count() { awk -v e="$2" '/Function :/ {on = $3 == e || (e ~ /^_Z/ && index($3, e) == 1)} on && /^[ \t]+\/\*[0-9a-f]{4}\*\// {n++} END {print n + 0}' "$1" 2>/dev/null; }
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'; }
  {
    echo "instructions per entry (sm_$cc): libka's instantiation for its launch's dimensions against the hand-written kernel;"
    echo "the stencils' indices int as in the hand-written ones (IDX=int), and size_t (the timeloop's default)"
    printf '%-14s %8s %8s %6s %8s %8s %6s\n' entry "ka PTX" "raw PTX" ratio "ka SASS" "raw SASS" ratio
    for e in saxpy:1:ka_kernels heat:2:ka_kernels heat3:3:ka_kernels heat:2:ka_kernels_size_t heat3:3:ka_kernels_size_t; do
      IFS=: read -r name dims file <<< "$e"
      kn=ka_k_$name pre=_Z${#kn}ka_k_${name}ILi${dims}EE label=$name
      [[ $file == *size_t ]] && label="$name size_t"
      kp=$(ptx_count "$LOGS/$file.ptx" "$pre") rp=$(ptx_count "$LOGS/raw_kernels.ptx" "$name(")
      ks=$(sass_count "$LOGS/$file.sass" "$pre") rs=$(sass_count "$LOGS/raw_kernels.sass" "$name")
      printf '%-14s %8s %8s %6s %8s %8s %6s\n' "$label" "$kp" "$rp" "$(ratio "$kp" "$rp")" "$ks" "$rs" "$(ratio "$ks" "$rs")"
    done
    echo "(goal: SASS of saxpy and heat at most 1.15x the hand-written)"
  } > "$LOGS/ptx_compare.txt"
  cp "$LOGS/ka_kernels.ptx" "$LOGS/raw_kernels.ptx" "$OUT/" 2>/dev/null
fi

# ---- g: MPI: mpi_heat on the GPU(s) and on PoCL's cores --------------------------------
# Open MPI's runtime comes with the build (gpu-pack.sh: gpu-mpi/env.sh). Ranks take cuda:N
# by node-local rank (one GPU: both on cuda:0); then the strong-scaling script.
if [[ $STEPS == *g* ]]; then
  CUR_STEP=g
  if [[ -f $BUILD/gpu-mpi/env.sh && -x $BUILD/mpi_heat ]]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    run g_mpi_cuda 60 bash -c 'source "$0/gpu-mpi/env.sh" && unset KA_DEVICE &&
      for n in 1 2; do mpirun --oversubscribe --bind-to none -np $n "$0/mpi_heat" --nx 1024 --ny 1024 --steps 100 --check || exit 1; done' "$BUILD"
    run g_mpi_scaling_cuda 45 bash -c 'source "$0/gpu-mpi/env.sh" && unset KA_DEVICE &&
      GRIDS="4096x4096:200 8192x8192:100" REPS=3 JSON="$1" "$2/scripts/mpi_scaling.sh" "$0" 1x0 2x0' "$BUILD" "$LOGS/mpi_scaling_cuda.json" "$REPO"
    run g_mpi_scaling_pocl 70 bash -c 'source "$0/gpu-mpi/env.sh" && export KA_DEVICE=pocl &&
      GRIDS="1024x1024:100 4096x4096:10" REPS=3 JSON="$1" "$2/scripts/mpi_scaling.sh" "$0" 1x0 2x8 4x4' "$BUILD" "$LOGS/mpi_scaling_pocl.json" "$REPO"
  else
    say "g: no gpu-mpi/env.sh or mpi_heat in the build: MPI not run"
    printf '%s\t%s\t%s\t%s\n' g_mpi_cuda 126 0 0 >> "$LOGS/steps.tsv"
  fi
fi

# ---- h: large inputs and the trace on the GPU ------------------------------------------
if [[ $STEPS == *h* ]]; then
  CUR_STEP=h
  # The primitives over 2^31 + 5 u32 (needs ~16 GiB of host memory): reduce, scan and sort,
  # select and count.
  KA_BIG_TESTS=1 KA_DEVICE=$DEV run h_prims_big 150 "$BUILD/tests/test_prims"
  KA_BIG_TESTS=1 KA_DEVICE=$DEV run h_prims_select_big 60 "$BUILD/tests/test_prims_select"
  # examples/saxpy.c traced on the GPU, the file checked as test_trace checks it.
  run h_trace_saxpy 30 sh -c 'cd "$0" && KA_DEVICE="$2" KA_TRACE="$1/saxpy_trace_cuda.json" ./saxpy &&
    python3 "$3/tests/check_trace.py" "$1/saxpy_trace_cuda.json" saxpy=1 write=2 read=1 wait=1' "$BUILD" "$LOGS" "$DEV" "$REPO"
fi

# ---- i: the host back-end on the CPU cores ---------------------------------------------
# GPU_CHECK_HOST: what of it to run (default all): "suite" and the benchmark runs' names.
HOST_RUNS=${GPU_CHECK_HOST:-suite timeloop_host fortran_heat_host fork_host saxpy_host barriers_host barriers_pocl launch_host compile_host timeloop_host2 fork_host2 timeloop_host1}
if [[ $STEPS == *i* ]]; then
  CUR_STEP=i
  run i_cpu 10 sh -c 'nproc; grep -m1 "model name" /proc/cpuinfo; grep -m1 "^flags" /proc/cpuinfo; gcc --version | head -n1'
  [[ " $HOST_RUNS " == *" suite "* ]] && KA_DEVICE=host ctest_run i_ctest_host 200 4 ""
  hb() { # NAME CAP BENCH ARGS...: ka-bench BENCH ARGS --json into bench_NAME.json
    local name=$1 cap=$2
    shift 2
    [[ " $HOST_RUNS " == *" $name "* ]] || return 0
    run "i_bench_$name" "$cap" sh -c 'j=$1 e=$2; shift 2; "$@" --json > "$j" 2> "$e"; rc=$?; cat "$j" "$e"; exit $rc' \
      _ "$LOGS/bench_$name.json" "$LOGS/bench_$name.stderr" "$@"
  }
  two=(env KA_NUM_THREADS=2 OMP_NUM_THREADS=2 taskset -c 2,3)
  hb timeloop_host 120 "$KA_BENCH" timeloop --device host
  [[ " $HOST_RUNS " == *" fortran_heat_host "* ]] && fh fortran_heat_host 40 host 16,64,256,1024 200
  hb fork_host 30 "$KA_BENCH" fork --device host
  hb saxpy_host 40 "$KA_BENCH" saxpy --device host
  hb barriers_host 60 "$KA_BENCH" barriers --device host
  hb barriers_pocl 90 "$KA_BENCH" barriers --device pocl
  hb launch_host 40 "$KA_BENCH" launch --device host
  hb compile_host 40 "$KA_BENCH" compile --device host
  hb timeloop_host2 120 "${two[@]}" "$KA_BENCH" timeloop --device host
  hb fork_host2 30 "${two[@]}" "$KA_BENCH" fork --device host
  # One thread each: the kernel's code against the C loop's, without the pool.
  hb timeloop_host1 120 env KA_NUM_THREADS=1 OMP_NUM_THREADS=1 taskset -c 2 "$KA_BENCH" timeloop --device host
fi

# ---- m: two GPUs: two devices in one process, mpi_heat with one rank per GPU ---------------
# Nothing on a machine with fewer than two GPUs (said, and in the summary).
if [[ $STEPS == *m* ]]; then
  CUR_STEP=m
  NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  if (( NGPU < 2 )); then
    say "m: ${NGPU} GPU(s) here: the two-GPU runs (test_two_devices on cuda:0 and cuda:1, mpi_heat one rank per GPU) need two: not run"
  else
    KA_DEVICE=cuda:0 KA_DEVICE_2=cuda:1 run m_two_devices 60 "$BUILD/tests/test_two_devices"
    if [[ -f $BUILD/gpu-mpi/env.sh && -x $BUILD/mpi_heat ]]; then
      export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      # Bit for bit: 1 and 2 ranks (one per GPU) against the serial C loop (--check), and
      # the two grids against each other.
      run m_mpi_check 90 bash -c 'source "$0/gpu-mpi/env.sh" && unset KA_DEVICE &&
        for n in 1 2; do mpirun --bind-to none -np $n "$0/mpi_heat" --nx 4096 --ny 4096 --steps 50 --check --out "$1/grid_$n.bin" || exit 1; done &&
        cmp "$1/grid_1.bin" "$1/grid_2.bin" && echo "m: 1 and 2 ranks: the same bits" && rm -f "$1"/grid_?.bin' "$BUILD" "$LOGS"
      run m_mpi_strong 150 bash -c 'source "$0/gpu-mpi/env.sh" && unset KA_DEVICE &&
        GRIDS="4096x4096:200 8192x8192:100" REPS=5 JSON="$1" "$2/scripts/mpi_scaling.sh" "$0" 1x0 2x0' "$BUILD" "$LOGS/mpi_strong_2gpu.json" "$REPO"
      run m_mpi_weak 120 bash -c 'source "$0/gpu-mpi/env.sh" && unset KA_DEVICE &&
        WEAK=1 GRIDS="4096x4096:200" REPS=5 JSON="$1" "$2/scripts/mpi_scaling.sh" "$0" 1x0 2x0' "$BUILD" "$LOGS/mpi_weak_2gpu.json" "$REPO"
      # The device-pointer exchange needs a CUDA-aware MPI; mpi_heat says whether it has one.
      run m_mpi_device 40 bash -c 'source "$0/gpu-mpi/env.sh" && unset KA_DEVICE &&
        mpirun --bind-to none -np 2 "$0/mpi_heat" --nx 4096 --ny 4096 --steps 100 --check --exchange device' "$BUILD"
    else
      say "m: no gpu-mpi/env.sh or mpi_heat in the build: the MPI runs not made"
      printf '%s\t%s\t%s\t%s\n' m_mpi 126 0 0 >> "$LOGS/steps.tsv"
    fi
  fi
fi

# ---- x: a command of the caller's (GPU_CHECK_EXTRA), run by bash from the repository with
# BUILD, KA_BENCH, DEV and LOGS set, after the build's paths are made; its output in x_extra.log.
if [[ $STEPS == *x* && -n ${GPU_CHECK_EXTRA:-} ]]; then
  CUR_STEP=x
  run x_extra 300 env BUILD="$BUILD" KA_BENCH="$KA_BENCH" DEV="$DEV" LOGS="$LOGS" bash -c "cd '$REPO' && $GPU_CHECK_EXTRA"
fi

# ---- p: the primitives against CUB and OpenMP ------------------------------------------
# ka-bench primitives: on the GPU every row against CUB in the same process (libka_cub_bench.so
# beside ka-bench) and the OpenMP loops on the host's cores (informative there: 2 repetitions);
# on the CPU's cores through PoCL and the host back-end, against the OpenMP loops (the goal
# there), 2^24 elements, 5 repetitions.
if [[ $STEPS == *p* ]]; then
  CUR_STEP=p
  read -r -a prims_extra <<< "${GPU_CHECK_PRIMS:-}"
  pb() { # NAME CAP ARGS...: ka-bench primitives ARGS --json into bench_NAME.json
    local name=$1 cap=$2
    shift 2
    run "p_$name" "$cap" sh -c 'j=$1 e=$2; shift 2; "$@" --json > "$j" 2> "$e"; rc=$?; cat "$j" "$e"; exit $rc' \
      _ "$LOGS/bench_$name.json" "$LOGS/bench_$name.stderr" "$KA_BENCH" primitives "$@" ${prims_extra[@]+"${prims_extra[@]}"}
  }
  pb primitives_cuda 150 --device "$DEV" --omp-reps 2
  pb primitives_pocl 150 --device pocl --reps 5
  pb primitives_host 120 --device host --reps 5
  if python3 -c 'import matplotlib' 2>/dev/null; then
    plots=()
    for t in cuda:GPU pocl:PoCL host:host; do
      [[ -s $LOGS/bench_primitives_${t%%:*}.json ]] && plots+=("${t#*:}=$LOGS/bench_primitives_${t%%:*}.json")
    done
    [[ ${#plots[@]} -gt 0 ]] && python3 "$REPO/bench/plot_prims.py" "$LOGS/primitives.png" "${plots[@]}" &&
      cp "$LOGS/primitives.png" "$OUT/"
  fi
fi

# ---- summary ---------------------------------------------------------------------------
jnum() { # jnum FILE KEY [N]: the Nth (default 1st) numeric value of "KEY" in FILE
  grep -oE "\"$2\":-?[0-9][0-9.eE+-]*" "$1" 2>/dev/null | sed -n "${3:-1}p" | cut -d: -f2
}
# goal VALUE OP LIMIT: "met" or "MISSED" (or "?" without a value)
goal() { [[ -z $1 ]] && { echo "?"; return; }; awk -v v="$1" -v l="$3" -v op="$2" \
  'BEGIN { ok = op == "<=" ? v <= l : op == ">=" ? v >= l : v < l; print ok ? "met" : "MISSED" }'; }
S=$LOGS/summary.txt
status=0
{
  echo "libka gpu-check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(elapsed) s of ${BUDGET} s"
  echo "build: ${PACK[KA_PACK_COMMIT]:-unknown} (packed ${PACK[KA_PACK_DATE]:-?})"
  echo "GPU (name, compute capability, driver, memory, max clocks): $(tail -n1 "$LOGS/a_nvidia_smi.log" 2>/dev/null)"
  echo
  echo "steps (exit status 124/137: timed out; 125: not run, out of time; 126/127: tool missing):"
  while IFS=$'\t' read -r name rc secs lim; do
    printf '  %-28s exit %-4s %4ss (limit %ss)\n' "$name" "$rc" "$secs" "$lim"
  done < "$LOGS/steps.tsv"
  echo
  echo "tests (of those listed: passed, failed, timed out, skipped, never run):"
  for t in "b_ctest_cuda:$DEV" c_ctest_pocl:pocl d_ctest_nvidia_opencl:nvidia-opencl i_ctest_host:host; do
    name=${t%%:*} dev=${t#*:}
    [[ -f $LOGS/$name.log ]] || { printf '  %-14s not run\n' "$dev"; continue; }
    read -r p f to s r n <<< "$(ctest_counts "$name")"
    printf '  %-14s %3s listed: %3s passed %3s failed %3s timed out %3s skipped %3s never run\n' "$dev" "$n" "$p" "$f" "$to" "$s" "$r"
    [[ $f != 0 ]] && printf '  %-14s failed: %s\n' "" "$(ctest_names "$name" fail)"
    [[ $to != 0 ]] && printf '  %-14s timed out: %s\n' "" "$(ctest_names "$name" Timeout)"
  done
  # The C++ header and the Fortran module on the GPU (in step b's suite): each test's result.
  if [[ -f $LOGS/b_ctest_cuda.log ]]; then
    printf '  bindings on %s:' "$DEV"
    for bt in test_cpp install_check_cpp test_fortran_layout test_fortran_calls test_fortran_prims fortran_heat fortran_heat_zero_alloc; do
      r=$(grep -E "Test +#[0-9]+: $bt " "$LOGS/b_ctest_cuda.log" | head -n1 | sed -E 's/.*(Passed|\*\*\*[A-Za-z ]+|Failed).*/\1/')
      printf ' %s %s;' "$bt" "${r:-not run}"
    done
    echo
  fi
  echo
  for fj in fortran_heat_cuda fortran_heat_pocl fortran_heat_host; do
    [[ -f $LOGS/bench_$fj.json ]] || continue
    printf '  %s: us per step C, Fortran, Fortran / C [goal <= 1.02]:' "$fj"
    grep -oE '"n":[0-9]+,"c_us_per_step":[0-9.]+,"fortran_us_per_step":[0-9.]+,"fortran_over_c":[0-9.]+' "$LOGS/bench_$fj.json" |
      while IFS=, read -r n c f r; do
        printf ' %s^2 %s %s %s [%s];' "${n#*:}" "${c#*:}" "${f#*:}" "${r#*:}" "$(goal "${r#*:}" "<=" 1.02)"
      done
    echo
  done
  echo
  if [[ $STEPS == *m* ]]; then
    if [[ ${NGPU:-0} -lt 2 ]]; then
      echo "two GPUs (step m): not run: ${NGPU:-0} GPU(s) on this machine"
    else
      echo "two GPUs (step m): goals: strong 8192^2 speedup >= 1.8, weak efficiency >= 0.9"
      for f in m_two_devices m_mpi_check m_mpi_strong m_mpi_weak m_mpi_device; do
        [[ -f $LOGS/$f.log ]] && grep -E 'two devices:|skipped|PASSED|FAILED|same bits|check:|x0 |grid:steps|scaling:|exchange|CUDA-aware' "$LOGS/$f.log" | sed "s/^/  $f: /"
      done
    fi
    echo
  fi
  echo "benchmarks on $DEV (goals of the wait design):"
  L=$LOGS/bench_launch.json W=$LOGS/bench_wait.json X=$LOGS/bench_saxpy.json
  R=$LOGS/bench_launch.results # the "results" array: one object per argument count (and path)
  [[ -f $L ]] && sed 's/.*"results":\[//' "$L" > "$R"
  for i in 1 2 3 4; do
    a=$(jnum "$R" args "$i"); [[ -z $a ]] && continue
    wr=$(jnum "$R" wait_ratio "$i")
    printf '  launch, %2s args (%s): launch %s x raw; launch + wait %s x raw [goal <= 1.05: %s], %s x raw stream sync; waits slept %s\n' \
      "$a" "$(grep -oE '"path":"[^"]*"' "$R" | sed -n "${i}p" | cut -d'"' -f4)" "$(jnum "$R" ratio "$i")" "$wr" \
      "$(goal "$wr" "<=" 1.05)" "$(jnum "$R" stream_sync_ratio "$i")" "$(jnum "$R" ka_waits_slept "$i")"
    printf '    ns per launch + wait: ka %s; raw: event sync %s, poll default event %s, poll blocking-sync event %s, sync blocking-sync event %s\n' \
      "$(jnum "$R" ka_wait_ns "$i")" "$(jnum "$R" raw_wait_ns "$i")" "$(jnum "$R" raw_poll_default_ns "$i")" \
      "$(jnum "$R" raw_poll_blocking_ns "$i")" "$(jnum "$R" raw_sync_blocking_ns "$i")"
  done
  ex=$(jnum "$W" ms_ka_extra_ns)
  printf '  wait, ~1 ms kernel: ka %s ns, raw stream sync %s ns, raw event sync %s ns: ka - raw stream = %s ns [goal <= 20000: %s]\n' \
    "$(jnum "$W" ms_ka_ns)" "$(jnum "$W" ms_raw_stream_ns)" "$(jnum "$W" ms_raw_event_ns)" "$ex" "$(goal "$ex" "<=" 20000)"
  printf '  wait, ~1 ms kernel, spin 0: forever (blocks in the driver) %s ns, with a timeout (callback thread) %s ns\n' \
    "$(jnum "$W" ms_ka_spin0_ns)" "$(jnum "$W" ms_ka_spin0_timed_ns)"
  printf '  wait, ~1 ms kernel, libka launch + ka_queue_finish (the raw stream sync after libka'"'"'s kernel): %s ns\n' \
    "$(jnum "$W" ms_ka_finish_ns)"
  sh=$(jnum "$W" long_wait_cpu_share)
  printf '  wait, %s ms kernel: waiting thread CPU share %s [goal < 0.02: %s] (first such wait %s)\n' \
    "$(jnum "$W" long_wait_ms)" "$sh" "$(goal "$sh" "<" 0.02)" "$(jnum "$W" long_wait_first_cpu_share)"
  printf '  wait, 64 items: ka default %s ns, sleep only %s ns, callback %s ns, eventfd %s ns\n' \
    "$(jnum "$W" ka_default_ns)" "$(jnum "$W" ka_sleep_ns)" "$(jnum "$W" ka_callback_ns)" "$(jnum "$W" ka_eventfd_ns)"
  xr=$(jnum "$X" ka_saxpy_time_over_raw)
  printf '  saxpy, %s floats: ka (default queue) %s ns, raw + stream sync %s ns: %s x [goal <= 1.03: %s]; spin 10 ms %s ns; checked %s; waits polled %s slept %s\n' \
    "$(jnum "$X" n)" "$(jnum "$X" ka_saxpy_ns)" "$(jnum "$X" raw_saxpy_ns)" "$xr" "$(goal "$xr" "<=" 1.03)" \
    "$(jnum "$X" ka_saxpy_spin_ns)" "$(grep -oE '"checked":(true|false)' "$X" 2>/dev/null | cut -d: -f2)" \
    "$(jnum "$X" ka_waits_polled)" "$(jnum "$X" ka_waits_slept)"
  G=$LOGS/bench_graph.json P=$LOGS/bench_graph_pocl.json
  gn=$(jnum "$G" graph_ns_per_kernel) gr=$(jnum "$G" graph_over_raw_graph)
  printf '  graph, %s launches of %s items: ns per kernel: ka_launch %s, ka graph %s [goal <= 600 on an H200: %s], raw launch %s, raw CUDA graph %s; graph / raw graph %s [goal <= 1.1: %s]; native %s; checked %s\n' \
    "$(jnum "$G" kernels)" "$(jnum "$G" items)" "$(jnum "$G" ka_launch_ns_per_kernel)" "$gn" "$(goal "$gn" "<=" 600)" \
    "$(jnum "$G" raw_launch_ns_per_kernel)" "$(jnum "$G" raw_graph_ns_per_kernel)" "$gr" "$(goal "$gr" "<=" 1.1)" \
    "$(jnum "$G" native)" "$(grep -oE '"checked":(true|false)' "$G" 2>/dev/null | cut -d: -f2)"
  pr=$(jnum "$P" graph_over_ka_launch)
  printf '  graph on PoCL (%s): ns per kernel: ka_launch %s, ka graph %s, raw OpenCL %s; graph / ka_launch %s [goal <= 0.8: %s]\n' \
    "$(grep -oE '"path":"[^"]*"' "$P" 2>/dev/null | cut -d'"' -f4)" "$(jnum "$P" ka_launch_ns_per_kernel)" \
    "$(jnum "$P" graph_ns_per_kernel)" "$(jnum "$P" raw_launch_ns_per_kernel)" "$pr" "$(goal "$pr" "<=" 0.8)"
  for n in 20 24; do
    X=$LOGS/bench_saxpy$n.json xr=$(jnum "$X" ka_saxpy_time_over_raw)
    printf '  saxpy, 2^%s floats: ka %s ns, raw + stream sync %s ns: %s x [goal <= 1.03: %s]; raw on libka'"'"'s buffers %s x\n' \
      "$n" "$(jnum "$X" ka_saxpy_ns)" "$(jnum "$X" raw_saxpy_ns)" "$xr" "$(goal "$xr" "<=" 1.03)" "$(jnum "$X" raw_on_ka_time_over_raw)"
  done
  for t in timeloop_cuda timeloop3_cuda timeloop_cuda_size_t timeloop3_cuda_size_t timeloop6_cuda; do
    T=$LOGS/bench_$t.json
    [[ -f $T ]] || continue
    printf '  %s (--dims %s --kernels %s, %s), us per step: libka against hand-written CUDA (> 1: libka slower); checked %s\n' \
      "$t" "$(jnum "$T" dims)" "$(jnum "$T" kernels)" "$([[ $t == *size_t ]] && echo "libka's indices size_t" || echo "libka's indices int")" \
      "$(grep -oE '"checked":(true|false)' "$T" 2>/dev/null | cut -d: -f2)"
    for i in $(seq 1 16); do
      n=$(jnum "$T" n "$i"); [[ -z $n ]] && break
      kr=$(jnum "$T" ka_over_cuda "$i") gr=$(jnum "$T" ka_graph_over_cuda_graph "$i")
      printf '    N %5s: ka %s, cuda %s: ka / cuda %s [goal <= 1.03: %s]; ka_graph %s, cuda_graph %s: ka_graph / cuda_graph %s [goal <= 1.05: %s]\n' "$n" \
        "$(jnum "$T" ka_us "$i")" "$(jnum "$T" cuda_us "$i")" "$kr" "$(goal "$kr" "<=" 1.03)" \
        "$(jnum "$T" ka_graph_us "$i")" "$(jnum "$T" cuda_graph_us "$i")" "$gr" "$(goal "$gr" "<=" 1.05)"
    done
  done
  echo
  [[ -f $LOGS/ptx_compare.txt ]] && cat "$LOGS/ptx_compare.txt"
  for t in cuda pocl host; do
    P=$LOGS/bench_primitives_$t.json
    [[ -f $P ]] || continue
    echo
    echo "primitives ($t; speed ratios: the other's time / libka's; goals):"
    python3 "$REPO/bench/plot_prims.py" --table "$P" 2>&1 | sed 's/^/  /'
  done
  for f in h_prims_big h_trace_saxpy; do
    [[ -f $LOGS/$f.log ]] && { echo; echo "$f:"; tail -n 12 "$LOGS/$f.log" | sed 's/^/  /'; }
  done
  if [[ -f $LOGS/g_mpi_cuda.log ]]; then
    echo
    echo "MPI (mpi_heat):"
    grep -E 'rows|us per step|check:|kernel cache' "$LOGS/g_mpi_cuda.log" | sed 's/^/  /'
    for f in g_mpi_scaling_cuda g_mpi_scaling_pocl; do
      [[ -f $LOGS/$f.log ]] && { echo "  $f:"; sed 's/^/    /' "$LOGS/$f.log"; }
    done
  fi
} > "$S"
while IFS=$'\t' read -r name rc secs lim; do [[ $rc != 0 ]] && status=1; done < "$LOGS/steps.tsv"
cp "$S" "$OUT/summary.txt"
say "summary: $OUT/summary.txt"
cat "$S"
tar -czf "$OUT/gpu-check.tar.gz" -C "$WORK" gpu-check 2>/dev/null || { say "tar failed"; status=1; }
say "gpu-check: done in $(elapsed)s: $OUT/gpu-check.tar.gz"
exit $status
