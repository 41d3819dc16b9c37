#!/usr/bin/env bash
# Installs what eraid needs on a fresh Debian machine: ISA-L (parity and
# Reed-Solomon), Jerasure (Cauchy Reed-Solomon matrices), NBD clients and
# tools used by the demo and the tests (openssl makes the TLS tests' certificates).
set -euo pipefail
packages=(libisal-dev libjerasure-dev libnbd-bin nbdfuse nbdkit fio fuse3 qemu-utils e2fsprogs util-linux jq openssl libssl-dev pkg-config)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }
