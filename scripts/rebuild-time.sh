#!/usr/bin/env bash
# How long a served array's rebuild takes, the server's CPU for it and the
# share of that time the engine lock was held, for A/B comparisons of two
# builds on a noisy machine (a measurement, not a test; CI does not run it).
#
#   scripts/rebuild-time.sh BIN [MEMBER_SIZE] [load]
#   e.g. for i in 1 2; do scripts/rebuild-time.sh ./old 512M load; scripts/rebuild-time.sh ./new 512M load; done
#
# Serves a RAID-5 of four tmpfs members of MEMBER_SIZE (default 256M, 64
# KiB chunks), fills it with one sequential 1M pass, fails the last
# member and adds a blank one with `--strategy dor` (no rate limit), and
# times `eraid rebuild wait`. With `load`, fio writes random 4 KiB blocks
# over two connections (iodepth 32 each) for the whole rebuild. Prints the
# rebuild's seconds, the server's CPU in that time, and the engine lock's
# held share and mean threads waiting (`eraid detail --control`). Needs
# fio (with its nbd engine) and jq.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 3 ] || { echo "usage: scripts/rebuild-time.sh BIN [MEMBER_SIZE] [load]" >&2; exit 2; }
BIN=$1; SIZE=${2:-256M}; LOAD=${3:-}
[ -x "$BIN" ] || { echo "rebuild-time: $BIN is not an executable" >&2; exit 2; }
[[ "$SIZE" =~ ^[1-9][0-9]*[MG]$ ]] || { echo "rebuild-time: MEMBER_SIZE must be like 256M or 1G, not '$SIZE'" >&2; exit 2; }
[ -z "$LOAD" ] || [ "$LOAD" = load ] || { echo "rebuild-time: the third argument can only be 'load', not '$LOAD'" >&2; exit 2; }
for tool in fio jq; do
  command -v "$tool" >/dev/null || { echo "rebuild-time: $tool is not installed" >&2; exit 1; }
done
BIN=$(realpath "$BIN")
# shellcheck source=lib/engine-lock.sh
source "$(dirname "$0")/lib/engine-lock.sh"
W=$(mktemp -d /dev/shm/eraid-rebuild-time.XXXXXX)
P=; F=
cleanup() {
  for pid in $F $P; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$W"
}
trap cleanup EXIT
cd "$W"
"$BIN" create --level 5 --chunk 64K --size "$SIZE" a b c d >/dev/null
truncate -s "$SIZE" e
"$BIN" serve --socket "$W/s.sock" --control "$W/c.sock" a b c d >/dev/null 2>&1 & P=$!
for _ in $(seq 200); do [ -S "$W/s.sock" ] && break; sleep 0.05; done
[ -S "$W/s.sock" ] || { echo "rebuild-time: the server did not start" >&2; exit 1; }
URI="nbd+unix:///?socket=$W/s.sock"
capacity_mib=$(( $("$BIN" detail --json --control "$W/c.sock" | jq -r .capacity_bytes) >> 20 ))
fio --name=fill --ioengine=nbd --uri="$URI" --rw=write --bs=1M --iodepth=32 --size="${capacity_mib}M" \
  --output=/dev/null >/dev/null 2>&1
"$BIN" fail d --control "$W/c.sock" >/dev/null
if [ -n "$LOAD" ]; then
  slice_mib=$((capacity_mib / 2))
  fio --name=load --ioengine=nbd --uri="$URI" --rw=randwrite --bs=4k --iodepth=32 --numjobs=2 \
    --size="${slice_mib}M" --offset_increment="${slice_mib}M" --time_based --runtime=3600 \
    --output=/dev/null >/dev/null 2>&1 & F=$!
  sleep 1
fi
server_cpu() { awk '{ print $14 + $15 }' "/proc/$P/stat"; }
lock0=$(engine_lock_times "$BIN" "$W/c.sock"); cpu0=$(server_cpu); t0=$(date +%s.%N)
"$BIN" add --strategy dor e --control "$W/c.sock" >/dev/null
"$BIN" rebuild wait --control "$W/c.sock" >/dev/null
t1=$(date +%s.%N); cpu1=$(server_cpu); lock1=$(engine_lock_times "$BIN" "$W/c.sock")
awk -v a="$t0" -v b="$t1" -v c="$(( (cpu1 - cpu0) * 1000 / $(getconf CLK_TCK) ))" \
  -v h="$(engine_lock_share "$lock0" "$lock1" 1)" -v w="$(engine_lock_share "$lock0" "$lock1" 2)" -v l="${LOAD:+, under load}" \
  'BEGIN { printf "rebuild %.2f s%s, server CPU %d ms, lock held %.0f%% / %.2f waiting\n", b - a, l, c, 100 * h, w }'
