#!/usr/bin/env bash
# Runs the fuzz targets (fuzz/fuzz_targets/) with cargo fuzz on the nightly
# toolchain: scripts/fuzz.sh TARGET|all SECONDS. Each target starts from
# its seed corpus (fuzz/corpus/TARGET); a crash stops that target, leaves
# the input in fuzz/artifacts/TARGET/ and makes the script exit 1 after
# the others have run. `scripts/fuzz.sh list` names the targets.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/fuzz.sh TARGET|all SECONDS   (scripts/fuzz.sh list: the targets)" >&2
  exit 2
}

targets_all() {
  sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^eraid-fuzz$'
}

[ $# -ge 1 ] || usage
if [ "$1" = list ]; then
  targets_all
  exit 0
fi
[ $# -eq 2 ] || usage
target=$1
seconds=$2
case "$seconds" in
  '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;;
esac
if [ "$target" = all ]; then
  targets=$(targets_all)
elif targets_all | grep -qx "$target"; then
  targets=$target
else
  echo "fuzz.sh: no fuzz target '$target'; targets: $(targets_all | tr '\n' ' ')" >&2
  exit 2
fi

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz.sh: the nightly toolchain is needed: rustup toolchain install nightly" >&2
  exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz (cargo install cargo-fuzz --locked)" >&2
  cargo install cargo-fuzz --locked
fi

failed=()
for t in $targets; do
  echo "== $t: ${seconds} s"
  mkdir -p "fuzz/corpus/$t"
  if ! cargo +nightly fuzz run -O "$t" "fuzz/corpus/$t" -- \
      -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1; then
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: crashes in: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
  exit 1
fi
echo "fuzz.sh: no crash in $(echo $targets | wc -w) target(s), ${seconds} s each"
