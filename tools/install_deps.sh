#!/usr/bin/env bash
# Installs what pagelock needs on a Debian/Ubuntu machine, idempotently: Bazel (Debian's
# bazel-bootstrap), GoogleTest, RapidCheck and, for the report's browser test, Chromium; for the
# fleet tests (shared history on PostgreSQL, job arrays on Slurm), PostgreSQL, psycopg2 (seen by
# Debian's /usr/bin/python3), Slurm and munge. PAGELOCK_FLEET_TEST=0 leaves those out (the tests
# then skip with the reason).
# The CUDA toolkit is not a Debian package: it must already be at $CUDA_PATH or /usr/local/cuda.
# Exit codes: 0 ready; 1 a package could not be installed; 2 no CUDA toolkit.
set -euo pipefail

packages=(bazel-bootstrap libgtest-dev googletest librapidcheck-dev python3 python3-jinja2 git)
if [[ "${PAGELOCK_BROWSER_TEST:-1}" != 0 ]]; then
  packages+=(chromium)
fi
if [[ "${PAGELOCK_FLEET_TEST:-1}" != 0 ]]; then
  packages+=(postgresql python3-psycopg2 slurmctld slurmd slurm-client munge)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq || { echo "install_deps: apt-get update failed" >&2; exit 1; }
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { echo "install_deps: apt-get install ${missing[*]} failed" >&2; exit 1; }
fi

cuda="${CUDA_PATH:-/usr/local/cuda}"
if [[ ! -x "$cuda/bin/nvcc" ]]; then
  echo "install_deps: no CUDA toolkit: neither \$CUDA_PATH (${CUDA_PATH:-unset}) nor /usr/local/cuda has bin/nvcc." >&2
  echo "install_deps: install the CUDA toolkit (12.x or 13.x) from NVIDIA, or set CUDA_PATH." >&2
  exit 2
fi
echo "install_deps: ready (bazel $(bazel --version 2>/dev/null | awk '{print $2}'), nvcc at $cuda/bin/nvcc)" >&2
