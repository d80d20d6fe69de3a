#!/usr/bin/env bash
# Builds libka for a machine with an NVIDIA GPU that lacks the build's
# development packages, in one folder that can be copied there whole:
#
#   scripts/gpu-pack.sh [BUILD_DIR]        (default: build-gpu-pack, inside the clone)
#
# Then, on the GPU machine, from a copy of the same clone with BUILD_DIR beside
# it at the same place:  scripts/gpu-check.sh BUILD_DIR OUTDIR
#
# What it does:
#   - configures and builds with -DKA_REQUIRE_CUDA=ON (the CUDA back-end must
#     build: cuda.h is needed here, the driver only there), RelWithDebInfo, with
#     ka-bench (gpu-check.sh runs it) and, where the CUDA toolkit's nvcc is
#     found, CUB's primitives for `ka-bench primitives` (libka_cub_bench.so,
#     CUDA's runtime and C++ library linked in: it needs only the driver there);
#   - copies the shared libraries the binaries need that such a machine may
#     lack (cmocka, xxHash, and libuv where the build found it: found with ldd)
#     into BUILD_DIR/gpu-libs; where the build has the MPI example, Open MPI's
#     runtime (mpirun, libraries, plugins) into BUILD_DIR/gpu-mpi, with an
#     env.sh that relocates it;
#   - writes BUILD_DIR/gpu-pack.env: the absolute paths the build was made at
#     (CTest files, RPATHs and some tests hold them; gpu-check.sh recreates
#     them as symbolic links), the commit, the date;
#   - makes it lean: removes object files and dependency files (nothing run
#     needs them; a later `cmake --build` here rebuilds), test caches, and
#     debug sections of the binaries (KA_PACK_STRIP=0 keeps them); prints the
#     folder's size against the 64 MiB a copy may take with the repository.
# Exit status: 0 packed; 1 a failed build or a library not found.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd -P)
cd "$repo"
build=${1:-build-gpu-pack}
jobs=$(nproc)

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKA_WERROR=ON -DKA_REQUIRE_CUDA=ON -DKA_SANITIZE= \
  -DKA_BUILD_BENCH=ON -DKA_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j"$jobs"
build=$(cd "$build" && pwd -P)
for prog in ka ka-bench; do
  [[ -x $build/$prog ]] || { echo "gpu-pack: no $prog in $build"; exit 1; }
done
# CUB's primitives for `ka-bench primitives` (libka_cub_bench.so): built by the build where
# CMake found nvcc; then it must be there.
if grep -q '^KA_NVCC:FILEPATH=/' "$build/CMakeCache.txt" 2>/dev/null && ! grep -q '^KA_BUILD_CUB_BENCH:BOOL=OFF' "$build/CMakeCache.txt"; then
  [[ -f $build/libka_cub_bench.so ]] || { echo "gpu-pack: nvcc found but no libka_cub_bench.so in $build"; exit 1; }
  echo "gpu-pack: CUB's primitives: $build/libka_cub_bench.so"
else
  echo "gpu-pack: no nvcc: ka-bench primitives will run without CUB"
fi

# ELF files of the build: the library, the tool, tests, examples.
mapfile -t elves < <(find "$build" -type f \( -perm -u+x -o -name '*.so*' \) -not -path '*/CMakeFiles/*' \
  -exec sh -c 'head -c4 "$1" | grep -q "ELF" && echo "$1"' _ {} \;)
