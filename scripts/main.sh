#!/usr/bin/env bash
# The main job on the default device (PoCL): device info, the saxpy example
# with its check, a short launch benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
build/ka info
build/saxpy
build/ka-bench launch --iterations 500 --reps 5
