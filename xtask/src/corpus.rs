//! Deterministic streams of realistic MCP traffic, for benchmarks.
//!
//! The same seed and size give the same bytes on every machine: a simple
//! seeded PRNG, and serde_json's sorted maps.

use serde_json::{Value, json};

/// SplitMix64: small, fast, and good enough to pick sizes and words.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// Log-uniform in `lo..=hi`: as many small values as large ones per decade.
    pub(crate) fn log_range(&mut self, lo: u64, hi: u64) -> u64 {
        let (l, h) = ((lo as f64).ln(), (hi as f64).ln());
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((l + unit * (h - l)).exp() as u64).clamp(lo, hi)
    }

    /// True with probability `percent`%.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.range(1, 100) <= percent
    }

    pub(crate) fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let i = self.next_u64() % items.len().max(1) as u64;
        items.get(i as usize).copied().unwrap_or_default()
    }
}

const WORDS: &[&str] = &[
    "the",
    "file",
    "returns",
    "a",
    "list",
    "of",
    "matching",
    "entries",
    "and",
    "their",
    "paths",
    "repository",
    "search",
    "query",
    "result",
    "function",
    "error",
    "value",
    "with",
    "for",
    "in",
    "configuration",
    "request",
    "server",
    "client",
    "tool",
    "resource",
    "prompt",
    "token",
    "context",
    "window",
    "model",
    "user",
    "input",
    "output",
    "schema",
    "string",
    "number",
    "optional",
    "required",
    "default",
    "timeout",
    "seconds",
    "limit",
    "offset",
    "page",
    "cursor",
    "naïve",
    "café",
    "日本語",
    "Ünïcödé",
    "→",
    "✓",
    "λ",
    "\"quoted\"",
    "C:\\temp",
    "<tag>",
    "{x}",
];

const TOOL_VERBS: &[&str] = &[
    "get", "list", "search", "create", "update", "delete", "read", "write", "run", "fetch",
];
const TOOL_NOUNS: &[&str] = &[
    "file", "issue", "commit", "branch", "user", "record", "page", "table", "event", "metric",
    "document", "ticket", "message", "channel", "invoice",
];

/// Prose of about `lo..=hi` bytes, with punctuation, line breaks, tabs and
/// some non-ASCII, the way tool output looks.
fn prose(rng: &mut Rng, lo: u64, hi: u64) -> String {
    let len = rng.range(lo, hi) as usize;
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        s.push_str(rng.pick(WORDS));
        let sep = match rng.range(0, 40) {
            0 => "\n",
            1 => ".\n\n",
            2 => "\t",
            3 => ", ",
            4 => ": ",
            _ => " ",
        };
        s.push_str(sep);
    }
    s
}

fn ident(rng: &mut Rng) -> String {
    format!("{}_{}", rng.pick(TOOL_VERBS), rng.pick(TOOL_NOUNS))
}

fn property(rng: &mut Rng) -> Value {
    let description = prose(rng, 20, 160);
    match rng.range(0, 5) {
        0 => json!({"type": "string", "description": description}),
        1 => json!({"type": "integer", "description": description, "minimum": 0, "maximum": 1000}),
        2 => json!({"type": "boolean", "description": description, "default": false}),
        3 => json!({
            "type": "string",
            "enum": ["asc", "desc", "relevance"],
            "description": description,
        }),
        4 => json!({"type": "array", "items": {"type": "string"}, "description": description}),
        _ => json!({
            "type": "object",
            "description": description,
            "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
            "additionalProperties": false,
        }),
    }
}

fn tool(rng: &mut Rng, i: u64) -> Value {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for p in 0..rng.range(1, 8) {
        let name = format!("{}_{p}", rng.pick(TOOL_NOUNS));
        if rng.chance(50) {
            required.push(Value::from(name.clone()));
        }
        properties.insert(name, property(rng));
    }
    let description = prose(rng, 60, 600);
    json!({
        "name": format!("{}_{i}", ident(rng)),
        "title": prose(rng, 20, 20).trim_end(),
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": required,
        },
        "annotations": {"readOnlyHint": rng.chance(50), "openWorldHint": rng.chance(30)},
    })
}

