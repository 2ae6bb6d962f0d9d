#!/usr/bin/env bash
# The keychain token store's tests (mcp-stack-auth feature `keyring`, and
# the `mcp` command's --token-store keyring) against a real Secret Service:
# GNOME Keyring on a D-Bus session bus of this script's own, with a fresh
# login keyring (in a temporary folder) unlocked by a throwaway password.
# A plain `cargo test` skips these tests (they are #[ignore]d: most machines
# have no Secret Service); this runs them with --ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
export CARGO_INCREMENTAL=0

if [ "$(uname -s)" != Linux ]; then
  echo "keyring tests: Linux only (a Secret Service); skipped on $(uname -s)"
  exit 0
fi

# What they need: a session bus and GNOME Keyring (Debian/Ubuntu packages).
if ! command -v dbus-run-session >/dev/null || ! command -v dbus-send >/dev/null \
  || ! command -v gnome-keyring-daemon >/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends dbus gnome-keyring
fi

# Built outside the bus session, so a build failure reads as one.
cargo test -p mcp-stack-auth --features keyring --test keyring --locked --no-run
cargo test -p mcp-stack-cli --test auth --locked --no-run

# One session: a bus, GNOME Keyring on it with a fresh `login` keyring (in
# the folder $1, XDG_DATA_HOME, where GNOME Keyring keeps its keyrings),
# created and unlocked with the password on stdin, then the tests.
#
# The daemon runs in the foreground as this session's own child: the
# daemonizing `--unlock` returned before its fork had claimed the bus name,
# and a test that asked in that window made the bus start a second daemon,
# whose `login` keyring is locked (it asks a prompter with no display, and
# the test fails). XDG_RUNTIME_DIR gives the daemons a known control socket,
# so any second one joins the first. The tests start once the name has its
# owner and the default collection says unlocked.
#
# Exit status 75: the daemon itself exited while the tests ran (seen on CI:
# `NoReply`, then a locked keyring from the daemon the bus started in its
# place), which says nothing of our code; the caller runs a fresh session.
session() {
  mkdir -m 700 "$1/run"
  XDG_RUNTIME_DIR="$1/run" XDG_DATA_HOME="$1" dbus-run-session -- bash -euo pipefail -c '
    printf "ci-throwaway" | gnome-keyring-daemon --foreground --unlock --components=secrets >/dev/null &
    gkd=$!
    owned() {
      dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets | grep -q "boolean true"
    }
    deadline=$((SECONDS + 30))
    until owned; do
      if ! kill -0 "$gkd" 2>/dev/null; then
        echo "keyring tests: GNOME Keyring exited before it took the bus name"; exit 75
      fi
      if [ "$SECONDS" -ge "$deadline" ]; then
        echo "keyring tests: no Secret Service on the bus after 30 s"; exit 1
      fi
      sleep 0.1
    done
    locked="$(dbus-send --session --print-reply --dest=org.freedesktop.secrets \
      /org/freedesktop/secrets/aliases/default org.freedesktop.DBus.Properties.Get \
      string:org.freedesktop.Secret.Collection string:Locked)"
    if ! grep -q "boolean false" <<<"$locked"; then
      echo "keyring tests: the default collection is not unlocked: $locked"; exit 1
    fi
    status=0
    cargo test -p mcp-stack-auth --features keyring --test keyring --locked -- --ignored keyring || status=$?
    if [ "$status" = 0 ]; then
      cargo test -p mcp-stack-cli --test auth --locked -- --ignored keyring || status=$?
    fi
    if ! kill -0 "$gkd" 2>/dev/null; then
      gkd_status=0
      wait "$gkd" || gkd_status=$?
      echo "keyring tests: GNOME Keyring (pid $gkd) exited during the tests, status $gkd_status"
      if [ "$status" != 0 ]; then exit 75; fi
    else
      kill "$gkd" 2>/dev/null || true
    fi
    exit "$status"
  '
}

# Up to three sessions, the next one only when the daemon died under the
# tests of the last; a test that fails with the daemon alive fails at once.
for attempt in 1 2 3; do
  keyrings="$(mktemp -d)"
  status=0
  session "$keyrings" || status=$?
  rm -rf "$keyrings"
  if [ "$status" != 75 ]; then
    exit "$status"
  fi
  echo "keyring tests: session $attempt lost its Secret Service daemon; a fresh session"
done
echo "keyring tests: the Secret Service daemon died in three sessions in a row"
exit 1
