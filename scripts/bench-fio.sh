#!/usr/bin/env bash
# Benchmark (reported, not a test; CI does not run it): fio's nbd engine
# against `eraid serve` for RAID-0 and RAID-5 over four tmpfs-backed members,
# beside `qemu-nbd` serving one raw file on tmpfs, all in the same run.
#
#   scripts/bench-fio.sh            # prints a Markdown table
#
# Workloads: random 4k read, random 4k write, sequential 1M read, sequential
# 1M write; each runs FIO_RUNTIME_S seconds (default 10) with FIO_IODEPTH
# requests in flight (default 32) from one fio job over one NBD connection.
#
# Sizes: each member is BENCH_MEMBER_SIZE (default 256M). The qemu-nbd raw
# file has the RAID-5 array's capacity, and every fio job addresses the same
# range [0, RAID-5 capacity) on every export (RAID-0's larger capacity is not
# used), so all three targets see the same offsets. Each export is filled by
# one sequential pass before it is measured, so no read hits a hole.
#
# Environment knobs: FIO_RUNTIME_S, FIO_IODEPTH, BENCH_MEMBER_SIZE,
# BENCH_DIR (default /dev/shm), ERAID (a prebuilt binary; default: build
# target/release/eraid). Needs fio (with the nbd engine), qemu-nbd, jq.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME=${FIO_RUNTIME_S:-10}
IODEPTH=${FIO_IODEPTH:-32}
MEMBER_SIZE=${BENCH_MEMBER_SIZE:-256M}
PARENT=${BENCH_DIR:-/dev/shm}

for tool in fio qemu-nbd qemu-img jq; do
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
  if [ -f "$WORK/qemu-nbd.pid" ]; then kill -TERM "$(cat "$WORK/qemu-nbd.pid")" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# Starts `eraid serve` on the members named in $@ (in $WORK) and sets URI.
start_eraid() {
  local sock=$WORK/eraid.sock
  rm -f "$sock"
  (cd "$WORK" && exec "$ERAID" serve --socket "$sock" "$@" >"$WORK/serve.out" 2>>"$WORK/serve.log") &
  SERVER_PID=$!
  for _ in $(seq 300); do [ -S "$sock" ] && break; sleep 0.05; done
  [ -S "$sock" ] || { echo "bench-fio: eraid serve did not start:" >&2; cat "$WORK/serve.log" >&2; exit 1; }
  URI="nbd+unix:///?socket=$sock"
}

stop_eraid() {
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID" || { echo "bench-fio: eraid serve did not exit cleanly" >&2; cat "$WORK/serve.log" >&2; exit 1; }
  SERVER_PID=
}

# fio_run NAME RW BS [time_based]: prints "iops bw_bytes_per_s".
fio_run() {
  local name=$1 rw=$2 bs=$3 timed=${4:-1}
  local extra=(--time_based=1 --runtime="$RUNTIME" --ramp_time=1)
  [ "$timed" = 1 ] || extra=()
  fio --name="$name" --ioengine=nbd --uri="$URI" --rw="$rw" --bs="$bs" \
      --iodepth="$IODEPTH" --numjobs=1 --size="$SIZE" --randrepeat=0 \
      "${extra[@]}" --output-format=json >"$WORK/$name.json" 2>"$WORK/$name.err" ||
    { echo "bench-fio: fio $name failed:" >&2; cat "$WORK/$name.err" >&2; exit 1; }
  local dir=read
  case $rw in *write) dir=write ;; esac
  # The nbd engine prints "fio: connected to NBD server" before the JSON.
  sed -n '/^{/,$p' "$WORK/$name.json" | jq -r ".jobs[0].$dir | \"\(.iops) \(.bw_bytes)\""
}

WORKLOADS=("randread 4k" "randwrite 4k" "read 1M" "write 1M")
declare -A RESULT

# measure TARGET: prefill, then every workload; results in RESULT[TARGET,i].
measure() {
  local target=$1
  fio_run "$target-fill" write 1M 0 >/dev/null
  local i=0
  for w in "${WORKLOADS[@]}"; do
    set -- $w
    RESULT[$target,$i]=$(fio_run "$target-$1-$2" "$1" "$2")
    i=$((i + 1))
  done
}

echo "bench-fio: members $MEMBER_SIZE on $PARENT, ${RUNTIME}s per workload, iodepth $IODEPTH" >&2

# RAID-5 first: its capacity is the common range.
(cd "$WORK" && "$ERAID" create --level 5 --size "$MEMBER_SIZE" r5a r5b r5c r5d >/dev/null)
SIZE=$("$ERAID" detail --json "$WORK"/r5a "$WORK"/r5b "$WORK"/r5c "$WORK"/r5d | jq -r .capacity_bytes)
(cd "$WORK" && "$ERAID" create --level 0 --size "$MEMBER_SIZE" r0a r0b r0c r0d >/dev/null)

echo "bench-fio: qemu-nbd, one raw file of $SIZE bytes" >&2
qemu-img create -q -f raw "$WORK/single.raw" "$SIZE"
qemu-nbd --fork --pid-file="$WORK/qemu-nbd.pid" --persistent --shared=8 -f raw \
  --socket="$WORK/qemu.sock" "$WORK/single.raw"
URI="nbd+unix:///?socket=$WORK/qemu.sock"
measure qemu
kill -TERM "$(cat "$WORK/qemu-nbd.pid")"
rm -f "$WORK/qemu-nbd.pid" "$WORK/single.raw"

echo "bench-fio: eraid RAID-0 on 4 members" >&2
start_eraid r0a r0b r0c r0d
measure raid0
stop_eraid
rm -f "$WORK"/r0?

echo "bench-fio: eraid RAID-5 on 4 members" >&2
start_eraid r5a r5b r5c r5d
measure raid5
stop_eraid

cell() { # "iops bw" -> "12.3k IOPS, 48.1 MiB/s"
  awk -v v="$1" 'BEGIN { split(v, a, " "); printf "%.1fk IOPS, %.0f MiB/s", a[1] / 1000, a[2] / 1048576 }'
}
ratio() { # two "iops bw" -> iops ratio
  awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); if (y[1] > 0) printf "%.2f", x[1] / y[1]; else print "n/a" }'
}

echo
echo "fio nbd engine, ${RUNTIME}s each, iodepth $IODEPTH, 1 job; 4 tmpfs members of $MEMBER_SIZE;" \
  "qemu-nbd serves one tmpfs raw file of $SIZE bytes; $(nproc) CPUs; fio $(fio --version)"
echo
echo "| workload | qemu-nbd (1 file) | eraid RAID-0 (4) | RAID-0 / qemu-nbd | eraid RAID-5 (4) | RAID-5 / qemu-nbd |"
echo "|---|---|---|---|---|---|"
i=0
for w in "${WORKLOADS[@]}"; do
  q=${RESULT[qemu,$i]} z=${RESULT[raid0,$i]} f=${RESULT[raid5,$i]}
  echo "| $w | $(cell "$q") | $(cell "$z") | $(ratio "$z" "$q") | $(cell "$f") | $(ratio "$f" "$q") |"
  i=$((i + 1))
done
