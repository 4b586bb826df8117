#!/usr/bin/env bash
# Command 1 of the README: set up, build, and start the console on http://127.0.0.1:3000.
# Arguments are passed to `gpushare serve` (see `--help`).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$GPUSHARE_ROOT"

"$GPUSHARE_ROOT/scripts/setup.sh" --build
"$GPUSHARE_ROOT/scripts/build.sh" --release

gpushare_step "starting gpushare"
export GPUSHARE_SITE_ROOT="${GPUSHARE_SITE_ROOT:-$GPUSHARE_ROOT/target/site}"
# The audit log's SQLite file lives in the checkout's data/ unless told otherwise.
export GPUSHARE_DATA_DIR="${GPUSHARE_DATA_DIR:-$GPUSHARE_ROOT/data}"
# The allocator gives freed memory back to the system at once, not after a delay that an idle
# thread never ends: on `large` this keeps about 25 MiB less resident (see the README).
export MIMALLOC_PURGE_DELAY="${MIMALLOC_PURGE_DELAY:-0}"
exec "$CARGO_TARGET_DIR/release/gpushare" serve "$@"
