#!/usr/bin/env bash
# Installs everything gpushare needs to build and test, skipping what is already there.
# Safe to run again: a second run takes seconds. Downloads only from the package registries.
#
#   setup.sh           everything: building, and running the tests (what test.sh calls)
#   setup.sh --build   only what building and serving need (what run.sh calls): no browser,
#                      no PostgreSQL, no benchmark tools
#
# wasm-bindgen's CLI is installed by build.sh, while the server compiles beside it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

build_only=0
case "${1:-}" in
  --build) build_only=1 ;;
  "") ;;
  *) echo "setup.sh: unknown option '$1' (use --build, or nothing)" >&2; exit 2 ;;
esac

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

apt_updated=0
apt_install() {
  local missing=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  gpushare_step "installing Debian packages: ${missing[*]}"
  if [ "$apt_updated" = 0 ]; then
    $SUDO apt-get update -q
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The Rust toolchain.
if [ "$GPUSHARE_TOOLCHAIN" = debian ]; then
  apt_install rustc-web cargo-web rust-web-src rust-web-clippy rustfmt-web lld
else
  rustup component add clippy rustfmt >/dev/null
fi

# brotli compresses the site's files once per release build.
apt_install brotli

if [ "$build_only" = 0 ]; then
  # npm packages: the browser driver for the end-to-end tests, the accessibility checker, and the
  # OpenID Connect provider they sign in with.
  command -v node >/dev/null 2>&1 || apt_install nodejs npm
  if [ ! -d "$GPUSHARE_ROOT/end2end/node_modules/playwright-core" ] \
    || [ "$GPUSHARE_ROOT/end2end/package-lock.json" -nt "$GPUSHARE_ROOT/end2end/node_modules/.package-lock.json" ]; then
    gpushare_step "installing npm packages in end2end/"
    (cd "$GPUSHARE_ROOT/end2end" && npm ci --no-audit --no-fund)
  fi

  # The browser for the end-to-end tests; wrk, which measures the JSON API's throughput in
  # `gpushare bench fleet`; PostgreSQL, whose binaries the audit log's tests start a server from.
  apt_install chromium wrk postgresql

  # boto3 from PyPI, in its own virtual environment: `gpushare bench fleet` times the fleet walk
  # as a plain sequential boto3 script would do it.
  boto3_version=1.43.11
  if ! "$GPUSHARE_PYTHON" -c "import boto3, sys; sys.exit(boto3.__version__ != '$boto3_version')" 2>/dev/null; then
    gpushare_step "installing boto3 $boto3_version in $(dirname "$(dirname "$GPUSHARE_PYTHON")")"
    python3 -c 'import venv' 2>/dev/null || apt_install python3-venv
    python3 -m venv "$(dirname "$(dirname "$GPUSHARE_PYTHON")")"
    "$GPUSHARE_PYTHON" -m pip install --quiet --disable-pip-version-check "boto3==$boto3_version"
  fi

  # cargo-nextest runs the Rust tests; the machine image usually has it.
  if ! cargo nextest --version >/dev/null 2>&1; then
    gpushare_step "installing cargo-nextest"
    cargo install cargo-nextest --locked
  fi
fi

gpushare_step "set-up complete (toolchain: $GPUSHARE_TOOLCHAIN, $(cargo --version))"
