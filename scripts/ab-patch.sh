#!/usr/bin/env bash
# Measures a change kept out of the tree against the tree it was made on
# (a measurement, not a test; CI does not run it). The README's "tried
# and left out" notes come from it: the patch stays in scripts/tried/ so
# anyone can redo the comparison.
#
#   scripts/ab-patch.sh PATCH ROUNDS LEVEL RW BS [CONNECTIONS] [LOOPS]
#   e.g. scripts/ab-patch.sh scripts/tried/splice-reads.patch 4 0 read 128k 1
#
# Builds the release `eraid` of the patch's base and of the base with
# PATCH applied (the base is the commit a `base: COMMIT` line before the
# patch's first diff names, else HEAD; in a temporary git worktree, sharing one target
# directory so the second build is incremental; CARGO_TARGET_DIR, if set,
# is that directory), then runs
# `scripts/cpu-per-gib.sh` with LEVEL RW BS CONNECTIONS LOOPS ROUNDS
# times per binary, ordered ABBA so neither always runs first, and
# prints each run's line tagged `head` (the base) or `patched`. Needs
# git, cargo and what cpu-per-gib.sh needs. A patch that does not apply
# to its base stops the script before anything is built.
set -euo pipefail
[ $# -ge 5 ] || { echo "usage: scripts/ab-patch.sh PATCH ROUNDS LEVEL RW BS [CONNECTIONS] [LOOPS]" >&2; exit 2; }
PATCH=$(realpath "$1"); ROUNDS=$2; shift 2
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ab-patch: ROUNDS must be a positive whole number, not '$ROUNDS'" >&2; exit 2; }
[ -f "$PATCH" ] || { echo "ab-patch: no patch file $PATCH" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TREE=$(mktemp -d "${TMPDIR:-/tmp}/eraid-ab-patch.XXXXXX")
cleanup() {
  git -C "$ROOT" worktree remove --force "$TREE/src" >/dev/null 2>&1 || true
  rm -rf "$TREE"
}
trap cleanup EXIT
BASE=$(sed -n '/^diff --git/q; s/^base: *\([0-9a-f]\{7,40\}\) *$/\1/p' "$PATCH" | head -n 1)
BASE=${BASE:-HEAD}
git -C "$ROOT" rev-parse --verify --quiet "$BASE^{commit}" >/dev/null ||
  { echo "ab-patch: the patch's base $BASE is not a commit of this repository" >&2; exit 1; }
git -C "$ROOT" worktree add --detach "$TREE/src" "$BASE" >/dev/null
git -C "$TREE/src" apply --check "$PATCH" ||
  { echo "ab-patch: $PATCH does not apply to its base $BASE" >&2; exit 1; }
# An existing CARGO_TARGET_DIR is reused (dependencies built once across runs).
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$TREE/target}
(cd "$TREE/src" && cargo build --release -q -p eraid-cli)
cp "$CARGO_TARGET_DIR/release/eraid" "$TREE/head"
git -C "$TREE/src" apply "$PATCH"
(cd "$TREE/src" && cargo build --release -q -p eraid-cli)
cp "$CARGO_TARGET_DIR/release/eraid" "$TREE/patched"
for _ in $(seq "$ROUNDS"); do
  for which in head patched patched head; do
    echo "$which $("$ROOT/scripts/cpu-per-gib.sh" "$TREE/$which" "$@")"
  done
done
