#!/usr/bin/env bash
# The test command: installs what is needed, then runs every test with Bazel. On a machine
# without a GPU the device suites report NotSupported with the reason, and the harness's own
# tests (fixtures, runner, report, qualify, browser) really run. Ends with the report tool's
# summary of bazel-testlogs: counts by status and 'N passed, N failed, N skipped'.
# It installs Chromium for the browser tests; the fleet tests' servers (PostgreSQL, Slurm,
# munge) only with PAGELOCK_FLEET_TEST=1 (CI sets it), else those tests skip with the reason.
# Extra arguments go to `bazel test` (e.g. --config=lab on a GPU machine).
set -uo pipefail
cd "$(dirname "$0")/.."
deps=(--with-browser)
[[ "${PAGELOCK_FLEET_TEST:-0}" == 1 ]] && deps+=(--with-fleet)
tools/install_deps.sh "${deps[@]}" || exit $?
bazel test //... "$@"
rc=$?
# The second CUDA runtime (11.8): every suite must still compile against it, so the 11.x
# branches cannot rot (PAGELOCK_CUDA11_BUILD=1; CI sets it). Its own output base, per checkout.
if [[ "${PAGELOCK_CUDA11_BUILD:-0}" == 1 ]]; then
  tools/install_cuda11.sh || exit $?
  base="$HOME/.cache/pagelock-cuda11-$(printf %s "$PWD" | md5sum | cut -c1-8)"
  if bazel --output_base="$base" build --config=cuda11 --keep_going \
      //suites/... //fixtures/... //kernels/...; then
    echo "test.sh: CUDA 11.8 build of the suites: ok" >&2
  else
    echo "test.sh: CUDA 11.8 build of the suites: FAILED" >&2
    rc=1
  fi
fi
python3 reports/report.py bazel-testlogs/ || true
exit $rc
