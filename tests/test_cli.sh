#!/usr/bin/env bash
# The `ka` and `ka-bench` programs' exit statuses and messages: 0 success, 1 a
# run-time failure, 2 a usage error whose message on stderr names the option
# and value.
# Usage: test_cli.sh PATH_TO_KA [PATH_TO_KA_BENCH]   (ka-bench's cases only with the second)
# Device-independent cases use the null device; the few that must compile or
# run a kernel use the default device (PoCL). Nothing here depends on timing.
set -uo pipefail
ka=${1:?usage: test_cli.sh PATH_TO_KA [PATH_TO_KA_BENCH]}
kabench=${2:-}
[[ -x $ka ]] || { echo "no ka program at $ka"; exit 1; }
[[ -z $kabench || -x $kabench ]] || { echo "no ka-bench program at $kabench"; exit 1; }
prog=$ka # what check runs
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0 checks=0

# check RC [--stdout] [PATTERN...] -- ARGS...: runs `$prog ARGS`, expects exit
# status RC and every PATTERN (fixed strings) in stderr, or in stdout after
# --stdout. A usage error (2) or failure (1) must say something on stderr; a
# success must say nothing there.
check() {
  local want=$1 stream=err pats=()
  shift
  [[ $1 == --stdout ]] && { stream=out; shift; }
  while [[ $1 != -- ]]; do pats+=("$1"); shift; done
  shift
  checks=$((checks + 1))
  "$prog" "$@" >"$dir/out" 2>"$dir/err"
  local rc=$? bad=
  [[ $rc == "$want" ]] || bad="exit status $rc, want $want"
  for p in "${pats[@]}"; do
    grep -qF -- "$p" "$dir/$stream" || bad="${bad:+$bad; }no '$p' in std$stream"
  done
  if [[ $want != 0 && ! -s $dir/err ]]; then bad="${bad:+$bad; }nothing on stderr"; fi
  if [[ $want == 0 && -s $dir/err ]]; then bad="${bad:+$bad; }stderr not empty"; fi
  if [[ -n $bad ]]; then
    fails=$((fails + 1))
    printf 'FAIL  %s %s: %s\n' "${prog##*/}" "$*" "$bad"
    sed 's/^/      stdout: /' "$dir/out" | head -20
    sed 's/^/      stderr: /' "$dir/err" | head -20
  else
    printf 'ok    %s %s -> %s\n' "${prog##*/}" "$*" "$rc"
  fi
}

printf 'KA_KERNEL(k, KA_GLOBAL float *p) { p[ka_global_id(0)] = X; }\n' >"$dir/ok.cl"
printf 'KA_KERNEL(k, KA_GLOBAL float *p) { p[0] = undefined_thing; }\n' >"$dir/broken.cl"
: >"$dir/empty.cl"
printf 'KA_KERNEL(k, KA_GLOBAL float *p) { }\n\0junk\n' >"$dir/nul.cl"

# --- usage errors: exit 2, the option and the value named ---------------------
check 2 "--n" "'-1'" "negative" -- run --n -1
check 2 "--n" "'99999999999'" "out of range" -- run --n 99999999999
check 2 "--n" "'184467440737095516160'" "out of range" -- run --n 184467440737095516160
check 2 "--n" "'abc'" "not an integer" -- run --n abc
check 2 "--n" "'12abc'" "not an integer" -- run --n 12abc
check 2 "--n" "'0'" -- run --n 0
check 2 "--n" "empty" -- run --n ""
check 2 "'--bogus'" -- run --bogus
check 2 "'--n'" "needs a value" -- run --n
check 2 "'extra'" -- run --device null extra
check 2 "'--bogus'" -- info --bogus
check 2 "'--json'" "takes no value" -- info --json=yes
check 2 "'stray'" -- info stray
check 2 "/dev/zero" "not a regular file" -- build /dev/zero
check 2 "/nonexistent" "No such file" -- build /nonexistent
check 2 "$dir" "a directory" -- build "$dir"
check 2 "empty.cl" "empty" -- build "$dir/empty.cl"
check 2 "nul.cl" "NUL byte" -- build "$dir/nul.cl"
check 2 "no FILE" -- build --device null
check 2 "'--bogus'" -- build "$dir/ok.cl" --bogus
check 2 "'-D'" "needs a value" -- build "$dir/ok.cl" -D
check 2 "'nosuch'" -- nosuch
check 2 "'bench'" -- bench launch
check 2 "usage:" --
check 2 "'--bogus'" -- --bogus
check 2 "'x'" -- version x
check 2 "'x'" -- help run x
check 2 "usage: ka cache" -- cache
check 2 "unknown cache command 'bogus'" -- cache bogus
check 2 "'--bogus'" -- cache info --bogus
check 2 "'--json'" "takes no value" -- cache info --json=1
check 2 "'stray'" -- cache clear stray
check 2 "'--all'" -- cache clear --all

