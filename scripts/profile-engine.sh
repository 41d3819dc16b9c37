#!/usr/bin/env bash
# Where `eraid serve` spends its CPU under small random writes (reported, not
# a test; CI does not run it). Serves a RAID-5 of four tmpfs members (64 KiB
# chunks), fills it, then samples the server with `perf record -e cpu-clock
# -g` (a software clock: virtual machines often have no hardware counters)
# while fio's nbd engine runs random 4k writes over one connection, and
# prints fio's IOPS, each thread's share of the samples and the engine
# thread's top symbols.
#
#   scripts/profile-engine.sh
#
# Environment knobs: PROFILE_LEVEL (default 5), PROFILE_RW (fio's --rw,
# default randwrite), PROFILE_RUNTIME_S (default 10), FIO_IODEPTH (default
# 32), BENCH_MEMBER_SIZE (default 256M), BENCH_DIR (default /dev/shm), ERAID
# (a prebuilt binary; default: build target/release/eraid). Needs perf, fio
# (with the nbd engine), jq.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME=${PROFILE_RUNTIME_S:-10}
LEVEL=${PROFILE_LEVEL:-5}
RW=${PROFILE_RW:-randwrite}
IODEPTH=${FIO_IODEPTH:-32}
MEMBER_SIZE=${BENCH_MEMBER_SIZE:-256M}
PARENT=${BENCH_DIR:-/dev/shm}

for tool in perf fio jq; do
  command -v "$tool" >/dev/null || { echo "profile-engine: $tool is not installed" >&2; exit 1; }
done
if [ -z "${ERAID:-}" ]; then
  cargo build --release -q -p eraid-cli
  ERAID=$PWD/target/release/eraid
fi

WORK=$(mktemp -d "$PARENT/eraid-profile.XXXXXX")
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  [ -n "${PROFILE_KEEP:-}" ] && cp "$WORK/perf.data" "$PROFILE_KEEP" 2>/dev/null; rm -rf "$WORK"
}
trap cleanup EXIT

(cd "$WORK" && "$ERAID" create --level "$LEVEL" --chunk 64K --size "$MEMBER_SIZE" a b c d >/dev/null)
SIZE=$("$ERAID" detail --json "$WORK"/a "$WORK"/b "$WORK"/c "$WORK"/d | jq -r .capacity_bytes)
SOCKET=$WORK/eraid.sock
(cd "$WORK" && exec "$ERAID" serve --socket "$SOCKET" a b c d >"$WORK/serve.out" 2>"$WORK/serve.log") &
SERVER_PID=$!
for _ in $(seq 300); do [ -S "$SOCKET" ] && break; sleep 0.05; done
[ -S "$SOCKET" ] || { echo "profile-engine: eraid serve did not start:" >&2; cat "$WORK/serve.log" >&2; exit 1; }
URI="nbd+unix:///?socket=$SOCKET"

fio --name=fill --ioengine=nbd --uri="$URI" --rw=write --bs=1M --iodepth="$IODEPTH" \
  --size="$SIZE" --output=/dev/null >/dev/null 2>&1

perf record -F 999 -e cpu-clock -g -p "$SERVER_PID" -o "$WORK/perf.data" -- sleep $((RUNTIME + 1)) \
  >"$WORK/perf.log" 2>&1 &
PERF_PID=$!
sleep 0.5
fio --name="$RW" --ioengine=nbd --uri="$URI" --rw="$RW" --bs="${PROFILE_BS:-4k}" --iodepth="$IODEPTH" \
  --size="$SIZE" --time_based=1 --runtime="$RUNTIME" --randrepeat=0 --output-format=json \
  2>/dev/null | sed -n '/^{/,$p' >"$WORK/fio.json"
wait "$PERF_PID" || { echo "profile-engine: perf record failed:" >&2; cat "$WORK/perf.log" >&2; exit 1; }

echo "load: $(uptime)"
echo "$RW 4k, RAID-$LEVEL x4 on $PARENT, iodepth $IODEPTH, one connection, ${RUNTIME}s:" \
  "$(jq -r '(.jobs[0].read.iops + .jobs[0].write.iops) | floor' "$WORK/fio.json") IOPS"
echo
echo "share of the server's samples by thread (eraid-io-* summed):"
perf report -i "$WORK/perf.data" --no-children --percentage relative --sort comm --stdio -g none 2>/dev/null |
  awk '/^ +[0-9.]+%/ { name = ($2 ~ /^eraid-io-/) ? "eraid-io-*" : $2; share[name] += $1 }
       END { for (n in share) printf "  %6.2f%%  %s\n", share[n], n }' | sort -rn
echo
echo "engine thread, top symbols (share of its samples):"
perf report -i "$WORK/perf.data" --no-children --comm eraid-engine --percentage relative \
  --sort symbol --stdio -g none 2>/dev/null | awk '/^ +[0-9.]+%/' | head -15 | cut -c1-110
