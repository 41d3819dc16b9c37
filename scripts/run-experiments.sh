#!/usr/bin/env bash
# Runs experiment files one after another and records, per file, whether it
# ran to the end and its wall time, so "every file in experiments/ runs" is
# something anyone can check on a fresh clone (it takes hours for all of
# them on a 2-core machine: the per-file times are in experiments/README.md).
#
#   scripts/run-experiments.sh OUT_DIR [FILE...]
#
# FILE defaults to every experiments/*.toml. Each file's results go to
# OUT_DIR/<name>/ and its output to OUT_DIR/<name>.log; OUT_DIR/runs.tsv
# gets one line per file (name, exit status, wall seconds, commit) as each
# finishes, so an interrupted pass still says what ran. ERAID_JOBS sets
# `--jobs` (default: one per core). Exits 1 if any file failed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ]; then
  echo "usage: $0 OUT_DIR [FILE...]   (FILE: experiments/*.toml by default)" >&2
  exit 2
fi
out_dir=$1
shift
if [ $# -gt 0 ]; then
  files=("$@")
else
  files=(experiments/*.toml)
fi
for f in "${files[@]}"; do
  if [ ! -f "$f" ]; then
    echo "$0: no experiment file '$f'" >&2
    exit 2
  fi
done

cargo build --release -p eraid-cli
mkdir -p "$out_dir"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
jobs_args=()
if [ -n "${ERAID_JOBS:-}" ]; then
  jobs_args=(--jobs "$ERAID_JOBS")
fi

failed=()
for f in "${files[@]}"; do
  name=$(basename "$f" .toml)
  echo "== $name"
  start_s=$(date +%s)
  status=0
  target/release/eraid experiment run "$f" --out "$out_dir/$name" --quiet \
    "${jobs_args[@]}" >"$out_dir/$name.log" 2>&1 || status=$?
  wall_s=$(($(date +%s) - start_s))
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$wall_s" "$commit" >>"$out_dir/runs.tsv"
  if [ "$status" -ne 0 ]; then
    echo "   FAILED (exit $status) after ${wall_s} s: see $out_dir/$name.log"
    failed+=("$name")
  else
    echo "   done in ${wall_s} s"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "$0: failed: ${failed[*]}" >&2
  exit 1
fi
echo "$0: all ${#files[@]} experiment file(s) ran"
