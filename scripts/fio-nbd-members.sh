#!/usr/bin/env bash
# Throughput of an eraid RAID-0 whose four members are NBD exports (a
# measurement, not a test; CI does not run it): four `nbdkit memory`
# servers of 256 MiB on Unix sockets, `eraid create --level 0 --chunk 64K`
# over them, `eraid serve`, then fio (nbd engine, one connection, iodepth
# 32, 4 loops of 360 MiB). Prints fio's MiB/s. For A/B comparisons of
# the member client, alternate binaries:
#
#   for i in 1 2 3; do for b in ./old ./new ./new ./old; do
#     echo "$b $(scripts/fio-nbd-members.sh $b write 1m)"; done; done
#
# Needs nbdkit, fio (with its nbd engine) and jq.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: scripts/fio-nbd-members.sh BIN RW BS" >&2; exit 2; }
BIN=$1; RW=$2; BS=$3
[ -x "$BIN" ] || { echo "fio-nbd-members: $BIN is not an executable" >&2; exit 2; }
BIN=$(realpath "$BIN")
for tool in nbdkit fio jq; do
  command -v "$tool" >/dev/null || { echo "fio-nbd-members: $tool is not installed" >&2; exit 1; }
done
W=$(mktemp -d "${BENCH_DIR:-/dev/shm}/fio-nbd-members.XXXXXX")
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
members=()
for i in 0 1 2 3; do
  nbdkit -f --exit-with-parent -U "$W/m$i.sock" memory 256M 2>"$W/m$i.log" &
  pids+=($!)
  members+=("nbd+unix:///?socket=$W/m$i.sock")
done
for i in 0 1 2 3; do
  for _ in $(seq 100); do [ -S "$W/m$i.sock" ] && break; sleep 0.05; done
  [ -S "$W/m$i.sock" ] || { echo "fio-nbd-members: nbdkit $i did not start" >&2; cat "$W/m$i.log" >&2; exit 1; }
done
(cd "$W" && "$BIN" create --level 0 --chunk 64K "${members[@]}" >/dev/null)
"$BIN" serve --socket "$W/s.sock" "${members[@]}" >/dev/null 2>"$W/serve.log" &
pids+=($!)
for _ in $(seq 100); do [ -S "$W/s.sock" ] && break; sleep 0.05; done
[ -S "$W/s.sock" ] || { echo "fio-nbd-members: eraid serve did not start" >&2; cat "$W/serve.log" >&2; exit 1; }
fio --name=case --ioengine=nbd --uri="nbd+unix:///?socket=$W/s.sock" --rw="$RW" --bs="$BS" \
  --iodepth=32 --size=360M --loops=4 --output-format=json 2>/dev/null |
  sed -n '/^{/,$p' | jq -r '.jobs[0] | ((.read.bw_bytes + .write.bw_bytes) / 1048576 | floor)'
