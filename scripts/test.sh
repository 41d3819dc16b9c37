#!/usr/bin/env bash
# The test command: set up, then every test of the workspace (unit,
# property, model-based, crash, real NBD clients, ext4 over nbdfuse).
# Slow soak runs are opt-in: ERAID_SOAK=1 raises the seed counts.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ "${ERAID_SOAK:-0}" = 1 ]; then
  export ERAID_MODEL_SEEDS=200 ERAID_CRASH_SEEDS=2000 ERAID_GROWTH_SEEDS=50 ERAID_GROWTH_CRASH_SEEDS=500 \
    ERAID_METADATA_FUZZ_CASES=20000 ERAID_REBUILD_SEEDS=100 ERAID_DST_SEEDS=2000
fi
cargo build --release -p eraid-cli
cargo test --release --workspace --no-fail-fast
