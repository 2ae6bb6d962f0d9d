//! Resolving configs for the tests; the servers are the testkit's
//! `InProcessConnector` (options from each config's `args`, `--tag X` only
//! making fingerprints differ; connects counted per server).

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

pub mod scripted;

use mcp_stack_config::{Options, ResolvedConfig, parse_str, resolve};

/// Resolves a JSON config (OpenClaw format).
pub fn config(json: &str) -> ResolvedConfig {
    let loaded = parse_str(json, &Options::new()).unwrap();
    resolve(&loaded.config, &|_: &str| None).unwrap()
}
