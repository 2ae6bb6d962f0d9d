#!/usr/bin/env bash
# `cargo publish --dry-run` for every publishable crate of the workspace (all
# members but xtask), in dependency order: cargo packs each crate as it would
# upload it, then builds the packed crate from its .crate file against the
# already-packed siblings (a local overlay of the crates being published), so
# a manifest that only works inside the workspace, a file missing from the
# package, or a sibling version that does not resolve fails here. Nothing is
# uploaded.
#
# The names are the free `mcp-stack-*` family (checked against the crates.io
# index: see CONTRIBUTING.md, "Publishing"), so no sibling can resolve to
# another project's crate of the same name.
set -euo pipefail
cd "$(dirname "$0")/.."

# Cargo unpacks each packed sibling under $CARGO_HOME/registry/src/ and
# keeps its copy of the .crate in registry/cache/, and it reuses an
# unpacked crate found there by name and version alone. Every run packs the
# same 0.1.0, so on a machine that ran this before, a crate was verified
# against an earlier run's sources of its siblings (a new item of
# mcp-stack-protocol was "missing" for mcp-stack-runtime). Ours go first;
# no dependency of the workspace has a name in the mcp-stack- family.
# (Cargo also takes a built registry crate in the target folder as up to
# date by name and version: run again by hand after a change between
# crates, this needs a clean target folder too, as CI's clone has.)
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
rm -rf "$cargo_home"/registry/src/*/mcp-stack-*-[0-9]*
rm -f "$cargo_home"/registry/cache/*/mcp-stack-*-[0-9]*.crate

cargo publish --workspace --exclude xtask --dry-run --locked
