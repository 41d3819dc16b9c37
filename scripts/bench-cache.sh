#!/usr/bin/env bash
# Benchmark (reported, not a test; CI does not run it): random 4 KiB writes
# over NBD (fio's nbd engine) to a 5-member RAID-5 on tmpfs-backed members,
# with the write-back cache (msc-ct, with its journal, also on tmpfs) and
# without (cache none), side by side in one run; prints a Markdown table
# and the throughput ratio.
#
#   scripts/bench-cache.sh
#
# Environment knobs: FIO_RUNTIME_S (default 20), FIO_IODEPTH (32),
# BENCH_MEMBER_SIZE (256M), BENCH_SPAN (the range fio writes, 64M),
# BENCH_CACHE_SIZE (256M), BENCH_DIR (default /dev/shm), BENCH_STRIDE
# (create's stride-rule flags for msc-ct, default --no-tune: the default
# rule, S_r_max = S_w_max = 8, as the README's figures were measured; the
# stride benchmark on tmpfs measures no penalty, so it would record 1, no
# transform; give BENCH_STRIDE= to measure), ERAID (a prebuilt
# binary; default: build target/release/eraid). Needs fio with the nbd
# engine, and jq.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME=${FIO_RUNTIME_S:-20}
IODEPTH=${FIO_IODEPTH:-32}
MEMBER_SIZE=${BENCH_MEMBER_SIZE:-256M}
SPAN=${BENCH_SPAN:-64M}
CACHE_SIZE=${BENCH_CACHE_SIZE:-256M}
STRIDE=${BENCH_STRIDE---no-tune}
PARENT=${BENCH_DIR:-/dev/shm}

for tool in fio jq; do
  command -v "$tool" >/dev/null || { echo "bench-cache: $tool is not installed (see scripts/setup.sh)" >&2; exit 1; }
done
fio --enghelp=nbd >/dev/null 2>&1 || { echo "bench-cache: this fio has no nbd engine" >&2; exit 1; }

if [ -z "${ERAID:-}" ]; then
  cargo build --release -q -p eraid-cli
  ERAID=$PWD/target/release/eraid
fi

WORK=$(mktemp -d "$PARENT/eraid-bench-cache.XXXXXX")
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

start_eraid() { # members...
  local sock=$WORK/eraid.sock
  rm -f "$sock"
  (cd "$WORK" && exec "$ERAID" serve --socket "$sock" "$@" >"$WORK/serve.out" 2>>"$WORK/serve.log") &
  SERVER_PID=$!
  for _ in $(seq 300); do [ -S "$sock" ] && break; sleep 0.05; done
  [ -S "$sock" ] || { echo "bench-cache: eraid serve did not start:" >&2; cat "$WORK/serve.log" >&2; exit 1; }
  URI="nbd+unix:///?socket=$sock"
}

stop_eraid() {
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID" || { echo "bench-cache: eraid serve did not exit cleanly" >&2; cat "$WORK/serve.log" >&2; exit 1; }
  SERVER_PID=
}

randwrite() { # name -> "iops bw_bytes_per_s"
  local name=$1
  fio --name="$name" --ioengine=nbd --uri="$URI" --rw=randwrite --bs=4k \
      --iodepth="$IODEPTH" --numjobs=1 --size="$SPAN" --randrepeat=0 \
      --time_based=1 --runtime="$RUNTIME" --ramp_time=1 \
      --output-format=json >"$WORK/$name.json" 2>"$WORK/$name.err" ||
    { echo "bench-cache: fio $name failed:" >&2; cat "$WORK/$name.err" >&2; exit 1; }
  sed -n '/^{/,$p' "$WORK/$name.json" | jq -r '.jobs[0].write | "\(.iops) \(.bw_bytes)"'
}

echo "bench-cache: 5 members of $MEMBER_SIZE on $PARENT, ${RUNTIME}s, iodepth $IODEPTH, span $SPAN" >&2
(cd "$WORK" && "$ERAID" create --level 5 --size "$MEMBER_SIZE" n0 n1 n2 n3 n4 >/dev/null)
# shellcheck disable=SC2086 # STRIDE is zero or more flags
(cd "$WORK" && "$ERAID" create --level 5 --size "$MEMBER_SIZE" --journal j.img --cache msc-ct \
  --cache-size "$CACHE_SIZE" $STRIDE c0 c1 c2 c3 c4 >/dev/null)

echo "bench-cache: cache none" >&2
start_eraid n0 n1 n2 n3 n4
NONE=$(randwrite none)
stop_eraid
rm -f "$WORK"/n?

echo "bench-cache: cache msc-ct with journal" >&2
start_eraid c0 c1 c2 c3 c4
CACHED=$(randwrite msc-ct)
STATUS_NOTE=$(grep -c replaying "$WORK/serve.log" || true)
stop_eraid

cell() { awk -v v="$1" 'BEGIN { split(v, a, " "); printf "%.1fk IOPS, %.1f MiB/s", a[1] / 1000, a[2] / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); if (y[1] > 0) printf "%.2f", x[1] / y[1]; else print "n/a" }'; }

echo
echo "random 4 KiB writes, fio nbd engine, ${RUNTIME}s, iodepth $IODEPTH, 1 job, over $SPAN;" \
  "RAID-5 of 5 tmpfs members of $MEMBER_SIZE; $(nproc) CPUs; fio $(fio --version)"
echo
echo "| cache none | cache msc-ct + journal ($CACHE_SIZE) | msc-ct / none |"
echo "|---|---|---|"
echo "| $(cell "$NONE") | $(cell "$CACHED") | $(ratio "$CACHED" "$NONE") |"
[ "$STATUS_NOTE" = 0 ] || echo "(note: the cached run replayed a journal at start)"
