#!/bin/bash
# A/B helper for the data path (a measurement, not a test): one fio case
# against `eraid serve` on a fresh RAID array of four 128 MiB tmpfs
# members (64 KiB chunks), filled first by one sequential 1M pass; prints
# MiB/s (read + write). Run it alternately with two binaries to compare
# them side by side:
#
#   scripts/ab-fio.sh BIN RW BS [CONNECTIONS] [LEVEL]
#   e.g. for i in 1 2 3; do scripts/ab-fio.sh ./old randwrite 4k 1; scripts/ab-fio.sh ./new randwrite 4k 1; done
#
# RW and BS are fio's --rw and --bs; CONNECTIONS (default 1) fio jobs, one
# NBD connection each, each on its own slice; LEVEL (default 0) the RAID
# level. 3 s after a 1 s ramp, iodepth 32 per connection. Needs fio (with
# its nbd engine) and jq.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: scripts/ab-fio.sh BIN RW BS [CONNECTIONS] [LEVEL]" >&2; exit 2; }
BIN=$(realpath "$1"); RW=$2; BS=$3; JOBS=${4:-1}; LEVEL=${5:-0}
# shellcheck source=lib/fio-array.sh
source "$(dirname "$0")/lib/fio-array.sh"
serve_filled ab-fio "$BIN" "$LEVEL"
U=$URI
fio --name=case --ioengine=nbd --uri="$U" --rw="$RW" --bs="$BS" --iodepth=32 --numjobs="$JOBS" \
  --offset_increment=$((360 / JOBS))M --size=$((360 / JOBS))M --group_reporting \
  --time_based=1 --runtime=3 --ramp_time=1 --output-format=json 2>/dev/null |
  sed -n '/^{/,$p' | jq -r '.jobs[0] | ((.read.bw_bytes + .write.bw_bytes) / 1048576 | floor)'
