#!/usr/bin/env bash
# Command 2 of the README: set up, then run every check and test. `.ci/run` calls this.
#   formatting, clippy (server side and browser side), the Rust unit and integration tests,
#   the site's build for the tests (the release code of the WebAssembly), and the end-to-end
#   tests and the one-minute soak in headless Chromium against the server binary the tests'
#   build made.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$GPUSHARE_ROOT"

"$GPUSHARE_ROOT/scripts/setup.sh"

# The workspace's crates are built from scratch here (a fresh clone's paths are new to cargo), where
# incremental compilation only adds work: the server crate's library took 136 s with it and 100 s
# without. Set CARGO_INCREMENTAL=1 to keep it, for runs of the same checkout one after the other.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

logs="$(mktemp -d)"
server_pid=""
site_pid=""
proxied_pid=""
provider_pid=""
oidc_pid=""
months_pid=""
signed_in_pid=""
cleanup() {
  local status=$?
  # On a failure, what the servers said: the end of each log, and any panic.
  if [ "$status" != 0 ]; then
    for log in "$logs"/server.log "$logs"/proxied.log "$logs"/oidc.log "$logs"/provider.log "$logs"/months.log; do
      [ -s "$log" ] || continue
      echo "--- the last lines of $(basename "$log") ---"
      grep -n "panicked" "$log" || true
      tail -n 40 "$log"
    done
    # Then the end-to-end failures once more, with what each assertion saw, so that they are the
    # last thing printed and not lost above the servers' logs.
    for log in "$logs"/e2e.log "$logs"/e2e-signed-in.log "$logs"/e2e-months.log; do
      [ -s "$log" ] && grep -q "failing tests:" "$log" || continue
      echo "--- the failing tests of $(basename "$log" .log), again ---"
      sed -n '/failing tests:/,$p' "$log" | head -n 120
    done
  fi
  if [ -n "$site_pid" ]; then kill "$site_pid" 2>/dev/null || true; fi
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  if [ -n "$proxied_pid" ]; then kill "$proxied_pid" 2>/dev/null || true; fi
  if [ -n "$provider_pid" ]; then kill "$provider_pid" 2>/dev/null || true; fi
  if [ -n "$oidc_pid" ]; then kill "$oidc_pid" 2>/dev/null || true; fi
  if [ -n "$months_pid" ]; then kill "$months_pid" 2>/dev/null || true; fi
  if [ -n "$signed_in_pid" ]; then kill "$signed_in_pid" 2>/dev/null || true; fi
  if [ -n "${data_dir:-}" ]; then rm -rf "$data_dir"; fi
  if [ -n "${proxied_data:-}" ]; then rm -rf "$proxied_data"; fi
  if [ -n "${oidc_data:-}" ]; then rm -rf "$oidc_data"; fi
  if [ -n "${months_data:-}" ]; then rm -rf "$months_data"; fi
  rm -rf "$logs"
}
trap cleanup EXIT

gpushare_step "cargo fmt --check"
cargo fmt --all --check

# The site's build for the tests runs beside clippy and the build of the unit and integration
# tests, from the start, in a target directory of its own, so neither waits for the other's lock.
# Its WebAssembly is the release code (opt-level "z", panics abort) without the shipped build's
# whole-program link, which only makes the file smaller and, with the `wasm-opt` release builds
# ran then, took one core for about eight minutes beside the tests' build (Cargo.toml, profile
# `wasm-tests`). The server the end-to-end tests run is the tests' own debug build of `gpushare`
# (its dependencies optimised, Cargo.toml's dev profile): a release build of the server took
# another 25 minutes of CPU for the same code. The tests run once all builds are done, with the
# machine to themselves: some hold a refusal to a time limit.
gpushare_step "the site's build for the tests, in the background from here on"
"$GPUSHARE_ROOT/scripts/build.sh" --tests >"$logs/site-build.log" 2>&1 &
site_pid=$!

gpushare_step "cargo clippy (server side: ssr)"
cargo clippy --workspace --all-targets --locked -- -D warnings

gpushare_step "cargo clippy (browser side: hydrate)"
cargo clippy -p app --all-targets --features hydrate --locked -- -D warnings

gpushare_step "building the tests, with the site's build beside them"
# Building the server crate's integration tests builds its binary too (they may run it): the
# console the end-to-end tests and the soak run.
cargo nextest run --workspace --locked --no-run
server_bin="$CARGO_TARGET_DIR/debug/gpushare"
gpushare_step "the site's build, which ran beside clippy and the tests' build"
if ! wait "$site_pid"; then
  site_pid=""
  cat "$logs/site-build.log"
  echo "the site's build failed (its output is above)" >&2
  exit 1
fi
site_pid=""
# What it said, without the compiler's progress lines.
grep -v '^\s*\(Compiling\|Blocking\)' "$logs/site-build.log" || true

