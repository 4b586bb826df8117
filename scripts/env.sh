# Sourced by the other scripts: picks the toolchain and sets the build environment.
#
# Two ways to build the WebAssembly half:
#   rustup  - rustup's toolchain has the wasm32-unknown-unknown target installed.
#   debian  - it has not (and cannot download it): Debian's rustc-web/cargo-web 1.96 build the
#             standard library for wasm32 from rust-web-src (-Zbuild-std), linked by lld's wasm-ld.
# One toolchain builds everything, so that all builds share one target directory.

GPUSHARE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GPUSHARE_ROOT

# Builds are shared between clones: CI's fresh clone reuses what earlier builds compiled.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gpushare/target}"
export PATH="$HOME/.cargo/bin:$PATH"

gpushare_has_rustup_wasm() {
  command -v rustup >/dev/null 2>&1 \
    && rustup target list --installed 2>/dev/null | grep -qx 'wasm32-unknown-unknown'
}

if [ -z "${GPUSHARE_TOOLCHAIN:-}" ]; then
  if gpushare_has_rustup_wasm; then
    GPUSHARE_TOOLCHAIN=rustup
  else
    GPUSHARE_TOOLCHAIN=debian
  fi
fi
export GPUSHARE_TOOLCHAIN

# Extra arguments for the WebAssembly build, and the environment it needs.
GPUSHARE_WASM_ARGS=()
if [ "$GPUSHARE_TOOLCHAIN" = debian ]; then
  export PATH="/usr/bin:$PATH"
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld
  GPUSHARE_WASM_ARGS=(--lib-cargo-args=-Zbuild-std=std,panic_abort)
fi

# The Python environment with boto3 for `gpushare bench fleet`'s comparison with a boto3 script.
export GPUSHARE_PYTHON="${GPUSHARE_PYTHON:-$HOME/.cache/gpushare/venv/bin/python}"

# The npm packages' commands, installed in end2end/.
export PATH="$GPUSHARE_ROOT/end2end/node_modules/.bin:$PATH"

# The exact wasm-bindgen version the app is built against; its CLI must match it.
gpushare_wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' \
    "$GPUSHARE_ROOT/Cargo.lock"
}

# A step's name with the time it starts (UTC), so that a log says where its time went.
gpushare_step() {
  printf '\n==> %s  [%s]\n' "$*" "$(date -u +%H:%M:%S)"
}
