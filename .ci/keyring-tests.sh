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

keyrings="$(mktemp -d)"
trap 'rm -rf "$keyrings"' EXIT
mkdir -m 700 "$keyrings/run"
# XDG_DATA_HOME: GNOME Keyring keeps its keyrings there; a fresh folder
# gives a fresh `login` keyring, created and unlocked with the password on
# stdin (and made the default collection).
#
# The daemon that `--unlock` forks claims its bus name a moment after the
# command returns. A request to the Secret Service before then makes the bus
# start a second daemon (its service file's `--start`), and a test could get
# that one, whose `login` keyring is locked: it asks for a password through a
# prompter that has no display, and the test fails (seen on CI, not locally).
# Two guards: XDG_RUNTIME_DIR gives the daemons a known control socket, so a
# second one joins the first instead of competing with it; and the tests start
# only once the name has its owner and the default collection says unlocked.
XDG_RUNTIME_DIR="$keyrings/run" XDG_DATA_HOME="$keyrings" dbus-run-session -- bash -euo pipefail -c '
  printf "ci-throwaway" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  owned() {
    dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets | grep -q "boolean true"
  }
  deadline=$((SECONDS + 30))
  until owned; do
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
  cargo test -p mcp-stack-auth --features keyring --test keyring --locked -- --ignored keyring
  cargo test -p mcp-stack-cli --test auth --locked -- --ignored keyring
'