gpushare_step "unit and integration tests"
cargo nextest run --workspace --locked --no-fail-fast 2>&1 | tee "$logs/nextest.log"

gpushare_step "end-to-end tests in headless Chromium"
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port="$(free_port)"
# A fresh audit log, so that every run starts from the same state; a short refresh interval,
# so that the live-update test sees a new snapshot soon; three days of the demo's past replayed
# into the cost history (the server is ready once they are in), so that yesterday and the day
# before it are recorded in full at any time of day.
data_dir="$(mktemp -d)"
# Without the demo's policy: the end-to-end tests of this console change the demo's services
# freely (the demo's policy and its requests are tested in the Rust integration tests).
GPUSHARE_LISTEN="127.0.0.1:$port" GPUSHARE_SITE_ROOT="$GPUSHARE_ROOT/target/site" \
  GPUSHARE_DATA_DIR="$data_dir" GPUSHARE_REFRESH_INTERVAL=3 GPUSHARE_HISTORY_DAYS=3 GPUSHARE_DEMO_POLICY=off \
  "$server_bin" serve >"$logs/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
  if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    cat "$logs/server.log"
    echo "the server did not start" >&2
    exit 1
  fi
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$port/readyz" || { cat "$logs/server.log"; exit 1; }
echo
# A second console behind a sign-in proxy, which the access tests play from 127.0.0.1, with
# the repository's example policy.
proxied_port="$(free_port)"
proxied_data="$(mktemp -d)"
GPUSHARE_LISTEN="127.0.0.1:$proxied_port" GPUSHARE_SITE_ROOT="$GPUSHARE_ROOT/target/site" \
  GPUSHARE_DATA_DIR="$proxied_data" GPUSHARE_AUTH=proxy GPUSHARE_TRUSTED_PROXY=127.0.0.1 GPUSHARE_HISTORY_DAYS=0 \
  GPUSHARE_POLICY="$GPUSHARE_ROOT/policy.example.toml" \
  "$server_bin" serve >"$logs/proxied.log" 2>&1 &
proxied_pid=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$proxied_port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$proxied_port/readyz" >/dev/null || { cat "$logs/proxied.log"; exit 1; }
# A third console that signs people in with an OpenID Connect provider: a real one, from the
# `oidc-provider` package, on its own port. Sessions last 20 s, so that a test sees one end.
provider_port="$(free_port)"
oidc_port="$(free_port)"
(cd end2end && exec node tools/oidc-provider.js "$provider_port" "http://127.0.0.1:$oidc_port") \
  >"$logs/provider.log" 2>&1 &
provider_pid=$!
oidc_data="$(mktemp -d)"
GPUSHARE_LISTEN="127.0.0.1:$oidc_port" GPUSHARE_SITE_ROOT="$GPUSHARE_ROOT/target/site" \
  GPUSHARE_DATA_DIR="$oidc_data" GPUSHARE_AUTH=oidc GPUSHARE_PUBLIC_URL="http://127.0.0.1:$oidc_port" \
  GPUSHARE_OIDC_ISSUER="http://127.0.0.1:$provider_port" GPUSHARE_OIDC_CLIENT_ID=gpushare \
  GPUSHARE_OIDC_CLIENT_SECRET=gpushare-test-secret GPUSHARE_OIDC_SCOPES="openid email groups" \
  GPUSHARE_SESSION_TTL=20 GPUSHARE_POLICY="$GPUSHARE_ROOT/policy.example.toml" GPUSHARE_HISTORY_DAYS=0 \
  "$server_bin" serve >"$logs/oidc.log" 2>&1 &
oidc_pid=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$oidc_port/readyz" >/dev/null 2>&1 \
    && curl -fsS "http://127.0.0.1:$provider_port/.well-known/openid-configuration" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$oidc_port/readyz" >/dev/null || { cat "$logs/oidc.log"; exit 1; }
curl -fsS "http://127.0.0.1:$provider_port/.well-known/openid-configuration" >/dev/null \
  || { cat "$logs/provider.log"; exit 1; }
# The fleet page needs the first snapshot: without one in 20 s the end-to-end tests cannot run.
snapshot=""
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/api/v1/fleet?mode=DEDICATED" >/dev/null 2>&1 && { snapshot=yes; break; }
  sleep 0.2
done
if [ -z "$snapshot" ]; then
  tail -n 40 "$logs/server.log"
  echo "the console had no fleet snapshot 20 s after it was ready (GET /api/v1/fleet)" >&2
  exit 1
fi
# The sealed months' console (below) starts now and replays its 32 days while these tests run: the
# replay keeps one core busy for about two and a half minutes.
months_port="$(free_port)"
months_data="$(mktemp -d)"
GPUSHARE_LISTEN="127.0.0.1:$months_port" GPUSHARE_SITE_ROOT="$GPUSHARE_ROOT/target/site" \
  GPUSHARE_DATA_DIR="$months_data" GPUSHARE_HISTORY_DAYS=32 GPUSHARE_DEMO_POLICY=off \
  "$server_bin" serve >"$logs/months.log" 2>&1 &
