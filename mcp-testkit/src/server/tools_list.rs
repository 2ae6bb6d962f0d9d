//! `tools/list`: the catalog in pages of [`ServerOptions::page_size`]
//! tools, behind opaque cursors (the other lists page the same way:
//! [`page`]).
//!
//! [`ServerOptions::page_size`]: crate::ServerOptions::page_size

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_stack_protocol::results::{CacheHints, ResultType};
use mcp_stack_protocol::types::{Extra, ListToolsResult, PaginatedParams};
use serde_json::{Map, Value};

use super::Server;
use super::params::{Presence, expect, typed};
use crate::options::Misbehaviour;
use crate::outbox::ProtocolError;
use crate::tools;

/// What every cursor this server hands out starts with; the rest is the
/// index of the page's first tool.
const CURSOR_PREFIX: &str = "mcp-testkit-page-";

/// What the cursors of [`Misbehaviour::EndlessToolPages`] start with; the
/// rest is the page's number.
const ENDLESS_PREFIX: &str = "mcp-testkit-endless-";
/// Tools on each page of [`Misbehaviour::EndlessToolPages`].
const ENDLESS_PAGE_TOOLS: usize = 64;
/// The length of each of their descriptions: 64 × 4 KiB, about 256 KiB a page.
const ENDLESS_DESCRIPTION_BYTES: usize = 4096;

/// Page `n` of [`Misbehaviour::EndlessToolPages`]: tools `endless_N_I`
/// with long descriptions, and the cursor of page `n + 1`.
fn endless_page(n: u64) -> ListToolsResult {
    let description = "x".repeat(ENDLESS_DESCRIPTION_BYTES);
    let tools = (0..ENDLESS_PAGE_TOOLS)
        .map(|i| {
            tools::tool(
                &format!("endless_{n}_{i}"),
                "Endless",
                &description,
                serde_json::json!({"type": "object"}),
            )
        })
        .collect();
    ListToolsResult {
        tools,
        next_cursor: Some(format!("{ENDLESS_PREFIX}{}", n.saturating_add(1))),
        extra: Extra::new(),
    }
}

/// `tools/list`'s params.
pub(super) fn parse_list(params: Map<String, Value>) -> Result<PaginatedParams, ProtocolError> {
    typed(params, |p| {
        expect(
            p,
            "cursor",
            Presence::Optional,
            Value::is_string,
            "a string",
        )
    })
}

/// Where the page a cursor asks for starts; `-32602` for a cursor this
/// server did not give out.
fn page_start(cursor: Option<&str>, len: usize) -> Result<usize, ProtocolError> {
    match cursor {
        None => Ok(0),
        Some(cursor) => cursor
            .strip_prefix(CURSOR_PREFIX)
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= len)
            .ok_or_else(|| {
                ProtocolError::invalid_field("cursor", "not a cursor this server gave out")
            }),
    }
}

/// The page a cursor asks for, of a list of `len` entries in pages of
/// `size` (`None`: all in one): its range, and the next page's cursor.
pub(super) fn page(
    cursor: Option<&str>,
    len: usize,
    size: Option<std::num::NonZeroUsize>,
) -> Result<(std::ops::Range<usize>, Option<String>), ProtocolError> {
    let start = page_start(cursor, len)?;
    let size = size.map_or(len, std::num::NonZeroUsize::get);
    let end = start.saturating_add(size).min(len);
    let next = (end < len).then(|| format!("{CURSOR_PREFIX}{end}"));
    Ok((start..end, next))
}

/// How long a modern client may keep a `tools/list` page: the tools never change.
pub(super) const LIST_CACHE: CacheHints = CacheHints {
    ttl: Duration::from_secs(60),
    private: false,
};

impl Server {
    /// A `tools/list` answer; a modern one carries its cache hints.
    pub(super) fn list_tools(
        &self,
        params: &PaginatedParams,
        discover: bool,
    ) -> Result<ListToolsResult, ProtocolError> {
        let mut result = self.tools_page(params, discover)?;
        if discover {
            ResultType::Complete.write(&mut result.extra);
            LIST_CACHE.write(&mut result.extra);
        }
        Ok(result)
    }

    /// One page of the tools of the revision the request speaks.
    fn tools_page(
        &self,
        params: &PaginatedParams,
        discover: bool,
    ) -> Result<ListToolsResult, ProtocolError> {
        if self.options().has(Misbehaviour::EndlessToolPages) {
            let n = match params.cursor.as_deref() {
                None => 0,
                Some(cursor) => cursor
                    .strip_prefix(ENDLESS_PREFIX)
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(|| {
                        ProtocolError::invalid_field("cursor", "not a cursor this server gave out")
                    })?,
            };
            return Ok(endless_page(n));
        }
        let all = super::hostile::tools(
            self.options(),
            tools::listed_revision(
                discover,
                self.options().extra_tools,
                self.options().revise_tools,
            ),
        );
        let (range, next_cursor) = page(
            params.cursor.as_deref(),
            all.len(),
            self.options().page_size,
        )?;
        let mut result = ListToolsResult {
            tools: Vec::new(),
            next_cursor: None,
            extra: Extra::new(),
        };
        if self.options().has(Misbehaviour::RequireInitialized)
            && !self.initialized.load(Ordering::SeqCst)
        {
            self.log("tools/list before notifications/initialized: answering an empty list");
            return Ok(result);
        }
        result.tools = all.get(range).unwrap_or_default().to_vec();
        result.next_cursor = next_cursor;
        Ok(result)
    }
}
