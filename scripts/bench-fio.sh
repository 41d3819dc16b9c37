#!/usr/bin/env bash
# Benchmark (reported, not a test; CI does not run it): fio's nbd engine
# against, in one run, `nbdkit memory` (the transport's ceiling: an NBD
# server that does no file I/O), `qemu-nbd` serving one raw file on tmpfs,
# and `eraid serve` for RAID-0, RAID-5 and RAID-6 over four tmpfs members
# with 64 KiB chunks, plus the RAID-0 again with `--io-path pool` (every
# device I/O handed to the I/O worker threads, as for members on disks)
# beside the default (the submitting threads copy tmpfs members themselves).
#
#   scripts/bench-fio.sh            # 3 rounds of 3 s cases; prints Markdown tables
#   scripts/bench-fio.sh --long     # 10 s per case
#
# Workloads (issue 24's table plus a mix): sequential write 128k,
# sequential read 128k, random read 4k, random write 4k, sequential write
# 1m, and a 70/30 random read/write mix of 4k. Each runs with 1, 2 and 4
# connections: fio's --numjobs, one NBD connection per job, each job on its
# own 1/N slice of the range, FIO_IODEPTH requests in flight per job
# (default 32), results summed over the jobs (--group_reporting). Every
# case runs FIO_RUNTIME_S seconds (default 3, 10 with --long) after a 1 s
# ramp.
#
# Side by side: every server runs for the whole benchmark, and each case
# (workload and connection count) runs on every target one after the
# other before the next case starts, so a target and its baseline are
# measured seconds apart, not minutes. The whole set repeats
# BENCH_ROUNDS times (default 3), each round starting the targets of a
# case one place further along. The tables give, per target, the median
# MiB/s (read + write for the mix) over the rounds, the median over the
# rounds of its ratio to `nbdkit memory` in the same round and case, and
# the lowest and highest of those ratios; then issue 24's acceptance rows
# computed the same way; then, per eraid target and case, the median share
# of the case's time the engine lock (the core's bookkeeping, one thread
# at a time) was held, and how many threads waited for it on average
# (`engine_lock` of `eraid detail --json --control` before and after the
# case): a share near 1 says the core itself is the limit.
#
# Sizes: each eraid member is BENCH_MEMBER_SIZE (default 256M). Every target
# is addressed over the same range [0, RAID-6 capacity) (the smallest of the
# three arrays), and nbdkit memory and the qemu-nbd file have that size, so
# all see the same offsets. Each target is filled by one sequential 1M pass
# before anything is measured, so no read hits a hole.
#
# Environment knobs: FIO_RUNTIME_S, FIO_IODEPTH, BENCH_ROUNDS,
# BENCH_MEMBER_SIZE, BENCH_DIR (default /dev/shm; needs about 20x
# BENCH_MEMBER_SIZE free), BENCH_CONNECTIONS (default "1 2 4"), ERAID (a
# prebuilt binary; default: build target/release/eraid). Needs fio (with
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
ROUNDS=${BENCH_ROUNDS:-3}
MEMBER_SIZE=${BENCH_MEMBER_SIZE:-256M}
PARENT=${BENCH_DIR:-/dev/shm}
CONNECTIONS=(${BENCH_CONNECTIONS:-1 2 4})
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "bench-fio: BENCH_ROUNDS must be a positive whole number, not '$ROUNDS'" >&2; exit 2; }

for tool in fio nbdkit qemu-nbd qemu-img jq; do
  command -v "$tool" >/dev/null || { echo "bench-fio: $tool is not installed (see scripts/setup.sh)" >&2; exit 1; }
done
fio --enghelp=nbd >/dev/null 2>&1 || { echo "bench-fio: this fio has no nbd engine" >&2; exit 1; }

if [ -z "${ERAID:-}" ]; then
  cargo build --release -q -p eraid-cli
  ERAID=$PWD/target/release/eraid
fi