# --- --help: usage on stdout, exit 0 -----------------------------------------
check 0 --stdout "usage: ka" -- --help
check 0 --stdout "usage: ka" -- -h
check 0 --stdout "usage: ka" -- help
check 0 --stdout "usage: ka run" -- help run
for c in info build run cache version; do
  check 0 --stdout "usage: ka $c" -- $c --help
done
check 0 --stdout "usage: ka cache" -- help cache
check 0 --stdout "usage: ka cache info" -- cache info --help
check 0 --stdout "usage: ka cache clear" -- cache help clear

# --- run-time failures: exit 1 ------------------------------------------------
# The null device's largest buffer is 1 GiB: N is not cut to 32 bits, it is refused.
check 1 "--n 4294967295" "largest" -- run --device null --n 4294967295
check 1 "no device matches" -- run --device no-such-device --n 10
check 1 "no device matches" -- build "$dir/ok.cl" -DX=1 --device no-such-device
check 1 "build failed" "undefined_thing" -- build "$dir/broken.cl"

# --- what works ---------------------------------------------------------------
check 0 --stdout "libka " -- version
check 0 --stdout "device" -- info
# The host device not listed, and libka's reason (a directory is no compiler).
KA_CC=$dir check 0 --stdout "[host] not listed: ka_device_open: host: \$KA_CC is '$dir'" "not an executable program" -- info
check 0 --stdout '"devices":' -- info --json
if ! python3 -m json.tool "$dir/out" >/dev/null; then
  fails=$((fails + 1))
  echo "FAIL  ka info --json: not valid JSON"
fi
check 0 --stdout "built for null device" -- build "$dir/ok.cl" -D X=2.0f --device null
check 0 --stdout "built for" -- build "$dir/ok.cl" -DX=1.0f
check 0 --stdout "built for" -- build -DX=1.0f -- "$dir/ok.cl"
check 0 --stdout "saxpy: n=1000, 0 wrong elements: OK" -- run --n 1000
check 0 --stdout "saxpy: n=1000, 0 wrong elements: OK" -- run --n=1000

# --- ka cache: a directory of its own; info and clear, and only libka's files go
export KA_CACHE_DIR=$dir/kcache
check 0 --stdout "state           on" "0 entries" "bound           1073741824 bytes" -- cache info
check 0 --stdout "0 files removed" -- cache clear
check 0 --stdout "built for" -- build "$dir/ok.cl" -DX=3.0f
check 0 --stdout "1 entry," -- cache info
check 0 --stdout '"state":"on"' '"entries":1' -- cache info --json
if ! python3 -m json.tool "$dir/out" >/dev/null; then
  fails=$((fails + 1))
  echo "FAIL  ka cache info --json: not valid JSON"
