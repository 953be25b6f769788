#!/bin/sh
# Register fleetmux with Claude Code (local mode, then a fleet example).
claude mcp add tmux -- fleetmux
# claude mcp add tmux-fleet -e SSH_AUTH_SOCK="$SSH_AUTH_SOCK" -- fleetmux --hosts 'dev-*'
