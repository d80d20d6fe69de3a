#!/usr/bin/env bash
# Device exploration 2: int indices, tiles, dimension variants, six-kernel step, saxpy placement, launch, wait, compile.
set -u
B=$PWD/build-gpu-pack; O=$1; mkdir -p $O
export LD_LIBRARY_PATH=$B/gpu-libs:$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KA_CACHE_DIR=/tmp/kcache-x PATH=$PATH:/usr/local/cuda/bin
KB=$B/ka-bench
T0=$(date +%s)
x() { # name cmd...
  local n=$1; shift
  echo "== $n: $* (+$(( $(date +%s) - T0 ))s)" >> $O/explore.txt
  timeout 90 "$@" > $O/$n.txt 2>&1
  cat $O/$n.txt >> $O/explore.txt
}
TL="$KB timeloop --device cuda:0 --reps 7"
x d2_int $TL --impl ka,cuda,ka_graph,cuda_graph --sizes 16,64,256,1024,4096,8192 --define IDX=int
x d2_int_generic $TL --impl ka,cuda,ka_graph,cuda_graph --sizes 256,1024,4096,8192 --define IDX=int --define KA__DIMS_GENERIC
x d2_int_64x4 $TL --impl ka,cuda --sizes 1024,4096,8192 --define IDX=int --wg 64,4
x d2_int_128x2 $TL --impl ka,cuda --sizes 1024,4096,8192 --define IDX=int --wg 128,2
x d2_sizet $TL --impl ka,cuda --sizes 256,1024,4096,8192
x d3_int $TL --dims 3 --impl ka,cuda,ka_graph,cuda_graph --sizes 64,128,256,512 --define IDX=int
x d3_int_generic $TL --dims 3 --impl ka,cuda --sizes 128,256,512 --define IDX=int --define KA__DIMS_GENERIC
x d3_int_64x4x1 $TL --dims 3 --impl ka,cuda --sizes 256,512 --define IDX=int --wg 64,4,1
x d3_int_32x4x2 $TL --dims 3 --impl ka,cuda --sizes 256,512 --define IDX=int --wg 32,4,2
x d3_sizet $TL --dims 3 --impl ka,cuda --sizes 128,256,512
for w in 32,8 16,16 64,4 128,2; do
  x k6_$w $TL --kernels 6 --impl ka,ka_graph --sizes 256,1024,4096 --wg $w
done
x saxpy28 $KB saxpy --device cuda:0 --reps 11
x launch $KB launch --device cuda:0 --args 2,40 --reps 7
x wait $KB wait --device cuda:0
x compile $KB compile --device cuda:0 --reps 3
echo "== done (+$(( $(date +%s) - T0 ))s)" >> $O/explore.txt
