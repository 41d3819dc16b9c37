#!/usr/bin/env bash
# The main job: set up, build, and run `eraid demo` (RAID-5 on sparse files,
# served over NBD, verified with nbdcopy, grown online from 4 to 5 members,
# then read degraded).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release -p eraid-cli
exec target/release/eraid demo "$@"
