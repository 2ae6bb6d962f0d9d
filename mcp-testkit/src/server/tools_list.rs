//! `tools/list`: the catalog in pages of [`ServerOptions::page_size`]
//! tools, behind opaque cursors.
//!
//! [`ServerOptions::page_size`]: crate::ServerOptions::page_size

use std::sync::atomic::Ordering;

use serde_json::{Map, Value, json};

use super::{ProtocolError, Server};
use crate::options::Misbehaviour;
use crate::tools;

/// What every cursor this server hands out starts with; the rest is the
/// index of the page's first tool.
const CURSOR_PREFIX: &str = "mcp-testkit-page-";

/// Where the page a cursor asks for starts; `-32602` for a cursor this
/// server did not give out.
fn page_start(params: &Map<String, Value>, len: usize) -> Result<usize, ProtocolError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(cursor)) => cursor
            .strip_prefix(CURSOR_PREFIX)
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= len)
            .ok_or_else(|| {
                ProtocolError::invalid_field("cursor", "not a cursor this server gave out")
            }),
        Some(_) => Err(ProtocolError::invalid_field("cursor", "expected a string")),
    }
}

impl Server {
    /// A `tools/list` answer; a modern one carries its cache hints.
    pub(super) fn list_tools(
        &self,
        params: &Map<String, Value>,
        modern: bool,
    ) -> Result<Value, ProtocolError> {
        let mut result = self.tools_page(params, modern)?;
        if modern && let Value::Object(map) = &mut result {
            map.insert("resultType".into(), json!("complete"));
            map.insert("ttlMs".into(), json!(60_000));
            map.insert("cacheScope".into(), json!("public"));
        }
        Ok(result)
    }

    /// One page of the tools of the revision the request speaks.
    fn tools_page(
        &self,
        params: &Map<String, Value>,
        modern: bool,
    ) -> Result<Value, ProtocolError> {
        let all: &[Value] = if modern {
            &tools::MODERN_DEFINITIONS
        } else {
            &tools::DEFINITIONS
        };
        let start = page_start(params, all.len())?;
        if self.options().has(Misbehaviour::RequireInitialized)
            && !self.initialized.load(Ordering::SeqCst)
        {
            self.log("tools/list before notifications/initialized: answering an empty list");
            return Ok(json!({"tools": []}));
        }
        let size = self
            .options()
            .page_size
            .map_or(all.len(), std::num::NonZeroUsize::get);
        let end = start.saturating_add(size).min(all.len());
        let page = all.get(start..end).unwrap_or_default();
        let mut result = Map::new();
        result.insert("tools".to_owned(), json!(page));
        if end < all.len() {
            result.insert(
                "nextCursor".to_owned(),
                json!(format!("{CURSOR_PREFIX}{end}")),
            );
        }
        Ok(Value::Object(result))
    }
}
