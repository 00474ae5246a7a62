#!/usr/bin/env bash
# Installs the second CUDA runtime, 11.8, from Debian 12's non-free component into a private
# prefix (default /opt/pagelock/cuda-11.8), laid out like a CUDA toolkit (bin/nvcc, include,
# lib64) so third_party/deps.bzl takes it through CUDA_PATH (`--config=cuda11`).
#
# Why a private prefix: `apt-get install nvidia-cuda-dev` depends on libcuda1 (the driver's
# user-space library), which would change what "no GPU" looks like on a build machine. The six
# packages are downloaded and unpacked with `dpkg -x` instead; nvcc 11.8 needs g++ <= 11
# (Debian's g++-11, installed normally). The mirror is the one this machine's own apt sources
# name, with the contrib and non-free components in a private list.
#
# Usage: tools/install_cuda11.sh [PREFIX]
# Exit codes: 0 ready (or already there); 1 a download or unpack failed; 2 not Debian 12
# (bookworm) or no apt mirror found.
set -euo pipefail

prefix="${1:-${PAGELOCK_CUDA11_PREFIX:-/opt/pagelock/cuda-11.8}}"
# libcu++ 1.8 (cuda/atomic) is the version CUDA 11.8 shipped; Debian packages it apart, in main.
packages=(nvidia-cuda-toolkit nvidia-cuda-dev libnvvm4 libcudart11.0 nvidia-cuda-toolkit-gcc libcu++-dev)

if [[ -x "$prefix/bin/nvcc" && -f "$prefix/.complete" ]] && command -v g++-11 >/dev/null; then
  echo "install_cuda11: ready ($prefix, $("$prefix/bin/nvcc" --version | tail -1))" >&2
  exit 0
fi

. /etc/os-release
if [[ "${VERSION_CODENAME:-}" != bookworm ]]; then
  echo "install_cuda11: CUDA 11.8 comes from Debian 12 (bookworm) non-free; this is ${PRETTY_NAME:-unknown}" >&2
  exit 2
fi

# The mirror this machine already uses, from deb822 or one-line sources.
mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
if [[ -z "$mirror" ]]; then
  mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
fi
if [[ -z "$mirror" ]]; then
  echo "install_cuda11: no Debian mirror found in /etc/apt/sources.list*" >&2
  exit 2
fi

sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
if ! command -v g++-11 >/dev/null; then
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends g++-11 >/dev/null ||
    { "${sudo_cmd[@]}" apt-get update -qq && "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends g++-11 >/dev/null; } ||
    { echo "install_cuda11: apt-get install g++-11 failed" >&2; exit 1; }
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial"
echo "deb $mirror bookworm main contrib non-free" > "$work/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::archives=$work")
apt-get "${apt_opts[@]}" update -qq || { echo "install_cuda11: apt-get update of non-free failed" >&2; exit 1; }
(cd "$work" && apt-get "${apt_opts[@]}" download "${packages[@]}" >/dev/null) ||
  { echo "install_cuda11: apt-get download ${packages[*]} failed" >&2; exit 1; }

rm -rf "$prefix.tmp"
mkdir -p "$prefix.tmp/root"
for deb in "$work"/*.deb; do
  dpkg -x "$deb" "$prefix.tmp/root" || { echo "install_cuda11: dpkg -x $deb failed" >&2; exit 1; }
done

root="$prefix/root"
kit="$root/usr/lib/nvidia-cuda-toolkit"
# nvcc.profile is an absolute link to /etc/nvcc.profile: give the prefix its own.
rm -f "$prefix.tmp/root/usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile"
cat > "$prefix.tmp/root/usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile" <<EOF
NVVMIR_LIBRARY_DIR = $kit/libdevice
PATH += $kit/bin:
INCLUDES += -I$root/usr/include \$(_SPACE_)
LIBRARIES =+ \$(_SPACE_) -L$root/usr/lib/x86_64-linux-gnu/stubs -L$root/usr/lib/x86_64-linux-gnu
CUDAFE_FLAGS +=
PTXAS_FLAGS +=
EOF
# A toolkit-shaped view: bin/nvcc (always with g++-11), include, lib64.
mkdir -p "$prefix.tmp/bin"
cat > "$prefix.tmp/bin/nvcc" <<EOF
#!/bin/sh
# nvcc 11.8 supports host compilers up to g++ 11.
exec "$kit/bin/nvcc" -ccbin g++-11 "\$@"
EOF
chmod +x "$prefix.tmp/bin/nvcc"
ln -s root/usr/include "$prefix.tmp/include"
ln -s root/usr/lib/x86_64-linux-gnu "$prefix.tmp/lib64"
rm -rf "$prefix"
mv "$prefix.tmp" "$prefix"
touch "$prefix/.complete"
"$prefix/bin/nvcc" --version | tail -1 >&2
echo "install_cuda11: ready ($prefix)" >&2
