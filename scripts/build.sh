#!/usr/bin/env bash
# Builds the console: the WebAssembly half, the stylesheet and assets into target/site, and the
# server binary. `--release` for an optimised build (what `run.sh` and the tests use).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$GPUSHARE_ROOT"

profile_args=()
if [ "${1:-}" = "--release" ]; then profile_args=(--release); fi

gpushare_step "building the browser half (${profile_args[*]:-debug})"
if [ "$GPUSHARE_TOOLCHAIN" = debian ]; then
  # Only this build needs unstable cargo flags, to build std for wasm32.
  RUSTC_BOOTSTRAP=1 cargo leptos build "${profile_args[@]}" --frontend-only "${GPUSHARE_WASM_ARGS[@]}"
else
  cargo leptos build "${profile_args[@]}" --frontend-only
fi

gpushare_step "building the server (${profile_args[*]:-debug})"
cargo leptos build "${profile_args[@]}" --server-only
