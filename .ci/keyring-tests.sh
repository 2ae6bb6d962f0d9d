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
if ! command -v dbus-run-session >/dev/null || ! command -v gnome-keyring-daemon >/dev/null; then
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
# XDG_DATA_HOME: GNOME Keyring keeps its keyrings there; a fresh folder
# gives a fresh `login` keyring, created and unlocked with the password on
# stdin (and made the default collection).
XDG_DATA_HOME="$keyrings" dbus-run-session -- bash -euo pipefail -c '
  printf "ci-throwaway" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  cargo test -p mcp-stack-auth --features keyring --test keyring --locked -- --ignored keyring
  cargo test -p mcp-stack-cli --test auth --locked -- --ignored keyring
'
