#!/usr/bin/env bash
# Installs what pagelock needs on a Debian/Ubuntu machine, idempotently. A lab machine gets only
# what building and qualifying need: Bazel (Debian's bazel-bootstrap), GoogleTest, RapidCheck,
# Python 3 with Jinja2, git. The rest only when asked for:
#   --with-browser (or PAGELOCK_BROWSER_TEST=1)  Chromium, for the report's browser tests
#   --with-fleet   (or PAGELOCK_FLEET_TEST=1)    the fleet tests' servers: PostgreSQL, psycopg2
#                                                (seen by Debian's /usr/bin/python3), Slurm, munge
# tools/test.sh asks for the browser (and, with PAGELOCK_FLEET_TEST=1, the fleet); CI (.ci/run)
# asks for both. Without them those tests skip with the reason.
# The CUDA toolkit is not a Debian package: it must already be at $CUDA_PATH or /usr/local/cuda.
# Exit codes: 0 ready; 1 a package could not be installed; 2 no CUDA toolkit, or a bad argument.
set -euo pipefail

browser="${PAGELOCK_BROWSER_TEST:-0}"
fleet="${PAGELOCK_FLEET_TEST:-0}"
for a in "$@"; do
  case $a in
    --with-browser) browser=1 ;;
    --with-fleet) fleet=1 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install_deps: unknown argument '$a' (known: --with-browser, --with-fleet)" >&2; exit 2 ;;
  esac
done

# libxml2-utils: xmllint, which validates every junit.xml against the Jenkins xUnit schema.
packages=(bazel-bootstrap libgtest-dev googletest librapidcheck-dev python3 python3-jinja2 git libxml2-utils)
if [[ $browser == 1 ]]; then
  packages+=(chromium)
fi
if [[ $fleet == 1 ]]; then
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
bazel_version="$(bazel --version 2>/dev/null | awk '{print $2}')"
echo "install_deps: ready (bazel ${bazel_version:-not found}, nvcc at $cuda/bin/nvcc)" >&2
