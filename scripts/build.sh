#!/usr/bin/env bash
# Builds the console: the WebAssembly half, the stylesheet and assets into target/site, and the
# server binary. `--release` for an optimised build (what `run.sh` uses); `--site-only` builds the
# site alone; `--tests` builds the site the end-to-end tests load (`test.sh`, whose server is the
# tests' own debug build): the release code, without the whole-program link.
#
# This is what `cargo leptos build` does, with plain cargo and wasm-bindgen, so that a
# new machine need not build cargo-leptos first. The environment below is the one cargo-leptos
# gives its builds (the workspace's [[workspace.metadata.leptos]]), so that `cargo leptos watch`
# and this script reuse each other's builds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$GPUSHARE_ROOT"

release=0
tests=0
server=1
for arg in "$@"; do
  case "$arg" in
    --release) release=1 ;;
    --site-only) server=0 ;;
    --tests) tests=1 server=0 ;;
    *)
      echo "build.sh: unknown argument '$arg' (expected --release, --site-only or --tests)" >&2
      exit 2
      ;;
  esac
done
if [ "$release" = 1 ] && [ "$tests" = 1 ]; then
  echo "build.sh: --release and --tests are two different builds of the site; give one of them" >&2
  exit 2
fi

site="$GPUSHARE_ROOT/target/site"
pkg="$site/pkg"
export LEPTOS_OUTPUT_NAME=gpushare LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_PKG_DIR=pkg \
  LEPTOS_SITE_ADDR=127.0.0.1:3000 LEPTOS_RELOAD_PORT=3001 LEPTOS_LIB_DIR=app \
  LEPTOS_BIN_DIR=server LEPTOS_HASH_FILES=false
if [ "$release" = 1 ]; then
  export LEPTOS_JS_MINIFY=true
  wasm_profile=wasm-release server_profile=(--release) server_dir=release
elif [ "$tests" = 1 ]; then
  # Compressed copies as a release build has them, which the end-to-end tests check are sent.
  export LEPTOS_JS_MINIFY=true
  wasm_profile=wasm-tests server_profile=() server_dir=debug
else
  export LEPTOS_JS_MINIFY=false
  wasm_profile=dev server_profile=() server_dir=debug
fi

# The server's build runs beside the browser half's steps, most of which keep one core busy
# (installing wasm-bindgen's CLI, the single-unit WebAssembly link). Its output is kept
# in a log and shown once the browser half is done. GPUSHARE_BUILD_TIMINGS=1 has cargo write a
# report of where the server's build spent its time (target/cargo-timings/).
server_log="$(mktemp)"
server_build=(cargo build --package=gpushare --bin=gpushare --no-default-features "${server_profile[@]}")
if [ "${GPUSHARE_BUILD_TIMINGS:-0}" = 1 ]; then server_build+=(--timings); fi
server_pid=""
if [ "$server" = 1 ]; then
  gpushare_step "building the server (${server_profile[*]:-debug}) in the background"
  "${server_build[@]}" >"$server_log" 2>&1 &
  server_pid=$!
fi
trap '[ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true; rm -f "$server_log"' EXIT

# wasm-bindgen's CLI must be exactly the version of the wasm-bindgen crate in Cargo.lock.
# Without --locked: its lock file pins a crate version the registry no longer serves.
bindgen_version="$(gpushare_wasm_bindgen_version)"
if ! wasm-bindgen --version 2>/dev/null | grep -q " $bindgen_version\$"; then
  gpushare_step "installing wasm-bindgen-cli $bindgen_version"
  # In a target directory of its own: the shared one's lock would have it wait for the server.
  # Unoptimised: it builds in 75 s instead of 208 (alone on two cores) and binds the site in 6 s
  # instead of 1.4, byte for byte the same file; a first run spends its time building, not binding.
  CARGO_TARGET_DIR="$CARGO_TARGET_DIR/tools" CARGO_PROFILE_RELEASE_OPT_LEVEL=0 \
    cargo install wasm-bindgen-cli --version "$bindgen_version" --force
fi

# Copies compressed at the best quality, once per build, which the server sends in place of
# compressing each file on every request (server/src/http/site.rs). Written after their file, so
# never older than it; a debug build only removes them.
precompress() {
  for file in "$@"; do
    rm -f "$file.br" "$file.gz"
    if [ "$release" = 1 ] || [ "$tests" = 1 ]; then
      brotli --best --force --output="$file.br" "$file"
      gzip --best --force --keep "$file"
      # Both tools give a copy its file's time (brotli to the second): the server takes a copy
      # older than its file for a stale one.
      touch "$file.br" "$file.gz"
    fi
  done
}

gpushare_step "building the browser half ($wasm_profile)"
front="$CARGO_TARGET_DIR/front"
wasm_build=(cargo build --package=app --lib --target-dir="$front" --target=wasm32-unknown-unknown
  --no-default-features --features=hydrate --profile="$wasm_profile")
if [ "$GPUSHARE_TOOLCHAIN" = debian ]; then
  # Only this build needs unstable cargo flags, to build std for wasm32.
  RUSTC_BOOTSTRAP=1 "${wasm_build[@]}" -Zbuild-std=std,panic_abort
else
  "${wasm_build[@]}"
fi
mkdir -p "$pkg"
input="$front/wasm32-unknown-unknown/$([ "$wasm_profile" = dev ] && echo debug || echo "$wasm_profile")/app.wasm"
# Binding and compressing: skipped when the site already holds this very build.
stamp="$wasm_profile $(stat -c %Y "$input") $(wasm-bindgen --version)"
if [ "$(cat "$GPUSHARE_ROOT/target/.site-built-from" 2>/dev/null)" = "$stamp" ] && [ -f "$pkg/gpushare.wasm" ]; then
  echo "the site's WebAssembly is this build's already"
else
  bindgen=(wasm-bindgen --target=web --out-name=gpushare --out-dir="$pkg")
  # Without the functions' names (59 MB once demangled) but in a debug build. No `wasm-opt -Oz`
  # after it: the file it wrote was 13 % smaller (4.03 MB against 4.64) but compressed worse, 1,025
  # KB of brotli against 921 KB of this one, which is what a browser downloads (README, "How the
  # build works").
  if [ "$wasm_profile" != dev ]; then bindgen+=(--remove-name-section); fi
  "${bindgen[@]}" "$input"
  # The name the server's hydration script asks for (as cargo-leptos names it).
  mv -f "$pkg/gpushare_bg.wasm" "$pkg/gpushare.wasm"
  precompress "$pkg/gpushare.wasm" "$pkg/gpushare.js"
  echo "$stamp" > "$GPUSHARE_ROOT/target/.site-built-from"
fi

gpushare_step "copying the stylesheet and assets"
cp style/main.css "$pkg/gpushare.css"
cp -R public/. "$site/"
precompress "$pkg/gpushare.css"

if [ "$server" = 0 ]; then
  echo "built the site in $site"
  exit 0
fi
gpushare_step "the server's build (${server_profile[*]:-debug}), which ran beside the browser half"
# Its output so far, then the rest as it comes.
tail -n +1 -f --pid="$server_pid" "$server_log"
if ! wait "$server_pid"; then
  echo "the server's build failed (its output is above)" >&2
  exit 1
fi
echo "built $CARGO_TARGET_DIR/$server_dir/gpushare and the site in $site"