WORK=$(mktemp -d "$PARENT/eraid-bench.XXXXXX")
SERVER_PIDS=()
cleanup() {
  for pid in "${SERVER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${SERVER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
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

declare -A URI
# start_eraid TARGET [serve flags] MEMBER...: serves the members (in $WORK)
# on TARGET's socket.
start_eraid() {
  local target=$1
  shift
  local sock=$WORK/$target.sock
  (cd "$WORK" && exec "$ERAID" serve --socket "$sock" --control "$WORK/$target.ctl" "$@" \
    >"$WORK/$target.out" 2>>"$WORK/$target.log") &
  SERVER_PIDS+=($!)
  wait_for_socket "$sock" "$WORK/$target.log"
  URI[$target]="nbd+unix:///?socket=$sock"
}

# fio_run TARGET NAME RW BS JOBS [timed]: prints MiB/s (read + write).
fio_run() {
  local target=$1 name=$2 rw=$3 bs=$4 jobs=$5 timed=${6:-1}
  local slice=$((SIZE / jobs / 1048576 * 1048576))
  local extra=(--time_based=1 --runtime="$RUNTIME" --ramp_time=1)
  [ "$timed" = 1 ] || extra=()
  [ "$rw" = randrw ] && extra+=(--rwmixread=70)
  fio --name="$name" --ioengine=nbd --uri="${URI[$target]}" --rw="$rw" --bs="$bs" \
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
TARGETS=(nbdkit qemu raid0 raid0pool raid5 raid6)
ERAID_TARGETS=(raid0 raid0pool raid5 raid6)
declare -A RESULT LOCK_HELD LOCK_WAITING

# shellcheck source=lib/engine-lock.sh
source scripts/lib/engine-lock.sh
# lock_snapshot TARGET: "held_s waited_s uptime_s" of an eraid target's
# engine lock (empty for the others).
lock_snapshot() {
  [ -S "$WORK/$1.ctl" ] || return 0
  engine_lock_times "$ERAID" "$WORK/$1.ctl"
}

load_before=$(uptime)
echo "bench-fio: members $MEMBER_SIZE on $PARENT, ${RUNTIME}s per case, iodepth $IODEPTH per connection, $ROUNDS rounds" >&2

# RAID-6 first: its capacity is the common range.
(cd "$WORK" && "$ERAID" create --level 6 --chunk 64K --size "$MEMBER_SIZE" r6a r6b r6c r6d >/dev/null)
SIZE=$("$ERAID" detail --json "$WORK"/r6a "$WORK"/r6b "$WORK"/r6c "$WORK"/r6d | jq -r .capacity_bytes)
for array in 0 0pool 5; do
  level=${array%pool}
  (cd "$WORK" && "$ERAID" create --level "$level" --chunk 64K --size "$MEMBER_SIZE" \
    r${array}a r${array}b r${array}c r${array}d >/dev/null)
done

# In the foreground (-f) as a child of this script, so --exit-with-parent
# also covers an interrupted run; the pid file names it for cleanup.
nbdkit -f --exit-with-parent -P "$WORK/nbdkit.pid" -U "$WORK/nbdkit.sock" memory "$SIZE" \
  2>"$WORK/nbdkit.log" &
wait_for_socket "$WORK/nbdkit.sock" "$WORK/nbdkit.log"
URI[nbdkit]="nbd+unix:///?socket=$WORK/nbdkit.sock"

qemu-img create -q -f raw "$WORK/single.raw" "$SIZE"
qemu-nbd --fork --pid-file="$WORK/qemu-nbd.pid" --persistent --shared=8 -f raw \
  --socket="$WORK/qemu.sock" "$WORK/single.raw"
URI[qemu]="nbd+unix:///?socket=$WORK/qemu.sock"

start_eraid raid0 r0a r0b r0c r0d
# The same level with every device I/O handed to the I/O worker threads,
# as members that are not in memory are.
start_eraid raid0pool --io-path pool r0poola r0poolb r0poolc r0poold
start_eraid raid5 r5a r5b r5c r5d
start_eraid raid6 r6a r6b r6c r6d

for target in "${TARGETS[@]}"; do
  echo "bench-fio: filling $target" >&2
  fio_run "$target" "$target-fill" write 1M 1 0 >/dev/null
done

for round in $(seq "$ROUNDS"); do
  echo "bench-fio: round $round of $ROUNDS" >&2
  i=0
  for w in "${WORKLOADS[@]}"; do
    set -- $w
    for jobs in "${CONNECTIONS[@]}"; do
      for k in "${!TARGETS[@]}"; do
        target=${TARGETS[$(((k + round - 1) % ${#TARGETS[@]}))]}
        lock_before=$(lock_snapshot "$target")
        RESULT[$target,$i,$jobs,$round]=$(fio_run "$target" "$target-$1-$2-$jobs-$round" "$1" "$2" "$jobs")
        if [ -n "$lock_before" ]; then
          lock_after=$(lock_snapshot "$target")
          LOCK_HELD[$target,$i,$jobs,$round]=$(engine_lock_share "$lock_before" "$lock_after" 1)
          LOCK_WAITING[$target,$i,$jobs,$round]=$(engine_lock_share "$lock_before" "$lock_after" 2)
        fi
      done
    done
    i=$((i + 1))
  done
done
load_after=$(uptime)

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
low() { tr ' ' '\n' | grep -v '^$' | sort -g | head -1; }
high() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b; else print 0 }'; }
fixed2() { awk -v a="$1" 'BEGIN { printf "%.2f", a }'; }
fixed3() { awk -v a="$1" 'BEGIN { printf "%.3f", a }'; }
mib() { awk -v a="$1" 'BEGIN { printf "%.0f", a }'; }

# values TARGET I JOBS: the target's MiB/s in every round.
values() { table_values RESULT "$@"; }
# table_values TABLE TARGET I JOBS: the target's figure in TABLE (RESULT,
# LOCK_HELD or LOCK_WAITING) in every round.
table_values() {
  local -n table=$1
  local round out=
  for round in $(seq "$ROUNDS"); do out="$out ${table[$2,$3,$4,$round]}"; done
  echo "$out"
}
# ratios TARGET BASE_TARGET I JOBS [BASE_JOBS]: per-round ratios.
ratios() {
  local round out=
  for round in $(seq "$ROUNDS"); do
    out="$out $(ratio "${RESULT[$1,$3,$4,$round]}" "${RESULT[$2,$3,${5:-$4},$round]}")"
  done
  echo "$out"
}

echo
echo "fio nbd engine, ${RUNTIME}s per case after 1 s ramp, iodepth $IODEPTH per connection," \
  "one connection per fio job; eraid: 4 tmpfs members of $MEMBER_SIZE, 64 KiB chunks;" \
  "every target over the same $SIZE bytes; $ROUNDS rounds, targets interleaved per case;" \
  "$(nproc) CPUs; $(fio --version), $(nbdkit --version), $(qemu-nbd --version | head -1)."
echo "Load before: $load_before"
echo "Load after: $load_after"
echo
echo "Median MiB/s over the rounds (read + write for the mix), and the median of each target's per-round ratio to nbdkit memory at the same connection count:"
echo
echo "| workload | conns | nbdkit memory | qemu-nbd | ratio | RAID-0 x4 | ratio | RAID-0 x4, --io-path pool | ratio | RAID-5 x4 | ratio | RAID-6 x4 | ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
i=0
for label in "${LABELS[@]}"; do
  for jobs in "${CONNECTIONS[@]}"; do
    line="| $label | $jobs | $(mib "$(values nbdkit $i "$jobs" | median)")"
    for target in qemu raid0 raid0pool raid5 raid6; do
      line="$line | $(mib "$(values "$target" $i "$jobs" | median)") | $(fixed2 "$(ratios "$target" nbdkit $i "$jobs" | median)")"
    done
    echo "$line |"
  done
  i=$((i + 1))
done

echo
echo "Lowest - highest per-round ratio to nbdkit memory:"
echo
echo "| workload | conns | qemu-nbd | RAID-0 x4 | RAID-0 x4, --io-path pool | RAID-5 x4 | RAID-6 x4 |"
echo "|---|---|---|---|---|---|---|"
i=0
for label in "${LABELS[@]}"; do
  for jobs in "${CONNECTIONS[@]}"; do
    line="| $label | $jobs"
    for target in qemu raid0 raid0pool raid5 raid6; do
      r=$(ratios "$target" nbdkit $i "$jobs")
      line="$line | $(fixed2 "$(echo "$r" | low)") - $(fixed2 "$(echo "$r" | high)")"
    done
    echo "$line |"
  done
  i=$((i + 1))
done

# Issue 24's acceptance rows (2-4), each the median of per-round ratios.
has_connections() { local c; for c in "${CONNECTIONS[@]}"; do [ "$c" = "$1" ] && return 0; done; return 1; }
check() { # LABEL RATIOS THRESHOLD
  local m
  m=$(echo "$2" | median)
  # Three decimals: a median just under the threshold must not read as it.
  printf '| %s | %s | %s | %s - %s | %s |\n' "$1" "$3" "$(fixed3 "$m")" \
    "$(fixed2 "$(echo "$2" | low)")" "$(fixed2 "$(echo "$2" | high)")" \
    "$(awk -v m="$m" -v t="$3" 'BEGIN { print (m + 0 >= t + 0) ? "met" : "missed" }')"
}
echo
echo "Issue 24 acceptance rows (median of per-round ratios; met when at least the threshold):"
echo
echo "| row | threshold | median | lowest - highest | |"
echo "|---|---|---|---|---|"
if has_connections 1; then
  check "1 conn: RAID-0 / nbdkit, sequential write 128k" "$(ratios raid0 nbdkit 0 1)" 0.8
  check "1 conn: RAID-0 / nbdkit, sequential read 128k" "$(ratios raid0 nbdkit 1 1)" 0.8
  check "1 conn: RAID-0 / nbdkit, random read 4k" "$(ratios raid0 nbdkit 2 1)" 0.8
  check "1 conn: RAID-0 / nbdkit, random write 4k" "$(ratios raid0 nbdkit 3 1)" 0.7
  check "1 conn: RAID-5 / RAID-0, sequential write 1m" "$(ratios raid5 raid0 4 1)" 0.7
  check "1 conn: RAID-5 / qemu-nbd, random write 4k" "$(ratios raid5 qemu 3 1)" 1.0
fi
if has_connections 4; then
  check "4 conns: RAID-0 / nbdkit, sequential write 128k" "$(ratios raid0 nbdkit 0 4)" 0.8
  check "4 conns: RAID-0 / nbdkit, random read 4k" "$(ratios raid0 nbdkit 2 4)" 0.8
  check "4 conns: RAID-0 / nbdkit, random write 4k" "$(ratios raid0 nbdkit 3 4)" 0.8
  check "4 conns: RAID-5 / RAID-0, sequential write 1m" "$(ratios raid5 raid0 4 4)" 0.7
  check "4 conns: RAID-5 / RAID-0, random write 4k" "$(ratios raid5 raid0 3 4)" 0.4
fi

echo
echo "Engine lock per eraid target (median over the rounds): the share of each case's time the lock was held, and after the slash the average number of threads waiting for it:"
echo
echo "| workload | conns | RAID-0 x4 | RAID-0 x4, --io-path pool | RAID-5 x4 | RAID-6 x4 |"
echo "|---|---|---|---|---|---|"
i=0
for label in "${LABELS[@]}"; do
  for jobs in "${CONNECTIONS[@]}"; do
    line="| $label | $jobs"
    for target in "${ERAID_TARGETS[@]}"; do
      line="$line | $(fixed2 "$(table_values LOCK_HELD "$target" $i "$jobs" | median)") / $(fixed2 "$(table_values LOCK_WAITING "$target" $i "$jobs" | median)")"
    done
    echo "$line |"
  done
  i=$((i + 1))
done
