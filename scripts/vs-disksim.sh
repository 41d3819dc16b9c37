#!/usr/bin/env bash
# Side by side with DiskSim: replays each drive's measured trace
# (data/disk-models/<drive>/) through eraid and through a DiskSim 4.0 build,
# and prints each one's mean service time, demerit and wall time.
#
#   scripts/vs-disksim.sh DISKSIM_DIR [DRIVE...]
#
# DISKSIM_DIR is a built DiskSim source tree (it holds src/disksim,
# src/rms and valid/statdefs), e.g. westerndigitalcorporation/DiskSim's
# STABLE/DiskSim_Linux_Generic_2.01.016 after `make`. DRIVE defaults to all
# eleven. DiskSim runs in a scratch folder on copies of the same files
# eraid reads; a run that has not finished after ${DISKSIM_TIMEOUT_S:-120} s
# is reported as such.
#
# Columns: mean service time measured / eraid / DiskSim (ms); eraid's
# demerit; DiskSim's demerit as its own `rms` tool computes it (from binned
# distributions) and, for a like-for-like figure, as eraid computes it
# (exact CDFs, from DiskSim's per-request log); wall time of each
# simulator's whole run (load, replay, report) and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 DISKSIM_DIR [DRIVE...]   (DISKSIM_DIR: a built DiskSim tree)" >&2
  exit 2
fi
disksim_dir=$(cd "$1" && pwd)
shift
for f in src/disksim src/rms valid/statdefs; do
  if [ ! -e "$disksim_dir/$f" ]; then
    echo "$0: $disksim_dir/$f is missing: is DiskSim built there?" >&2
    exit 2
  fi
done
drives=("$@")
if [ ${#drives[@]} -eq 0 ]; then
  drives=(atlas10k atlas_III barracuda cheetah4LP cheetah9LP dec_rz26
    hp_c2247a hp_c2490a hp_c3323a ibm18es st41601n)
fi
for d in "${drives[@]}"; do
  if [ ! -f "data/disk-models/$d/$d.parv" ]; then
    echo "$0: no drive '$d' (data/disk-models/$d/$d.parv)" >&2
    exit 2
  fi
done

cargo build --release -q -p eraid-cli
eraid=$PWD/target/release/eraid
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }

# Demerit as eraid computes it: RMS distance between the quantiles of two
# samples at every 0.0001 of cumulative fraction. Args: two files of values.
demerit() {
  awk 'FNR == 1 { f++ }
       f == 1 { a[++na] = $1 } f == 2 { b[++nb] = $1 }
       function q(s, n, p,   i) { i = int(p * n); if (i < p * n) i++;
                                  if (i < 1) i = 1; if (i > n) i = n; return s[i] }
       END { if (na == 0 || nb == 0) { print "nan"; exit }
             for (k = 1; k <= 10000; k++) { d = q(a, na, k / 10000) - q(b, nb, k / 10000); s += d * d }
             printf "%.3f", sqrt(s / 10000) }' \
    <(sort -g "$1") <(sort -g "$2")
}

printf '%-11s %6s | %8s %8s %8s | %7s %7s %7s | %7s %8s %7s\n' \
  drive reqs measured eraid disksim eraid disksim "ds-exact" eraid_s disksim_s ratio
for d in "${drives[@]}"; do
  model=data/disk-models/$d
  trace=$model/$d.trace
  awk '{ print $5 / 1000 }' "$trace" >"$scratch/measured"

  t0=$(now)
  json=$("$eraid" disk validate --model "$model" --trace "$trace" --json)
  t1=$(now)
  eraid_s=$(elapsed "$t0" "$t1")
  field() { echo "$json" | sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p"; }
  requests=$(field requests)
  eraid_demerit=$(printf '%.3f' "$(field demerit_ms)")
  measured_mean=$(printf '%.3f' "$(field mean_service_ms_measured)")
  eraid_mean=$(printf '%.3f' "$(field mean_service_ms_simulated)")

  run=$scratch/$d
  mkdir -p "$run"
  cp "$model"/* "$run"/
  cp "$disksim_dir/valid/statdefs" "$run"/
  t0=$(now)
  status=0
  (cd "$run" && timeout "${DISKSIM_TIMEOUT_S:-120}" "$disksim_dir/src/disksim" \
    "$d.parv" out.outv validate "$d.trace" 0 >/dev/null 2>&1) || status=$?
  t1=$(now)
  disksim_s=$(elapsed "$t0" "$t1")
  if [ "$status" -ne 0 ]; then
    why="did not finish in ${DISKSIM_TIMEOUT_S:-120} s"
    [ "$status" -ne 124 ] && why="exited with status $status"
    printf '%-11s %6s | %8s %8s %8s | %7s %7s %7s | %7.3f %8s %7s\n' \
      "$d" "$requests" "$measured_mean" "$eraid_mean" "-" "$eraid_demerit" "-" "-" \
      "$eraid_s" "-" "-"
    echo "  DiskSim $why on $d"
    continue
  fi
  disksim_demerit=$("$disksim_dir/src/rms" "$run/out.outv" "$run/out.outv" -1 -1 1 |
    awk '{ printf "%.3f", $3 }')
  disksim_mean=$(awk -F: '/^IOdriver Response time average/ { printf "%.3f", $2; exit }' \
    "$run/out.outv")
  # Per-request service times (CCT, ms); DiskSim leaves the last request out.
  awk -F, 'NR > 1 && $2 > 0 { print $8 }' "$run/log_sim_results.csv" >"$scratch/disksim"
  disksim_exact=$(demerit "$scratch/measured" "$scratch/disksim")
  ratio=$(awk -v a="$disksim_s" -v b="$eraid_s" 'BEGIN { print a / b }')
  printf '%-11s %6s | %8s %8s %8s | %7s %7s %7s | %7.3f %8.3f %6.0fx\n' \
    "$d" "$requests" "$measured_mean" "$eraid_mean" "$disksim_mean" \
    "$eraid_demerit" "$disksim_demerit" "$disksim_exact" "$eraid_s" "$disksim_s" "$ratio"
done
