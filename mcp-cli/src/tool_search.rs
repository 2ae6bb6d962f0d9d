//! `mcp tools --search QUERY`: the tools ranked for a query, best first,
//! by `mcp-stack-runtime`'s index (BM25F over names, titles, descriptions
//! and parameters). With `--config`, over every server of the config, in
//! the order and with the scores an agent's `search_tools` gets; over one
//! server's tools otherwise.

use std::process::ExitCode;

use mcp_stack_runtime::search::{IndexEntry, MAX_RESULTS, ToolIndex};
use serde_json::Value;

use crate::commands::{listed, open, tool_columns};
use crate::errors::usage_error;
use crate::output::{Style, printable};
use crate::term::{self, errln, outln};
use crate::{ShowArgs, TargetArgs};

/// `mcp tools --search QUERY [-k N]`.
pub(crate) async fn search(
    target: TargetArgs,
    show: ShowArgs,
    query: String,
    limit: usize,
    style: Style,
) -> ExitCode {
    if limit == 0 || limit > MAX_RESULTS {
        return usage_error(&format!("--limit takes 1 to {MAX_RESULTS}"));
    }
    let servers = match open(&target, show, style, |c| c).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let some_failed = servers.some_failed();
    let result = servers.tools().await;
    let stderr_tail = servers.close().await;
    let listing = match result {
        Ok(l) => l,
        Err(f) => return f.print(style, &stderr_tail),
    };
    let index = ToolIndex::build(listing.items.iter().map(|t| IndexEntry {
        name: &t.name,
        server: t.origin.as_ref().map_or("", |(server, _)| server),
        tool: &t.item,
    }));
    let hits = match index.search(&query, limit) {
        Ok(hits) => hits,
        Err(e) => return usage_error(&e.to_string()),
    };
    // The index was built from the listing, in order.
    let found: Vec<_> = hits
        .iter()
        .filter_map(|h| Some((h, listing.items.get(h.index())?)))
        .collect();
    if show.json {
        let tools: Vec<Value> = found
            .iter()
            .map(|(h, t)| {
                let mut v = t.json(
                    serde_json::to_value(&*t.item).unwrap_or_default(),
                    Some("serverToolName"),
                );
                if let Value::Object(m) = &mut v {
                    m.insert("score".into(), Value::from(f64::from(h.score())));
                    m.insert("exactName".into(), Value::from(h.exact_name()));
                }
                v
            })
            .collect();
        term::print_json(&Value::Array(tools), true);
        return listed(some_failed);
    }
    for note in &listing.notes {
        outln!("{} {}", style.warn("!"), printable(note));
    }
    if found.is_empty() {
        errln!(
            "no tool of {} matches {}: try other words",
            plural(index.len()),
            printable(&format!("{query:?}"))
        );
    }
    for (h, t) in &found {
        outln!(
            "{}  {}",
            tool_columns(&t.name, &t.item, show, style),
            style.dim(&format!("[score {:.2}]", h.score()))
        );
    }
    listed(some_failed)
}

fn plural(n: usize) -> String {
    if n == 1 {
        "1 tool".to_owned()
    } else {
        format!("{n} tools")
    }
}
