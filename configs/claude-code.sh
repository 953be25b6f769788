#!/bin/sh
# Register fleetmux with Claude Code for your user, so that it is there in
# every directory (`claude mcp add` without --scope registers a server for
# the current directory only). Run it from anywhere after
# `go install ./cmd/fleetmux` in a clone of the repository.
#
# The absolute path of the installed binary is registered: an MCP client
# does not necessarily start servers with your shell's PATH. The fleetmux
# and libtmux-mcp variables set in your environment now (LIBTMUX_SOCKET,
# TMUX_TMPDIR, FLEETMUX_HOSTS, ...) are stored in the entry's env: MCP
# clients start servers with a minimal environment, so a setting only in
# your shell does not reach fleetmux.
#
# Running it again is safe: an existing user-scope entry named fleetmux
# (from an earlier run, the README's one-liner or an HTTP registration) is
# replaced, and the script says so.
set -eu
cd "$(dirname "$0")/.."
if ! command -v claude >/dev/null 2>&1; then
    echo "claude (Claude Code) is not on PATH: install Claude Code first" >&2
    exit 1
fi
bin="$(go list -f '{{.Target}}' ./cmd/fleetmux)"
if [ ! -x "$bin" ]; then
    echo "fleetmux is not installed at $bin: run go install ./cmd/fleetmux first" >&2
    exit 1
fi

set --
for var in LIBTMUX_SAFETY LIBTMUX_SOCKET LIBTMUX_SOCKET_PATH LIBTMUX_TMUX_BIN \
    LIBTMUX_SUPPRESS_HISTORY LIBTMUX_MCP_WAIT_MAX_SECONDS TMUX_TMPDIR \
    FLEETMUX_HOSTS FLEETMUX_SSH_CONFIG FLEETMUX_STATE FLEETMUX_TOOLSETS; do
    if eval "[ -n \"\${$var:-}\" ]"; then
        eval "set -- \"\$@\" -e \"$var=\${$var}\""
    fi
done

# Local mode (the drop-in for libtmux-mcp), in the user scope. The name
# comes before -e: claude mcp add reads every word after -e as a variable.
replaced=no
if claude mcp remove --scope user fleetmux >/dev/null 2>&1; then
    replaced=yes
fi
claude mcp add --scope user fleetmux "$@" -- "$bin" >/dev/null
if [ "$replaced" = yes ]; then
    echo "replaced the user-scope MCP server \"fleetmux\" registered before with $bin; check with: claude mcp get fleetmux" >&2
else
    echo "registered $bin as MCP server \"fleetmux\" for your user; check with: claude mcp get fleetmux" >&2
fi

# Fleet mode: the Host aliases of ~/.ssh/config that match dev-* (see
# configs/README.md). The agent socket path is stored as it is now, so use a
# stable one (for example the systemd user agent socket).
# claude mcp add --scope user fleetmux-fleet -e FLEETMUX_HOSTS='dev-*' -e SSH_AUTH_SOCK="$SSH_AUTH_SOCK" -- "$bin"
