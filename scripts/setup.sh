#!/usr/bin/env bash
# Installs the Debian 12 packages libka needs (clang-15: the dialect test compiles
# every program as strict OpenCL C 1.2 with it; its clang++-15 builds the C++
# test in scripts/test.sh; g++ the C++ test elsewhere; gfortran: the Fortran module), when missing (run as root, or
# with sudo available). Idempotent: does nothing when all are present.
set -euo pipefail
pkgs=(build-essential g++ cmake pkg-config ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
      libcmocka-dev libxxhash-dev libuv1-dev valgrind python3 python3-matplotlib clang-15
      openmpi-bin libopenmpi-dev gfortran)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