months_pid=$!
# Two runs side by side, each a file at a time, on consoles neither shares with the other: the
# files of the signed-in consoles (behind the proxy, and with OpenID Connect), and the rest on the
# first console. Each run's files share their console's state, so within a run they take turns;
# a new file that uses the signed-in consoles belongs in `signed_in`.
e2e_run() {
  (cd end2end && GPUSHARE_URL="http://127.0.0.1:$port" \
    GPUSHARE_PROXY_URL="http://127.0.0.1:$proxied_port" \
    GPUSHARE_OIDC_URL="http://127.0.0.1:$oidc_port" GPUSHARE_OIDC_PROVIDER_URL="http://127.0.0.1:$provider_port" \
    GPUSHARE_OIDC_SESSION_TTL=20 node --test --test-concurrency=1 --test-timeout=360000 \
    --test-reporter=spec "$@")
}
signed_in=(tests/access.test.js tests/approvals.test.js tests/new_service.test.js tests/oidc.test.js)
first=()
for file in end2end/tests/*.test.js; do
  file="tests/$(basename "$file")"
  [[ " ${signed_in[*]} " == *" $file "* ]] || first+=("$file")
done
e2e_run "${signed_in[@]}" >"$logs/e2e-signed-in.log" 2>&1 &
signed_in_pid=$!
first_status=0
e2e_run "${first[@]}" 2>&1 | tee "$logs/e2e.log" || first_status=$?
signed_in_status=0
wait "$signed_in_pid" || signed_in_status=$?
signed_in_pid=""
echo "--- the signed-in consoles' tests, which ran beside those above ---"
cat "$logs/e2e-signed-in.log"
if [ "$first_status" != 0 ] || [ "$signed_in_status" != 0 ]; then
  echo "end-to-end tests failed (their output is above)" >&2
  exit 1
fi

gpushare_step "end-to-end tests of sealed months and the reconciliation with Cost Explorer, on a console with 32 days of the demo's past"
# 32 days reach into last month whatever the day of the month, so last month has history and is
# sealed once the replay and the markets' first reads are done; Cost Explorer is read for the days
# of its 14 that have been closed for a day. A console of its own: a longer
# past changes which of the demo's services are settled, which the tests above rely on.
kill "$server_pid" "$proxied_pid" "$oidc_pid" "$provider_pid" 2>/dev/null || true
server_pid="" proxied_pid="" oidc_pid="" provider_pid=""
# Ready once the 32 days are in: 145 s after its start for the tests' debug build on two cores
# with nothing beside it (40 s for a release build), most of it the workspace's unoptimised code.
for _ in $(seq 1 1800); do
  curl -fsS "http://127.0.0.1:$months_port/readyz" >/dev/null 2>&1 && break
  kill -0 "$months_pid" 2>/dev/null || break
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$months_port/readyz" >/dev/null \
  || { echo "the sealed months' console was not ready 360 s after the tests above" >&2; exit 1; }
(cd end2end && GPUSHARE_URL="http://127.0.0.1:$months_port" node --test --test-concurrency=1 \
  --test-timeout=360000 --test-reporter=spec months/) 2>&1 | tee "$logs/e2e-months.log"
kill "$months_pid" 2>/dev/null || true
months_pid=""

gpushare_step "the soak, one minute: faults on every AWS call, load, writers, a kill mid-write"
# `gpushare emulate` and `gpushare serve` as processes of their own, the console killed
# (SIGKILL) halfway and started again; fails on any write lost, sent twice or audited wrongly,
# on any panic or 500, and on the console exiting.
GPUSHARE_SITE_ROOT="$GPUSHARE_ROOT/target/site" \
  "$server_bin" bench soak --minutes 1 --scenario demo --streams 200 --rate 100 \
  2>&1 | tee "$logs/soak.log"

# One closing line for both runners.
rust_passed="$(grep -oE '[0-9]+ tests? run: [0-9]+ passed' "$logs/nextest.log" | tail -1 | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || echo 0)"
e2e_passed=0
e2e_failed=0
for log in "$logs/e2e.log" "$logs/e2e-signed-in.log" "$logs/e2e-months.log"; do
  passed="$(grep -oE '^. pass [0-9]+' "$log" | grep -oE '[0-9]+' | tail -1 || echo 0)"
  failed="$(grep -oE '^. fail [0-9]+' "$log" | grep -oE '[0-9]+' | tail -1 || echo 0)"
  e2e_passed=$((e2e_passed + passed))
  e2e_failed=$((e2e_failed + failed))
done
echo
echo "tests: $((rust_passed + e2e_passed)) passed, ${e2e_failed} failed; the one-minute soak passed"
