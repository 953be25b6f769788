#!/usr/bin/env bash
# The one test command: installs what the tests need (tmux, OpenSSH server
# and client, npm) when missing, then runs vet and the whole suite with -race,
# then the suite's local parity, end-to-end and seam tests on tmux 3.5a
# (built by .ci/tmux-versions.sh), then the MCP conformance suite against
# `fleetmux serve --http`.
set -euo pipefail
trap 'echo "test.sh: failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
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
# The "waiting for input" fixture (tmux/ttyinput) runs these prompts and
# REPLs: python3, node, bc, less, vi, make, dash (procps gives pgrep).
for p in python3:python3 node:nodejs bc:bc less:less vi:vim-tiny make:make dash:dash pgrep:procps; do
  command -v "${p%%:*}" >/dev/null 2>&1 || need+=("${p#*:}")
done
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
echo "== tmux versions (built from Debian source packages, cached)" >&2
# 3.5a for the second leg, 3.1c for the start-up refusal test
# (cmd/fleetmux TestTmuxTooOld) and the mixed-version fleet.
./.ci/tmux-versions.sh 3.1c 3.5a >/dev/null
tmux35="$(./.ci/tmux-versions.sh 3.5a)"
echo "== go test -race (system $(tmux -V))" >&2
go test -race -count=1 -timeout 20m ./...
echo "== go test on tmux 3.5a: local parity (mcp), end-to-end and seams (cmd/fleetmux)" >&2
# Without -race (the first leg ran it). Left out: TestRealClients (the real
# clients start fleetmux with a minimal environment, so it runs the system
# tmux whatever FLEETMUX_TEST_TMUX says) and TestSoak (a leak and load test
# of the SSH path, 8 clients x 500 calls; the first leg runs it).
# FLEETMUX_SEAMS=1 adds TestSeams: every served tool through every way a
# call arrives (direct, on a host, capped host, in each batch, fanned out;
# stdio and HTTP), about 1,080 cells, here only (it is the longest test).
FLEETMUX_SEAMS=1 FLEETMUX_TEST_TMUX="$tmux35" go test -count=1 -timeout 20m -skip 'TestRealClients|TestSoak' ./mcp/ ./cmd/fleetmux/
echo "== MCP conformance suite (serve --http)" >&2
./.ci/conformance.sh
