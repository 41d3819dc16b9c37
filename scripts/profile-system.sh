#!/usr/bin/env bash
# Where the whole machine's CPU goes while fio drives `eraid serve`
# (reported, not a test; CI does not run it): every process and thread,
# fio and the kernel included, as the NBD throughput notes in the README
# quote. Serves an array of four 128 MiB tmpfs members (64 KiB chunks),
# fills it, starts an 8 s fio run (nbd engine, iodepth 32 per
# connection), samples every CPU with `perf record -a -g -e cpu-clock`
# for 4 s in its middle, and prints fio's MiB/s, each thread's share of
# the samples and the top symbols, overall and per eraid thread.
#
#   scripts/profile-system.sh RW BS [CONNECTIONS] [LEVEL]
#   e.g. scripts/profile-system.sh write 128k 1 0
#
# RW and BS are fio's --rw and --bs; CONNECTIONS (default 1) fio jobs, one
# NBD connection each; LEVEL (default 0) the RAID level, or `nbdkit` to
# profile `nbdkit memory` (the benchmark's baseline) the same way. ERAID: a prebuilt
# binary (default: build target/release/eraid). Needs perf, fio (with the
# nbd engine), jq.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/profile-system.sh RW BS [CONNECTIONS] [LEVEL]" >&2; exit 2; }
RW=$1; BS=$2; JOBS=${3:-1}; LEVEL=${4:-0}
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "profile-system: CONNECTIONS must be a positive whole number, not '$JOBS'" >&2; exit 2; }
[[ "$LEVEL" =~ ^(0|5|6|10|nbdkit)$ ]] || { echo "profile-system: LEVEL must be 0, 5, 6, 10 or nbdkit, not '$LEVEL'" >&2; exit 2; }
for tool in perf fio jq; do
  command -v "$tool" >/dev/null || { echo "profile-system: $tool is not installed" >&2; exit 1; }
done
if [ -z "${ERAID:-}" ] && [ "$LEVEL" != nbdkit ]; then
  cargo build --release -q -p eraid-cli
  ERAID=$PWD/target/release/eraid
fi
[ "$LEVEL" = nbdkit ] || ERAID=$(realpath "$ERAID")
# shellcheck source=lib/fio-array.sh
source scripts/lib/fio-array.sh
serve_filled profile-system "${ERAID:-}" "$LEVEL"
U=$URI
fio --name=case --ioengine=nbd --uri="$U" --rw="$RW" --bs="$BS" --iodepth=32 --numjobs="$JOBS" \
  --offset_increment=$((360 / JOBS))M --size=$((360 / JOBS))M --group_reporting \
  --time_based=1 --runtime=8 --output-format=json >"$W/fio.json" 2>/dev/null &
FIO=$!
sleep 2.5
perf record -a -g -F 999 -e cpu-clock -o "$W/perf.data" -- sleep 4 >/dev/null 2>&1
wait "$FIO"
echo "MiB/s $(sed -n '/^{/,$p' "$W/fio.json" | jq -r '.jobs[0] | ((.read.bw_bytes + .write.bw_bytes) / 1048576 | floor)')"
# `head` closes the pipe before perf report is done: not a failure.
set +o pipefail
report() { perf report -i "$W/perf.data" --no-children --stdio -g none "$@" 2>/dev/null | awk '/^ +[0-9.]+%/'; }
echo "== threads"
report --sort comm | head -12
echo "== symbols, all CPUs"
report --sort sym | head -20
for thread in $(report --sort comm | awk '{ print $2 }' | grep -E '^(eraid|nbd)' | head -4); do
  echo "== symbols of $thread"
  report --comm "$thread" --sort sym | head -10
done
