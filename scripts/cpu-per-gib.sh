#!/usr/bin/env bash
# CPU per byte of one fio workload against `eraid serve` (or `nbdkit
# memory`), for A/B comparisons on a noisy machine (a measurement, not a
# test; CI does not run it). Throughput on two shared cores swings by a
# quarter between runs; the CPU a fixed amount of work costs swings less,
# and on a CPU-bound machine it is what throughput follows.
#
#   scripts/cpu-per-gib.sh BIN LEVEL RW BS [CONNECTIONS] [LOOPS]
#   e.g. for i in 1 2 3; do scripts/cpu-per-gib.sh ./old 5 write 1m 4; scripts/cpu-per-gib.sh ./new 5 write 1m 4; done
#
# Serves a fresh array of four 128 MiB tmpfs members (64 KiB chunks; LEVEL
# 0, 5, 6 or 10, `5-degraded` or `6-degraded` for that level served
# without its last member, `0-nbd` for RAID-0 over four `nbdkit memory`
# members on Unix sockets, or `nbdkit` for `nbdkit memory`, BIN then
# unused), fills it with one sequential 1M pass, then runs fio (nbd
# engine, iodepth 32 per connection, CONNECTIONS jobs of one connection
# each, each on its own slice of 360 MiB) over LOOPS (default 8) passes:
# a fixed amount of work, not a fixed time. Prints fio's MiB/s, the whole machine's busy CPU per
# GiB moved (fio, server and kernel) and the server's own CPU per GiB, in
# ms, from /proc; for eraid also the share of the run's time the engine
# lock was held and the mean number of threads waiting for it (`eraid
# detail --control`, before and after). Needs fio (with its nbd engine),
# jq, and nbdkit for the baseline.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: scripts/cpu-per-gib.sh BIN LEVEL RW BS [CONNECTIONS] [LOOPS]" >&2; exit 2; }
BIN=$1; LEVEL=$2; RW=$3; BS=$4; JOBS=${5:-1}; LOOPS=${6:-8}
[[ "$LEVEL" =~ ^(0|5|6|10|5-degraded|6-degraded|0-nbd|nbdkit)$ ]] || { echo "cpu-per-gib: LEVEL must be 0, 5, 6, 10, 5-degraded, 6-degraded, 0-nbd or nbdkit, not '$LEVEL'" >&2; exit 2; }
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "cpu-per-gib: CONNECTIONS must be a positive whole number, not '$JOBS'" >&2; exit 2; }
[[ "$LOOPS" =~ ^[1-9][0-9]*$ ]] || { echo "cpu-per-gib: LOOPS must be a positive whole number, not '$LOOPS'" >&2; exit 2; }
for tool in fio jq; do
  command -v "$tool" >/dev/null || { echo "cpu-per-gib: $tool is not installed" >&2; exit 1; }
done
if [ "$LEVEL" != nbdkit ]; then
  [ -x "$BIN" ] || { echo "cpu-per-gib: $BIN is not an executable" >&2; exit 2; }
  BIN=$(realpath "$BIN")
fi
# shellcheck source=lib/fio-array.sh
source "$(dirname "$0")/lib/fio-array.sh"
# shellcheck source=lib/engine-lock.sh
source "$(dirname "$0")/lib/engine-lock.sh"
serve_filled cpu-per-gib "$BIN" "$LEVEL"
U=$URI
TICK_MS=$((1000 / $(getconf CLK_TCK)))
# user nice system irq softirq steal, in ticks
machine_busy() { awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
server_cpu() { awk '{ print $14 + $15 }' "/proc/$P/stat"; }
# held_s waited_s uptime_s of the engine lock (eraid only).
lock_times() {
  [ "$LEVEL" = nbdkit ] && return 0
  engine_lock_times "$BIN" "$W/c.sock"
}
lock0=$(lock_times)
server0=$(server_cpu); busy0=$(machine_busy)
out=$(fio --name=case --ioengine=nbd --uri="$U" --rw="$RW" --bs="$BS" --iodepth=32 --numjobs="$JOBS" \
  --offset_increment=$((360 / JOBS))M --size=$((360 / JOBS))M --loops="$LOOPS" --group_reporting \
  --output-format=json 2>/dev/null | sed -n '/^{/,$p')
server1=$(server_cpu); busy1=$(machine_busy)
lock1=$(lock_times)
mib_s=$(echo "$out" | jq -r '.jobs[0] | ((.read.bw_bytes + .write.bw_bytes) / 1048576 | floor)')
moved_mib=$(echo "$out" | jq -r '.jobs[0] | ((.read.io_bytes + .write.io_bytes) / 1048576 | floor)')
[ "$moved_mib" -gt 0 ] || { echo "cpu-per-gib: fio moved no data" >&2; exit 1; }
lock=
if [ -n "$lock0" ]; then
  lock=$(awk -v h="$(engine_lock_share "$lock0" "$lock1" 1)" -v w="$(engine_lock_share "$lock0" "$lock1" 2)" \
    'BEGIN { printf ", lock held %.0f%% / %.2f waiting", 100 * h, w }')
fi
echo "$mib_s MiB/s, machine $(( (busy1 - busy0) * TICK_MS * 1024 / moved_mib )) ms/GiB, server $(( (server1 - server0) * TICK_MS * 1024 / moved_mib )) ms/GiB$lock"
