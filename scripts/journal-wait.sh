#!/usr/bin/env bash
# What cached writes wait for (a measurement, not a test; CI does not run
# it): serves a fresh RAID-5 of four 128 MiB tmpfs members with the
# write-back cache and its journal, runs fio's 1 MiB sequential writes
# (nbd engine, four connections, iodepth 32 each), samples the journal's
# live status meanwhile (writes waiting for room in the log, answers
# waiting for their records, bytes of the log in use), prints fio's
# throughput and completion latency, then stops the server cleanly and
# times how long the next `serve` takes to listen (the journal's free
# part is zeroed at every start).
#
#   scripts/journal-wait.sh BIN [SAMPLES]
#
# ERAID_CREATE_FLAGS overrides the array's flags (default: a 64 MiB
# journal, msc-ct, a 256 MiB cache, --no-tune). Needs fio with its nbd
# engine, and jq.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/journal-wait.sh BIN [SAMPLES]" >&2; exit 2; }
BIN=$1; SAMPLES=${2:-6}
[[ "$SAMPLES" =~ ^[1-9][0-9]*$ ]] || { echo "journal-wait: SAMPLES must be a positive whole number, not '$SAMPLES'" >&2; exit 2; }
[ -x "$BIN" ] || { echo "journal-wait: $BIN is not an executable" >&2; exit 2; }
BIN=$(realpath "$BIN")
for tool in fio jq; do
  command -v "$tool" >/dev/null || { echo "journal-wait: $tool is not installed" >&2; exit 1; }
done
export ERAID_CREATE_FLAGS=${ERAID_CREATE_FLAGS:---journal j --journal-size 64M --cache msc-ct --cache-size 256M --no-tune}
# shellcheck source=lib/fio-array.sh
source "$(dirname "$0")/lib/fio-array.sh"
serve_filled journal-wait "$BIN" 5
fio --name=case --ioengine=nbd --uri="$URI" --rw=write --bs=1M --iodepth=32 --numjobs=4 \
  --offset_increment=90M --size=90M --loops=10 --group_reporting \
  --output-format=json --output="$W/fio.json" >/dev/null 2>&1 & FIO=$!
sleep 2
echo "sample: waiting_requests held_replies waiting_ops used_bytes (log size_bytes)"
for i in $(seq "$SAMPLES"); do
  kill -0 "$FIO" 2>/dev/null || break
  "$BIN" detail --json --control "$W/c.sock" | jq -r --arg i "$i" \
    '.cache.journal | "\($i): \(.waiting_requests) \(.held_replies) \(.waiting_ops) \(.used_bytes) (\(.size_bytes))"'
  sleep 0.3
done
wait "$FIO"
jq -r '.jobs[0].write | "fio: \(.bw_bytes / 1048576 | floor) MiB/s, completion latency mean \(.clat_ns.mean / 1e6 | floor) ms, p50 \(.clat_ns.percentile["50.000000"] / 1e6 | floor) ms, p99 \(.clat_ns.percentile["99.000000"] / 1e6 | floor) ms"' "$W/fio.json"
kill -TERM "$P"; wait "$P" 2>/dev/null || true
rm -f "$W/s.sock"
started=$(date +%s%N)
"$BIN" serve --socket "$W/s.sock" --control "$W/c.sock" a b c d >/dev/null 2>&1 & P=$!
for _ in $(seq 1000); do [ -S "$W/s.sock" ] && break; sleep 0.005; done
[ -S "$W/s.sock" ] || { echo "journal-wait: the server did not start again" >&2; exit 1; }
echo "serving again $(( ($(date +%s%N) - started) / 1000000 )) ms after serve started"
