#!/usr/bin/env bash
# Packages every publishable crate of the workspace (all members but xtask) the
# way `cargo publish` would, without uploading: checks the manifests, the
# metadata and the file lists, and writes the .crate files under
# target/package/. Sibling path dependencies resolve through cargo's local
# overlay of the crates being packaged, so nothing needs to be published first.
#
# `--no-verify`: verifying builds each unpacked crate again (a full dependency
# build per crate on CI's two cores), and today it cannot pass: crates.io
# already has unrelated crates named `mcp-stack-session` and `mcp-stack-cli`, and the
# overlay only wins at an exact version, so `mcp-stack-session = "0.1.0"` resolves to
# the other project's 0.1.x. Drop `--no-verify` once the crates have names of
# their own.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo package --workspace --exclude xtask --locked --no-verify