[[ ${#elves[@]} -gt 0 ]] || { echo "gpu-pack: no binaries in $build"; exit 1; }

# The libraries to carry: each named one, where the binaries resolve it here.
mkdir -p "$build/gpu-libs"
missing=0
# libgomp.so.1: GCC's OpenMP runtime, which ka-bench's OpenMP loops
# (primitives, timeloop) need and a machine without GCC may lack.
for want in libcmocka.so.0 libxxhash.so.0 libuv.so.1 libgomp.so.1; do
  path=$(for f in "${elves[@]}"; do ldd "$f" 2>/dev/null || true; done |
    awk -v w="$want" '$1 == w && $3 ~ /^\// && !found {print $3; found = 1}')
  if [[ -z $path && ( $want == libuv.so.1 || $want == libgomp.so.1 ) ]]; then # optional: the build found no libuv, no OpenMP
    echo "gpu-pack: no binary of the build links $want: not carried"
    continue
  elif [[ -z $path ]]; then
    echo "gpu-pack: no binary of the build links $want (or ldd cannot resolve it)"
    missing=1
    continue
  fi
  cp -L "$path" "$build/gpu-libs/$want"
  echo "gpu-pack: $want <- $path"
done
[[ $missing == 0 ]] || exit 1

# Open MPI's runtime, where the build has the MPI example: such a machine may
# have no MPI. Relocated: gpu-mpi/env.sh points Open MPI's install paths
# (OPAL_*) and the loader at the copy; only the shared-memory transports.
if [[ -x $build/mpi_heat ]] && command -v orterun > /dev/null; then
  m=$build/gpu-mpi
  rm -rf "$m"
  mkdir -p "$m/bin" "$m/lib" "$m/share" "$m/etc"
  ompi_lib=$(dirname "$(ldd "$build/mpi_heat" | awk '$1 == "libmpi.so.40" {print $3}')")
  pkglib=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
  cp -L "$(command -v orterun)" "$m/bin/mpirun"
  cp -a "$pkglib" "$m/lib/openmpi3"
  cp -a "$(ompi_info --path pkgdatadir --parsable | sed -n 's/^path:pkgdatadir://p')" "$m/share/openmpi"
  cp "$(ompi_info --path sysconfdir --parsable | sed -n 's/^path:sysconfdir://p')/openmpi-mca-params.conf" "$m/etc/"
  for l in $( (ldd "$build/mpi_heat"; ldd "$m/bin/mpirun"; for f in "$m"/lib/openmpi3/mca_{btl,pml,pmix,ess,odls,plm,rmaps,state,errmgr,grpcomm,rml,oob,routed,schizo,coll,osc}_*.so; do ldd "$f" 2>/dev/null; done) |
      awk '$3 ~ /^\// {print $3}' | sort -u | grep -E '/lib(mpi|open-|pmix|hwloc|event|mca_common|udev|numa|z\.so)'); do
    cp -L "$l" "$m/lib/"
  done
  cat > "$m/env.sh" <<'ENV'
# Source this to use the Open MPI copied here (scripts/gpu-pack.sh).
R=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX=$R OPAL_EXEC_PREFIX=$R OPAL_BINDIR=$R/bin OPAL_LIBDIR=$R/lib OPAL_PKGLIBDIR=$R/lib/openmpi3
export OPAL_DATAROOTDIR=$R/share OPAL_DATADIR=$R/share OPAL_PKGDATADIR=$R/share/openmpi OPAL_SYSCONFDIR=$R/etc
export OMPI_MCA_mca_base_component_path=$R/lib/openmpi3 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
export OMPI_MCA_osc=pt2pt,sm OMPI_MCA_mtl=^ofi,psm,psm2
# A machine's own PMIx plugins may not match the copied PMIx: the compression one fails to load
# (harmless: no compression of start-up data) and would warn once per process.
export PMIX_MCA_pcompress_base_silence_warning=1
export LD_LIBRARY_PATH=$R/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PATH=$R/bin:$PATH
ENV
  echo "gpu-pack: Open MPI's runtime <- $ompi_lib, $pkglib: $(du -sh "$m" | cut -f1)"
fi

# Lean: what only building needs, and leftovers of local test runs.
find "$build" \( -name '*.o' -o -name '*.o.d' -o -name '*.d' \) -path '*/CMakeFiles/*' -type f -delete
rm -rf "$build/tests/kcache" "$build/Testing"
if [[ ${KA_PACK_STRIP:-1} != 0 ]]; then
  for f in "${elves[@]}"; do strip --strip-debug "$f" 2>/dev/null || true; done
fi

commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
dirty=$( (git status --porcelain --untracked-files=no 2>/dev/null || true) | head -c1)
cat > "$build/gpu-pack.env" <<EOF
KA_PACK_SRC=$repo
KA_PACK_BUILD=$build
KA_PACK_COMMIT=$commit${dirty:+ (with uncommitted changes)}
KA_PACK_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
EOF

rel=${build#"$repo"/}
[[ $rel == "$build" ]] && echo "gpu-pack: note: $build is outside the clone; it must be carried to the same place there"
size_build=$(du -sk "$build" | cut -f1)
size_repo=$( (git ls-files -z --cached --others --exclude-standard 2>/dev/null || true) | du -ck --files0-from=- 2>/dev/null |
  tail -n1 | cut -f1)
echo "gpu-pack: $build: $((size_build / 1024)) MiB; the clone's files: $((size_repo / 1024)) MiB (together at most 64 MiB)"
if (( size_build + size_repo > 64 * 1024 )); then
  echo "gpu-pack: too large to carry"
  exit 1
fi
echo "gpu-pack: carry '$rel'; there: scripts/gpu-check.sh $rel OUTDIR"