fi
check 0 --stdout '"kernel_cache":{' -- info --json
: >"$KA_CACHE_DIR/notes.txt"
: >"$KA_CACHE_DIR/0123456789abcdef0123456789abcdef.tmp.XXXXXX"
check 0 --stdout "2 files removed" -- cache clear
check 0 --stdout "0 entries" -- cache info
[[ -e $KA_CACHE_DIR/notes.txt ]] || { fails=$((fails + 1)); echo "FAIL  ka cache clear removed a file that is not libka's"; }
KA_CACHE=0 check 0 --stdout "state           off" -- cache info
KA_CACHE_MAX_BYTES=64M check 0 --stdout "bound           67108864 bytes" -- cache info
KA_CACHE_MAX_BYTES=0 check 0 --stdout "bound           none" -- cache info
chmod 0777 "$KA_CACHE_DIR"
check 0 --stdout "state           unusable" "writable only by it" -- cache info
check 1 "ka cache clear" "writable only by it" -- cache clear
chmod 0700 "$KA_CACHE_DIR"
KA_CACHE_DIR=$dir/$(printf 'a%.0s' {1..300}) check 0 --stdout "unusable" "300 bytes" -- cache info
KA_CACHE_DIR=$dir/$(printf 'a%.0s' {1..300}) check 0 --stdout "kernel cache" "unusable" "300 bytes" -- info
unset KA_CACHE_DIR

# --- ka-bench: the same parser; its benchmarks' table ---------------------------
if [[ -n $kabench ]]; then
  prog=$kabench
  check 2 "'--bogus'" -- launch --bogus
  check 2 "--args" "'0'" -- launch --args 0
  check 2 "--args" "'x'" -- launch --args 2,x
  check 2 "--impl" "'fast'" -- launch --impl fast
  check 2 "--path" "'nowhere'" -- launch --path nowhere
  check 2 "--iterations" "'-5'" -- launch --iterations -5
  check 2 "--reps" "'abc'" -- wait --reps abc
  check 2 "--spin" "'-1'" -- wait --spin -1
  check 2 "--max" "'1'" -- route --max 1
  check 2 "--n" "'99999999999'" -- saxpy --n 99999999999
  check 2 "--wg" "'0'" -- saxpy --wg 0
  check 2 "--reps" "'33'" -- compile --reps 33
  check 2 "--kernels" "'0'" -- graph --kernels 0
  check 2 "--items" "'x'" -- graph --items x
  check 2 "unknown benchmark 'nosuch'" "launch" -- nosuch
  check 2 "usage: ka-bench" --
  check 2 "'--bogus'" -- --bogus
  check 2 "'x'" -- list x
  check 2 "'--json'" -- list --json
  check 0 --stdout "usage: ka-bench NAME" -- --help
  check 0 --stdout "usage: ka-bench NAME" -- help
  check 0 --stdout "usage: ka-bench launch" -- help launch
  benches=$("$kabench" list | cut -d' ' -f1)
  for b in $benches list; do
    check 0 --stdout "usage: ka-bench $b" -- "$b" --help
  done
  # list and --help come from one table: the same benchmarks, each with a summary.
  check 0 --stdout "launch" "wait" "route" "compile" "saxpy" "graph" -- list
  listed=$("$kabench" --help | awk '/^  [a-z]+  +[^ ]/ && $1 != "list" {print $1}')
  if [[ $listed != "$benches" ]]; then
    fails=$((fails + 1))
    echo "FAIL  ka-bench: list gives '$(echo $benches)', --help '$(echo $listed)'"
  fi
  check 1 "no device matches" -- launch --device no-such-device --iterations 1 --reps 1
  check 0 --stdout '"ratio":' -- launch --iterations 20 --reps 1 --args 2 --path routed --json
  check 0 --stdout '"checked":true' -- barriers --quick --reps 1 --json
  check 0 --stdout '"parallel_over_omp":' -- fork --iterations 20 --reps 1 --json
  check 2 "--iterations" -- fork --iterations 0
  check 2 "--only" "'bogus'" -- primitives --only bogus
  check 0 --stdout '"checked":true' '"row":"reduce_u32"' -- primitives --n 4096 --sort-n 4096 --iterations 1 --reps 1 --only copy,reduce_u32 --json
fi

echo "$checks checks, $fails failed"
[[ $fails == 0 ]]
