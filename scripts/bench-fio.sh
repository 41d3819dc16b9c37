#!/usr/bin/env bash
# Benchmark (reported, not a test; CI does not run it): fio's nbd engine
# against, in one run, `nbdkit memory` (the transport's ceiling: an NBD
# server that does no file I/O), `qemu-nbd` serving one raw file on tmpfs,
# and `eraid serve` for RAID-0, RAID-5 and RAID-6 over four tmpfs members
# with 64 KiB chunks, plus the RAID-0 again with `--io-path pool` (every
# device I/O handed to the I/O worker threads, as for members on disks)
# beside the default (the engine thread copies tmpfs members itself).
#
#   scripts/bench-fio.sh            # a few seconds per case; prints a Markdown table
#   scripts/bench-fio.sh --long     # 10 s per case
#
# Workloads (issue 24's table plus a mix): sequential write 128k,
# sequential read 128k, random read 4k, random write 4k, sequential write
# 1m, and a 70/30 random read/write mix of 4k. Each runs with 1, 2 and 4
# connections: fio's --numjobs, one NBD connection per job, each job on its
# own 1/N slice of the range, FIO_IODEPTH requests in flight per job
# (default 32), results summed over the jobs (--group_reporting). Every
# case runs FIO_RUNTIME_S seconds (default 3, 10 with --long) after a 1 s
# ramp. The table gives MiB/s (read + write for the mix) and each target's
# ratio to `nbdkit memory` at the same connection count.
#
# Sizes: each eraid member is BENCH_MEMBER_SIZE (default 256M). Every target
# is addressed over the same range [0, RAID-6 capacity) (the smallest of the
# three arrays), and nbdkit memory and the qemu-nbd file have that size, so
# all see the same offsets. Each target is filled by one sequential 1M pass
# before it is measured, so no read hits a hole.
#
# Environment knobs: FIO_RUNTIME_S, FIO_IODEPTH, BENCH_MEMBER_SIZE,
# BENCH_DIR (default /dev/shm), BENCH_CONNECTIONS (default "1 2 4"), ERAID
# (a prebuilt binary; default: build target/release/eraid). Needs fio (with
# the nbd engine), nbdkit, qemu-nbd, qemu-img, jq.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME=${FIO_RUNTIME_S:-3}
case "${1:-}" in
  --long) RUNTIME=${FIO_RUNTIME_S:-10} ;;
  "") ;;
  *) echo "bench-fio: unknown argument '$1' (the only flag is --long)" >&2; exit 2 ;;
esac
IODEPTH=${FIO_IODEPTH:-32}
MEMBER_SIZE=${BENCH_MEMBER_SIZE:-256M}
PARENT=${BENCH_DIR:-/dev/shm}
CONNECTIONS=(${BENCH_CONNECTIONS:-1 2 4})

for tool in fio nbdkit qemu-nbd qemu-img jq; do
  command -v "$tool" >/dev/null || { echo "bench-fio: $tool is not installed (see scripts/setup.sh)" >&2; exit 1; }
done
fio --enghelp=nbd >/dev/null 2>&1 || { echo "bench-fio: this fio has no nbd engine" >&2; exit 1; }

if [ -z "${ERAID:-}" ]; then
  cargo build --release -q -p eraid-cli
  ERAID=$PWD/target/release/eraid
fi

