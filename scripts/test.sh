#!/usr/bin/env bash
# The whole test suite: a -Werror build with its tests, then the same suite
# under ASan+UBSan and under TSan. Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)
run() { # name, cmake args...
  local dir=build-$1; shift
  echo "=== $dir: $*"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKA_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  (cd "$dir" && ctest --output-on-failure --timeout 900)
}
run release
run asan -DKA_SANITIZE=address,undefined
run tsan -DKA_SANITIZE=thread
echo "all test configurations passed"
