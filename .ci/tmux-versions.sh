#!/usr/bin/env bash
# Builds the tmux versions the tests run against besides the system one, from
# Debian's source packages, and prints the path of each binary on stdout (one
# line per version asked for; logs go to stderr):
#
#   .ci/tmux-versions.sh 3.5a        # -> ~/.cache/fleetmux-test/tmux/3.5a/tmux
#   FLEETMUX_TEST_TMUX="$(.ci/tmux-versions.sh 3.5a)" go test ./mcp/
#
# Versions and the Debian suite whose source package has them:
#   3.1c  bullseye   (below fleetmux's minimum: the start-up refusal test)
#   3.5a  trixie
# (No Debian suite has 3.4; sid/forky have 3.7c/3.8.)
#
# The binaries are cached in ${FLEETMUX_TEST_CACHE:-${XDG_CACHE_HOME:-~/.cache}/fleetmux-test}/tmux/VERSION/tmux;
# a cached binary whose `tmux -V` answers the version is used as is (no
# network, well under a second). To build, the script:
#  - installs only the build tools when missing (build-essential, bison,
#    pkg-config, libevent-dev, libncurses-dev), with apt-get (sudo if not root);
#  - fetches the source package with `apt-get source` through a private apt
#    configuration in a temporary directory (its own sources list with one
#    deb-src line, its own lists and cache dirs): nothing under /etc/apt or
#    /var/lib/apt is written, and the directory is removed on exit (trap);
#  - builds with the upstream ./configure && make (no dpkg-buildpackage, no
#    install step) and copies the binary into the cache.
# Only deb.debian.org (the mirror this machine's sources use) must be
# reachable; DEBIAN_MIRROR overrides it.
set -euo pipefail

mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="${FLEETMUX_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fleetmux-test}/tmux"

fail() { echo "tmux-versions: $*" >&2; exit 1; }

suite_of() {
  case "$1" in
    3.1c) echo bullseye ;;
    3.5a) echo trixie ;;
    *) return 1 ;;
  esac
}

cached() { # VERSION -> 0 when the cached binary is there and is that version
  local bin="$cache/$1/tmux"
  [ -x "$bin" ] && [ "$("$bin" -V 2>/dev/null)" = "tmux $1" ]
}

install_build_tools() {
  local pkgs=(build-essential bison pkg-config libevent-dev libncurses-dev) need=() p
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
  done
  [ "${#need[@]}" -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "tmux-versions: installing build tools: ${need[*]}" >&2
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

tmp=""
cleanup() { if [ -n "$tmp" ]; then rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

build() { # VERSION
  local v="$1" suite
  suite="$(suite_of "$v")" || fail "no Debian suite is known for tmux $v (known: 3.1c, 3.5a)"
  install_build_tools
  [ -n "$tmp" ] || tmp="$(mktemp -d "${TMPDIR:-/tmp}/fleetmux-tmux-build.XXXXXX")"
  local dir="$tmp/$v" start=$SECONDS
  mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/parts" "$dir/src"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$dir/apt/sources.list"
  local apt=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o "Dir::Etc::SourceParts=$dir/apt/parts"
    -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache" -o "APT::Sandbox::User=root")
  echo "tmux-versions: tmux $v: fetching the source package from $mirror $suite" >&2
  apt-get "${apt[@]}" -qq update >"$dir/apt.log" 2>&1 || { cat "$dir/apt.log" >&2; fail "apt-get update of $suite deb-src failed"; }
  local pkgver
  pkgver="$(apt-cache "${apt[@]}" showsrc tmux 2>/dev/null | sed -n 's/^Version: //p' | grep -F "${v}-" | head -1)"
  [ -n "$pkgver" ] || fail "$suite has no tmux source package of version $v"
  (cd "$dir/src" && apt-get "${apt[@]}" -qq source "tmux=$pkgver") >>"$dir/apt.log" 2>&1 ||
    { cat "$dir/apt.log" >&2; fail "apt-get source tmux=$pkgver failed"; }
  local srcdir
  srcdir="$(find "$dir/src" -mindepth 1 -maxdepth 1 -type d -name 'tmux-*' | head -1)"
  [ -n "$srcdir" ] || fail "apt-get source left no tmux-* directory"
  echo "tmux-versions: tmux $v: building $(basename "$srcdir") (Debian $pkgver)" >&2
  # Upstream defaults: no utf8proc, systemd, jemalloc or utempter (none of
  # them changes what the tests see; the system tmux is built without them too
  # except utempter, which only writes utmp records).
  (cd "$srcdir" && ./configure --quiet >"$dir/configure.log" 2>&1) ||
    { tail -30 "$dir/configure.log" >&2; fail "configure of tmux $v failed (log above)"; }
  (cd "$srcdir" && make -j"$(nproc)" >"$dir/make.log" 2>&1) ||
    { tail -30 "$dir/make.log" >&2; fail "make of tmux $v failed (log above)"; }
  local got
  got="$("$srcdir/tmux" -V)"
  [ "$got" = "tmux $v" ] || fail "the built binary says \"$got\", not \"tmux $v\""
  mkdir -p "$cache/$v"
  cp "$srcdir/tmux" "$cache/$v/tmux.new"
  mv -f "$cache/$v/tmux.new" "$cache/$v/tmux"
  echo "tmux-versions: tmux $v: built in $((SECONDS - start)) s -> $cache/$v/tmux" >&2
}

[ "$#" -gt 0 ] || set -- 3.1c 3.5a
for v in "$@"; do
  cached "$v" || build "$v"
  echo "$cache/$v/tmux"
done