WORK=$(mktemp -d "$PARENT/eraid-bench.XXXXXX")
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  for pid_file in "$WORK"/*.pid; do
    [ -f "$pid_file" ] && { kill -TERM "$(cat "$pid_file")" 2>/dev/null || true; }
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

wait_for_socket() { # SOCKET LOG: up to 15 s
  for _ in $(seq 300); do [ -S "$1" ] && return 0; sleep 0.05; done
  echo "bench-fio: no server on $1:" >&2; cat "$2" >&2 2>/dev/null || true; exit 1
}

# Starts `eraid serve` on the members named in $@ (in $WORK) and sets URI.
start_eraid() {
  local sock=$WORK/eraid.sock
  rm -f "$sock"
  (cd "$WORK" && exec "$ERAID" serve --socket "$sock" "$@" >"$WORK/serve.out" 2>>"$WORK/serve.log") &
  SERVER_PID=$!
  wait_for_socket "$sock" "$WORK/serve.log"
  URI="nbd+unix:///?socket=$sock"
}

stop_eraid() {
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID" || { echo "bench-fio: eraid serve did not exit cleanly" >&2; cat "$WORK/serve.log" >&2; exit 1; }
  SERVER_PID=
}

# Stops the server whose pid file is $1 and waits until it is gone.
stop_pid_file() {
  local pid
  pid=$(cat "$1")
  kill -TERM "$pid"
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  rm -f "$1"
}

# fio_run NAME RW BS JOBS [timed]: prints MiB/s (read + write).
fio_run() {
  local name=$1 rw=$2 bs=$3 jobs=$4 timed=${5:-1}
  local slice=$((SIZE / jobs / 1048576 * 1048576))
  local extra=(--time_based=1 --runtime="$RUNTIME" --ramp_time=1)
  [ "$timed" = 1 ] || extra=()
  [ "$rw" = randrw ] && extra+=(--rwmixread=70)
  fio --name="$name" --ioengine=nbd --uri="$URI" --rw="$rw" --bs="$bs" \
      --iodepth="$IODEPTH" --numjobs="$jobs" --size="$slice" --offset_increment="$slice" \
      --group_reporting=1 --randrepeat=0 \
      "${extra[@]}" --output-format=json >"$WORK/$name.json" 2>"$WORK/$name.err" ||
    { echo "bench-fio: fio $name failed:" >&2; cat "$WORK/$name.err" >&2; exit 1; }
  # The nbd engine prints "fio: connected to NBD server" before the JSON.
  sed -n '/^{/,$p' "$WORK/$name.json" |
    jq -r '.jobs[0] | (.read.bw_bytes + .write.bw_bytes) / 1048576'
}

WORKLOADS=("write 128k" "read 128k" "randread 4k" "randwrite 4k" "write 1m" "randrw 4k")
LABELS=("sequential write 128k" "sequential read 128k" "random read 4k" "random write 4k"
  "sequential write 1m" "random 70/30 read/write 4k")
declare -A RESULT

# measure TARGET: prefill, then every workload at every connection count;
# MiB/s in RESULT[TARGET,workload,connections].
measure() {
  local target=$1
  echo "bench-fio: $target" >&2
  fio_run "$target-fill" write 1M 1 0 >/dev/null
  local i=0
  for w in "${WORKLOADS[@]}"; do
    set -- $w
    for jobs in "${CONNECTIONS[@]}"; do
      RESULT[$target,$i,$jobs]=$(fio_run "$target-$1-$2-$jobs" "$1" "$2" "$jobs")
    done
    i=$((i + 1))
  done
}

load_before=$(uptime)
echo "bench-fio: members $MEMBER_SIZE on $PARENT, ${RUNTIME}s per case, iodepth $IODEPTH per connection" >&2

# RAID-6 first: its capacity is the common range.
(cd "$WORK" && "$ERAID" create --level 6 --chunk 64K --size "$MEMBER_SIZE" r6a r6b r6c r6d >/dev/null)
SIZE=$("$ERAID" detail --json "$WORK"/r6a "$WORK"/r6b "$WORK"/r6c "$WORK"/r6d | jq -r .capacity_bytes)

# In the foreground (-f) as a child of this script, so --exit-with-parent
# also covers an interrupted run; the pid file names it for stop_pid_file.
nbdkit -f --exit-with-parent -P "$WORK/nbdkit.pid" -U "$WORK/nbdkit.sock" memory "$SIZE" \
  2>"$WORK/nbdkit.log" &
wait_for_socket "$WORK/nbdkit.sock" "$WORK/nbdkit.log"
URI="nbd+unix:///?socket=$WORK/nbdkit.sock"
measure nbdkit
stop_pid_file "$WORK/nbdkit.pid"

qemu-img create -q -f raw "$WORK/single.raw" "$SIZE"
qemu-nbd --fork --pid-file="$WORK/qemu-nbd.pid" --persistent --shared=8 -f raw \
  --socket="$WORK/qemu.sock" "$WORK/single.raw"
URI="nbd+unix:///?socket=$WORK/qemu.sock"
measure qemu
stop_pid_file "$WORK/qemu-nbd.pid"
rm -f "$WORK/single.raw"

for level in 0 5; do
  (cd "$WORK" && "$ERAID" create --level $level --chunk 64K --size "$MEMBER_SIZE" \
    r${level}a r${level}b r${level}c r${level}d >/dev/null)
  start_eraid r${level}a r${level}b r${level}c r${level}d
  measure raid$level
  stop_eraid
  if [ $level = 0 ]; then
    # The same array with every device I/O handed to the I/O worker
    # threads, as members that are not in memory are: what the engine
    # thread's own I/O on tmpfs members gains.
    start_eraid --io-path pool r0a r0b r0c r0d
    measure raid0pool
    stop_eraid
  fi
  rm -f "$WORK"/r${level}?
done
start_eraid r6a r6b r6c r6d
measure raid6
stop_eraid
load_after=$(uptime)

ratio() { # MiB/s, baseline MiB/s
  awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'
}
mib() { awk -v a="$1" 'BEGIN { printf "%.0f", a }'; }

echo
echo "fio nbd engine, ${RUNTIME}s per case after 1 s ramp, iodepth $IODEPTH per connection," \
  "one connection per fio job; eraid: 4 tmpfs members of $MEMBER_SIZE, 64 KiB chunks;" \
  "every target over the same $SIZE bytes; $(nproc) CPUs; $(fio --version), $(nbdkit --version)," \
  "$(qemu-nbd --version | head -1)."
echo "Load before: $load_before"
echo "Load after: $load_after"
echo
echo "MiB/s (read + write for the mix), and each target's ratio to nbdkit memory at the same connection count:"
echo
echo "| workload | conns | nbdkit memory | qemu-nbd | ratio | RAID-0 x4 | ratio | RAID-0 x4, --io-path pool | ratio | RAID-5 x4 | ratio | RAID-6 x4 | ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
i=0
for label in "${LABELS[@]}"; do
  for jobs in "${CONNECTIONS[@]}"; do
    base=${RESULT[nbdkit,$i,$jobs]}
    line="| $label | $jobs | $(mib "$base")"
    for target in qemu raid0 raid0pool raid5 raid6; do
      v=${RESULT[$target,$i,$jobs]}
      line="$line | $(mib "$v") | $(ratio "$v" "$base")"
    done
    echo "$line |"
  done
  i=$((i + 1))
done
