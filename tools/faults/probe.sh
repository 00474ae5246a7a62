#!/bin/sh
# Probe the driver entry points the test binaries really request, and check that the shim alone
# (no fault) changes no result:
#   tools/faults/probe.sh BUNDLE OUTDIR
# Runs every test binary of BUNDLE (runner tags: $PROBE_TAGS, default the runner's default)
#   1. without the shim                       -> OUTDIR/noshim/testlogs
#   2. under the shim, log mode, no fault     -> OUTDIR/shim/testlogs, OUTDIR/gpa.log
#   3. under the shim with one fault (smoke)  -> OUTDIR/smoke/testlogs, OUTDIR/smoke.log
# and writes OUTDIR/summary.txt and OUTDIR/summary.json (requested entry points with versions and
# flags, and the case-by-case comparison of runs 1 and 2).
# The shim: $PAGELOCK_SHIM_DIR, else BUNDLE/faults/, else built from source with g++.
# Exit codes: 0 the control matches; 1 it differs or a run broke; 2 bad usage.
set -u
if [ $# -ne 2 ]; then echo "usage: $0 BUNDLE OUTDIR" >&2; exit 2; fi
BUNDLE="$(cd "$1" 2>/dev/null && pwd)" || { echo "probe: no bundle folder $1" >&2; exit 2; }
[ -x "$BUNDLE/run" ] || { echo "probe: $BUNDLE/run missing (not a bundle)" >&2; exit 2; }
mkdir -p "$2" && OUT="$(cd "$2" && pwd)"
HERE="$(cd "$(dirname "$0")" && pwd)"
TAGS="${PROBE_TAGS:--stress,-selftest}"
SHIM="${PAGELOCK_SHIM_DIR:-}"
if [ -z "$SHIM" ] && [ -f "$BUNDLE/faults/libcuda.so.1" ]; then SHIM="$BUNDLE/faults"; fi
if [ -z "$SHIM" ]; then
  "$HERE/build_shim.sh" "$OUT/shimlib" || exit 1
  SHIM="$OUT/shimlib"
fi
echo "probe: shim $SHIM/libcuda.so.1"
rm -f "$OUT/gpa.log" "$OUT/smoke.log"
t0=$(date +%s)
"$BUNDLE/run" --out "$OUT/noshim/testlogs" --tags="$TAGS" > "$OUT/noshim.out" 2>&1
echo "noshim_rc=$? seconds=$(( $(date +%s) - t0 ))" > "$OUT/rc.txt"
t0=$(date +%s)
LD_LIBRARY_PATH="$SHIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PAGELOCK_FAULT_LOG="$OUT/gpa.log" \
  "$BUNDLE/run" --out "$OUT/shim/testlogs" --tags="$TAGS" > "$OUT/shim.out" 2>&1
echo "shim_rc=$? seconds=$(( $(date +%s) - t0 ))" >> "$OUT/rc.txt"
LD_LIBRARY_PATH="$SHIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PAGELOCK_FAULT_LOG="$OUT/smoke.log" \
  PAGELOCK_FAULT=hostalloc_out_of_memory \
  "$BUNDLE/run" --out "$OUT/smoke/testlogs" --tags="$TAGS" --targets hostalloc > "$OUT/smoke.out" 2>&1
echo "smoke_rc=$?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
python3 "$HERE/probe_summary.py" --bundle "$BUNDLE" "$OUT"
