#!/usr/bin/env bash
# The whole test suite: a -Werror build with its tests, then the same suite
# under ASan+UBSan and under TSan; then -Werror builds in the other build
# types and with clang. Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)
# Where the CUDA headers are (CI's machines have the toolkit, not a GPU), the
# CUDA back-end must build, so it cannot rot; its GPU tests then skip.
cuda=()
if [[ -f /usr/local/cuda/include/cuda.h || -f /usr/include/cuda.h ]]; then
  cuda=(-DKA_REQUIRE_CUDA=ON)
  echo "test: CUDA headers found: the CUDA back-end is built; its tests skip without a GPU"
else
  echo "test: no CUDA headers: the CUDA back-end is not built"
fi
run() { # name, cmake args...
  local dir=build-$1; shift
  echo "=== $dir: $*"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKA_WERROR=ON -DKA_REQUIRE_MPI=ON -DKA_REQUIRE_FORTRAN=ON "${cuda[@]}" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  (cd "$dir" && ctest --output-on-failure --timeout 900)
  # The whole suite again on the host back-end (tests that need another
  # back-end skip and say so), but test_host_exec: it opens no device, and
  # ran above.
  echo "=== $dir: the suite on KA_DEVICE=host"
  (cd "$dir" && KA_DEVICE=host ctest --output-on-failure --timeout 900 -E '^test_host_exec$')
}
# Users build with any build type and with gcc or clang: each of these must
# build warning-free (-Werror); the suite itself runs in the three above.
build_only() { # name, cmake args...
  local dir=build-$1; shift
  echo "=== $dir (build only): $*"
  cmake -S . -B "$dir" -DKA_WERROR=ON -DKA_REQUIRE_MPI=ON -DKA_REQUIRE_FORTRAN=ON "${cuda[@]}" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}
run release
run asan -DKA_SANITIZE=address,undefined
run tsan -DKA_SANITIZE=thread
build_only gcc-release -DCMAKE_BUILD_TYPE=Release
build_only gcc-debug -DCMAKE_BUILD_TYPE=Debug
CC=clang-15 CXX=clang++-15 build_only clang-release -DCMAKE_BUILD_TYPE=Release
echo "all test configurations passed"
