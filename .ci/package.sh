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

cargo publish --workspace --exclude xtask --dry-run --locked
