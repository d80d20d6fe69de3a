#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a small
# program against it twice: through pkg-config and through find_package(libka);
# runs the installed `ka` (without LD_LIBRARY_PATH: its RUNPATH must lead to
# the library); checks that `ka-bench` is not installed and that libka.pc's
# paths are plain.
# A sanitizer build of libka needs its consumers built with the same
# -fsanitize flags (the runtime must come first), given as the third argument,
# and the same compiler, the fourth. The fifth, the Fortran compiler of a build
# with the Fortran module (empty: none), builds a Fortran consumer too.
set -euo pipefail
build=$1 src=$2 san=${3:-} cc=${4:-cc} fc=${5:-}
flags=()
[[ -n $san ]] && flags=(-fsanitize="$san" -fno-omit-frame-pointer)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libka.so' | head -n1)")
# Nothing may come from the environment: the installed files must find each other.
unset LD_LIBRARY_PATH
# pkg-config gives plain paths under the prefix (no "lib/pkgconfig/../..").
pc_flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs libka)
if [[ $pc_flags != *"-I$prefix/include"* || $pc_flags != *"-L$libdir"* || $pc_flags == *..* ]]; then
  echo "install check: libka.pc gives '$pc_flags', not paths under $prefix"; exit 1
fi
"$cc" "${flags[@]}" -o "$prefix/by_pkgconfig" "$src/tests/consumer/main.c" $pc_flags -Wl,-rpath,"$libdir"
"$prefix/by_pkgconfig"
cmake -S "$src/tests/consumer" -B "$prefix/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="${flags[*]}" -DCMAKE_EXE_LINKER_FLAGS="${flags[*]}" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"$prefix/consumer-build/consumer"
# A build copied to a machine without its Fortran compiler: the module is installed, the
# consumer cannot be built there; said, not hidden.
if [[ -n $fc && ! -x $fc ]]; then
  echo "install check: the Fortran consumer is not built: $fc is not on this machine"
  fc=
fi
if [[ -n $fc ]]; then
  test -f "$prefix/include/libka/fortran/libka.mod"
  cmake -S "$src/tests/consumer_fortran" -B "$prefix/consumer-fortran-build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_Fortran_COMPILER="$fc" -DCMAKE_Fortran_FLAGS="${flags[*]}" -DCMAKE_EXE_LINKER_FLAGS="${flags[*]}" >/dev/null
  cmake --build "$prefix/consumer-fortran-build" >/dev/null
  "$prefix/consumer-fortran-build/consumer_fortran"
fi
test -f "$prefix/include/ka.h" && test -x "$prefix/bin/ka"
# The installed `ka` runs from the prefix (its RUNPATH leads to the library).
"$prefix/bin/ka" version >/dev/null
"$prefix/bin/ka" run --n 1000 >/dev/null
# ka-bench is built for the build tree only, never installed.
if find "$prefix" -name 'ka-bench*' | grep -q .; then echo "install check: ka-bench was installed"; exit 1; fi
echo "install check: ka and the pkg-config and find_package consumers${fc:+ (and the Fortran one)} ran from $prefix"