fn tools_list_result(rng: &mut Rng, id: u64) -> Value {
    let tools: Vec<Value> = (0..rng.range(20, 100)).map(|i| tool(rng, i)).collect();
    json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools, "nextCursor": format!("c{id}")}})
}

fn tools_call_request(rng: &mut Rng, id: u64) -> Value {
    let arguments = if rng.chance(60) {
        json!({"path": format!("src/{}.rs", rng.pick(TOOL_NOUNS)), "limit": rng.range(1, 100)})
    } else {
        let mut args = serde_json::Map::new();
        for k in 0..rng.range(4, 20) {
            let v = match k % 4 {
                0 => Value::from(prose(rng, 10, 300)),
                1 => Value::from(rng.range(0, 1 << 40)),
                2 => json!([rng.pick(WORDS), rng.pick(WORDS), rng.range(0, 9)]),
                _ => json!({"enabled": rng.chance(50), "ratio": rng.range(0, 1000) as f64 / 7.0}),
            };
            args.insert(format!("{}_{k}", rng.pick(TOOL_NOUNS)), v);
        }
        Value::Object(args)
    };
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": ident(rng), "arguments": arguments, "_meta": {"progressToken": id}},
    })
}

fn tools_call_result(rng: &mut Rng, id: u64) -> Value {
    let len = rng.log_range(100, 200 * 1024);
    let mut content = vec![json!({"type": "text", "text": prose(rng, len, len)})];
    if rng.chance(20) {
        content.push(json!({
            "type": "resource_link",
            "uri": format!("file:///work/{}.txt", ident(rng)),
            "name": ident(rng),
            "mimeType": "text/plain",
        }));
    }
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": content, "isError": rng.chance(5)}})
}

fn progress(rng: &mut Rng, token: u64) -> Value {
    let total = rng.range(10, 1000);
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {
            "progressToken": token,
            "progress": rng.range(0, total) as f64 + 0.5,
            "total": total,
            "message": prose(rng, 10, 80).trim_end(),
        },
    })
}

/// A newline-delimited stream of at least `bytes` bytes of MCP traffic, and
/// the number of messages in it.
///
/// By count: progress notifications are the most common; by bytes, tool
/// results and tool lists dominate, as in real sessions.
pub(crate) fn mcp_stream(seed: u64, bytes: usize) -> (Vec<u8>, usize) {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(bytes + 256 * 1024);
    let mut count = 0;
    let mut id = 0u64;
    while out.len() < bytes {
        id += 1;
        let message = match rng.range(0, 99) {
            0..=39 => progress(&mut rng, id),
            40..=64 => tools_call_request(&mut rng, id),
            65..=94 => tools_call_result(&mut rng, id),
            _ => tools_list_result(&mut rng, id),
        };
        // Writing a `Value` into a `Vec` cannot fail.
        if serde_json::to_writer(&mut out, &message).is_ok() {
            out.push(b'\n');
            count += 1;
        }
    }
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_deterministic_and_one_message_a_line() {
        let (a, n) = mcp_stream(7, 300_000);
        let (b, m) = mcp_stream(7, 300_000);
        assert_eq!((a.len(), n), (b.len(), m));
        assert!(a == b);
        assert!(a.len() >= 300_000);
        assert_eq!(a.iter().filter(|b| **b == b'\n').count(), n);
        for line in a.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            mcp_stack_jsonrpc::Message::from_slice(line).unwrap();
        }
        assert!(mcp_stream(8, 300_000).0 != a);
    }

    #[test]
    fn log_range_stays_in_range() {
        let mut rng = Rng::new(1);
        for _ in 0..10_000 {
            let v = rng.log_range(100, 200 * 1024);
            assert!((100..=200 * 1024).contains(&v));
        }
    }
}
