#!/usr/bin/env bash
# The one test command: installs what the tests need (tmux, OpenSSH server
# and client, npm) when missing, then runs vet and the whole suite with -race,
# then the MCP conformance suite against `fleetmux serve --http`.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
command -v ssh-agent >/dev/null 2>&1 || need+=(openssh-client)
# npm installs the real MCP clients the shipped configs are tested with
# (cmd/fleetmux TestRealClients; cached under ~/.cache/fleetmux-test).
command -v npm >/dev/null 2>&1 || need+=(npm)
# Login shells the SSH transport is tested under (fish, tcsh, zsh).
for sh in fish tcsh zsh; do command -v "$sh" >/dev/null 2>&1 || need+=("$sh"); done
# The differing test fleet has a host with busybox ps and date.
command -v busybox >/dev/null 2>&1 || need+=(busybox)
# The conformance step installs its Node >= 22 and the suite with npm.
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ "${#need[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "installing: ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ "$(id -u)" = 0 ]; then mkdir -p /run/sshd; fi

echo "== gofmt" >&2
unformatted="$(gofmt -l cmd fleet mcp store tmux transport)"
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted" >&2; exit 1; fi
echo "== go vet" >&2
go vet ./...
echo "== staticcheck" >&2
staticcheck="$(go env GOPATH)/bin/staticcheck"
if ! [ -x "$staticcheck" ]; then
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
"$staticcheck" ./...
echo "== go test -race" >&2
go test -race -count=1 -timeout 20m ./...
echo "== MCP conformance suite (serve --http)" >&2
./.ci/conformance.sh
