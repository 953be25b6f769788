#!/bin/sh
# Register fleetmux with Claude Code. Run it from anywhere after
# `go install ./cmd/fleetmux` in a clone of the repository. The absolute
# path of the installed binary is registered, because an MCP client does not
# necessarily start servers with your shell's PATH.
set -eu
cd "$(dirname "$0")/.."
bin="$(go list -f '{{.Target}}' ./cmd/fleetmux)"
if [ ! -x "$bin" ]; then
    echo "fleetmux is not installed at $bin: run go install ./cmd/fleetmux first" >&2
    exit 1
fi

# Local mode: a drop-in for libtmux-mcp.
claude mcp add tmux -- "$bin"

# Fleet mode: the Host aliases of ~/.ssh/config that match dev-* (see
# configs/README.md). The agent socket path is stored as it is now, so use a
# stable one (for example the systemd user agent socket).
# claude mcp add tmux-fleet -e SSH_AUTH_SOCK="$SSH_AUTH_SOCK" -- "$bin" --hosts 'dev-*'
