#!/bin/sh
# Prints symbols.inc: every driver entry point the shim must export as a forwarder.
set -eu
CUDA="${CUDA_PATH:-/usr/local/cuda}"
echo "// Driver entry points the shim exports as plain forwarders: the union of the CUDA 13.0 stub"
echo "// libcuda.so's dynamic symbols and the cu* names found in libcudart_static.a (the runtime may dlsym"
echo "// any of them). cuGetProcAddress and cuGetProcAddress_v2 are not here: shim.cc defines them."
echo "// Regenerate: tools/faults/gen_symbols.sh > tools/faults/symbols.inc"
{ nm -D "$CUDA/lib64/stubs/libcuda.so" | awk '$2=="T"{print $3}'
  strings "$CUDA/lib64/libcudart_static.a" | grep -E '^cu[A-Z][A-Za-z0-9_]*$'; } |
  sort -u | grep -vx 'cuGetProcAddress\|cuGetProcAddress_v2' | sed 's/.*/PL_SYM(&)/'
