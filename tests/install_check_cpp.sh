#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds the C++ consumer
# (tests/consumer_cpp) against it through find_package(libka), with the
# installed ka.hpp, and runs it. Arguments as tests/install_check.sh's, the
# fourth being the C++ compiler.
set -euo pipefail
build=$1 src=$2 san=${3:-} cxx=${4:-c++}
flags=()
[[ -n $san ]] && flags=(-fsanitize="$san" -fno-omit-frame-pointer)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
unset LD_LIBRARY_PATH
test -f "$prefix/include/ka.hpp"
cmake -S "$src/tests/consumer_cpp" -B "$prefix/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="${flags[*]}" -DCMAKE_EXE_LINKER_FLAGS="${flags[*]}" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"$prefix/consumer-build/consumer_cpp"
echo "install check (C++): the find_package consumer ran from $prefix"
