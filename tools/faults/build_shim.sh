#!/bin/sh
# Builds the fault shim with g++ alone (for a GPU machine without Bazel):
#   tools/faults/build_shim.sh OUT_DIR      -> OUT_DIR/libcuda.so.1
# Needs g++ and the CUDA headers ($CUDA_PATH/include, default /usr/local/cuda/include).
# Exit codes: 0 built; 1 the compiler failed; 2 bad usage.
set -eu
if [ $# -ne 1 ]; then echo "usage: $0 OUT_DIR" >&2; exit 2; fi
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CUDA="${CUDA_PATH:-/usr/local/cuda}"
if [ ! -f "$CUDA/include/cuda.h" ]; then echo "build_shim: no $CUDA/include/cuda.h (set CUDA_PATH)" >&2; exit 2; fi
OUT="$(mkdir -p "$1" && cd "$1" && pwd)"
cd "$ROOT"
# The mechanism, the registry and every area of the catalogue (catalogue/*.cc).
g++ -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -I. -I"$CUDA/include" -Wall \
  tools/faults/shim.cc tools/faults/hooks.cc tools/faults/catalogue.cc tools/faults/catalogue/*.cc \
  tools/faults/exports.S -o "$OUT/libcuda.so.1" -ldl -lpthread || { echo "build_shim: g++ failed" >&2; exit 1; }
echo "build_shim: $OUT/libcuda.so.1"
