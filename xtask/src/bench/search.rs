//! `bench search`: tool search over a large generated catalog (issue #29,
//! "Measured": search over 10,000 tools, p50 and p99 per query, and the
//! schema bytes a deferred catalog hands out against the full one).
//!
//! The catalog is generated from a seed: 50 services (`github`, `stripe`,
//! `kubernetes` …), each with `tools / 50` tools named `verb_object` with a
//! qualifier now and then (snake_case, camelCase or kebab-case, per
//! server), a title on half of them, descriptions of one to four sentences
//! from templates, and one to six parameters with descriptions. Figures:
//!
//! - building the index (`ToolIndex::build`), median of 5;
//! - updating it after one server's list was fetched again with one tool
//!   edited and one added (`ToolIndex::update`, what a `list_changed` costs);
//! - each query of a fixed set of 32 (phrases, exact names in each casing,
//!   single words, a stopword, a miss, a long query) timed on its own,
//!   `--rounds` passes: p50, p99 and the maximum over all, and the slowest
//!   query's median;
//! - the JSON bytes of tool definitions: the whole catalog, against a
//!   deferred listing (`search_tools` and 5 always-on tools) and what a
//!   search of 5 results hands out.
//!
//! IO-free and without peers: it runs in the build it is given, debug
//! included (whose figures mean nothing: use `--release`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_stack_runtime::DeferredTools;
use mcp_stack_runtime::search::{IndexEntry, ToolIndex};
use mcp_stack_session::protocol::types::Tool;
use serde_json::{Map, Value, json};

use crate::args::SearchArgs;

/// The target for p99 per query.
const TARGET_P99: Duration = Duration::from_millis(1);

const SERVICES: &[&str] = &[
    "github",
    "gitlab",
    "jira",
    "linear",
    "slack",
    "discord",
    "notion",
    "confluence",
    "gdrive",
    "dropbox",
    "s3",
    "postgres",
    "mysql",
    "mongodb",
    "redis",
    "stripe",
    "paypal",
    "shopify",
    "salesforce",
    "hubspot",
    "zendesk",
    "intercom",
    "twilio",
    "sendgrid",
    "mailchimp",
    "calendar",
    "outlook",
    "gmail",
    "trello",
    "asana",
    "figma",
    "sentry",
    "datadog",
    "pagerduty",
    "kubernetes",
    "docker",
    "ec2",
    "cloudflare",
    "vercel",
    "netlify",
    "airtable",
    "sheets",
    "bigquery",
    "snowflake",
    "elasticsearch",
    "weather",
    "maps",
    "spotify",
    "youtube",
    "twitter",
];

const VERBS: &[&str] = &[
    "create", "get", "list", "update", "delete", "search", "archive", "restore", "export",
    "import", "sync", "assign", "close", "reopen", "merge", "publish", "approve", "cancel",
    "schedule", "send", "upload", "download", "move", "copy", "share", "tag", "watch", "run",
    "stop", "restart", "scale", "invite", "refund", "query",
];

const OBJECTS: &[&str] = &[
    "issue",
    "pull_request",
    "comment",
    "branch",
    "commit",
    "repository",
    "release",
    "user",
    "team",
    "channel",
    "message",
    "thread",
    "reaction",
    "page",
    "database",
    "block",
    "file",
    "folder",
    "bucket",
    "object",
    "table",
    "row",
    "index",
    "key",
    "customer",
    "invoice",
    "payment",
    "subscription",
    "product",
    "order",
    "contact",
    "deal",
    "ticket",
    "conversation",
    "email",
    "template",
    "campaign",
    "event",
    "meeting",
    "task",
    "project",
    "board",
    "card",
    "design",
    "error",
    "alert",
    "incident",
    "metric",
    "dashboard",
    "pod",
    "deployment",
    "container",
    "instance",
    "zone",
    "record",
    "site",
    "build",
    "sheet",
    "dataset",
    "job",
    "document",
    "playlist",
    "track",
    "video",
    "post",
    "forecast",
    "route",
    "place",
];

const QUALIFIERS: &[&str] = &[
    "by_id",
    "batch",
    "for_user",
    "in_project",
    "details",
    "history",
    "permissions",
    "status",
    "metadata",
    "comments",
    "attachments",
    "members",
    "settings",
    "versions",
];

const PARAMS: &[(&str, &str, &str)] = &[
    ("id", "string", "The {o}'s unique id."),
    ("name", "string", "A name for the {o}."),
    (
        "owner",
        "string",
        "The account or organization that owns the {o}.",
    ),
    ("repo", "string", "The repository, as owner/name."),
    (
        "query",
        "string",
        "Text to search for; supports field:value filters.",
    ),
    (
        "limit",
        "integer",
        "The most results to return (default 50).",
    ),
    (
        "cursor",
        "string",
        "The cursor from the previous page, to get the next one.",
    ),
    ("status", "string", "Only {o}s with this status."),
    ("labels", "array", "Labels to apply to the {o}."),
    ("assignee", "string", "The user to assign the {o} to."),
    (
        "due_date",
        "string",
        "When the {o} is due, as an ISO 8601 date.",
    ),
    ("email", "string", "An email address."),
    (
        "amount",
        "number",
        "The amount, in the currency's smallest unit.",
    ),
    ("currency", "string", "A three-letter ISO currency code."),
    ("body", "string", "The text of the {o}, in Markdown."),
    ("title", "string", "A short title for the {o}."),
    ("channel_id", "string", "The channel to post in."),
    ("start_time", "string", "When it starts (RFC 3339)."),
    ("end_time", "string", "When it ends (RFC 3339)."),
    ("region", "string", "The region, such as us-east-1."),
    ("path", "string", "A path, relative to the workspace root."),
    (
        "format",
        "string",
        "The output format: json, csv or markdown.",
    ),
    ("include_archived", "boolean", "Include archived {o}s too."),
    (
        "dry_run",
        "boolean",
        "Check what would happen without doing it.",
    ),
    ("tags", "array", "Tags to filter by."),
    ("priority", "string", "low, medium, high or urgent."),
    ("timezone", "string", "An IANA time zone name."),
    ("project_id", "string", "The project the {o} belongs to."),
    ("parent_id", "string", "The parent {o}, if any."),
    ("replicas", "integer", "How many replicas to run."),
];

const SENTENCES: &[&str] = &[
    "Returns the {o}'s id, its URL and when it was last changed.",
    "Requires the `{s}:write` scope.",
    "Results are paginated: pass the cursor from the previous page.",
    "Use this when the user asks to {v} a {o}.",
    "Fails if the {o} does not exist or the token cannot see it.",
    "Rate limited to 30 calls a minute per workspace.",
    "Archived {o}s are left out unless include_archived is set.",
    "The change is recorded in the {o}'s audit log.",
    "Works on {s} Cloud and self-hosted {s} alike.",
    "Large {o}s are returned in parts; follow the next link.",
];

/// The query set: phrases an agent writes, exact names in each casing,
/// single words, a stopword, a miss, and a long query.
const QUERIES: &[&str] = &[
    "create a github issue",
    "list open pull requests",
    "send a message to a slack channel",
    "refund a stripe payment",
    "cancel a subscription",
    "upload a file to an s3 bucket",
    "search jira tickets assigned to me",
    "schedule a meeting on the calendar",
    "get the weather forecast for a city",
    "restart a kubernetes deployment",
    "export a database table to csv",
    "merge a pull request",
    "invite a user to the team",
    "close an incident in pagerduty",
    "query a bigquery dataset",
    "archive a notion page",
    "create_invoice",
    "listPullRequests",
    "delete-branch",
    "github__create_issue",
    "invoice",
    "customer email",
    "due date",
    "the",
    "zebra unicorn saxophone",
    "add a comment to the ticket",
    "approve the deployment",
    "download a video from youtube",
    "scale the pods of a deployment to three replicas",
    "copy a folder in google drive",
    "sync contacts from hubspot",
    "I need to find every invoice for a customer that is past its due date and send each \
     customer an email reminder with the amount and currency, then record it in the project",
];

/// splitmix64: a small, seeded, deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        items.get(self.below(items.len())).copied()
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

#[derive(Clone, Copy)]
enum Case {
    Snake,
    Camel,
    Kebab,
}

fn cased(words: &[&str], case: Case) -> String {
    let parts: Vec<&str> = words.iter().flat_map(|w| w.split('_')).collect();
    match case {
        Case::Snake => parts.join("_"),
        Case::Kebab => parts.join("-"),
        Case::Camel => parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i == 0 {
                    (*p).to_owned()
                } else {
                    capitalized(p)
                }
            })
            .collect(),
    }
}

fn fill(template: &str, verb: &str, object: &str, service: &str) -> String {
    template
        .replace("{v}", verb)
        .replace("{o}", &object.replace('_', " "))
        .replace("{s}", service)
}

/// One server's tools.
fn server_tools(rng: &mut Rng, service: &str, count: usize) -> Result<Vec<Arc<Tool>>, String> {
    let case = match rng.below(10) {
        0..=6 => Case::Snake,
        7 | 8 => Case::Camel,
        _ => Case::Kebab,
    };
    let mut names = std::collections::BTreeSet::new();
    let mut tools = Vec::with_capacity(count);
    while tools.len() < count {
        let (Some(verb), Some(object)) = (rng.pick(VERBS), rng.pick(OBJECTS)) else {
            break;
        };
        let mut words = vec![verb, object];
        if rng.chance(30) {
            words.extend(rng.pick(QUALIFIERS));
        }
        let mut name = cased(&words, case);
        if !names.insert(name.clone()) {
            name = format!("{name}{}", names.len());
            names.insert(name.clone());
        }
        let mut description = format!(
            "{} a {} in {service}.",
            capitalized(verb),
            object.replace('_', " ")
        );
        for _ in 0..rng.below(4) {
            if let Some(s) = rng.pick(SENTENCES) {
                description.push(' ');
                description.push_str(&fill(s, verb, object, service));
            }
        }
        let mut properties = Map::new();
        let mut required = Vec::new();
        for i in 0..1 + rng.below(6) {
            let Some((param, kind, about)) = rng.pick(PARAMS) else {
                continue;
            };
            let param = cased(&[param], case);
            let about = fill(about, verb, object, service);
            let schema = if kind == "array" {
                json!({"type": kind, "description": about, "items": {"type": "string"}})
            } else {
                json!({"type": kind, "description": about})
            };
            if i == 0 {
                required.push(Value::from(param.as_str()));
            }
            properties.insert(param, schema);
        }
        let title = rng
            .chance(50)
            .then(|| format!("{} {}", capitalized(verb), object.replace('_', " ")));
        let tool = json!({
            "name": name,
            "title": title,
            "description": description,
            "inputSchema": {"type": "object", "properties": properties, "required": required},
            "annotations": {"readOnlyHint": matches!(verb, "get" | "list" | "search" | "query")}
        });
        let tool: Tool = serde_json::from_value(tool)
            .map_err(|e| format!("a generated tool does not parse: {e}"))?;
        tools.push(Arc::new(tool));
    }
    Ok(tools)
}

fn capitalized(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

/// The catalog: (namespaced name, server, tool), sorted by name as the
/// runtime's catalog is.
fn catalog(tools: usize, seed: u64) -> Result<Vec<(String, String, Arc<Tool>)>, String> {
    let mut rng = Rng(seed);
    let per_server = tools.div_ceil(SERVICES.len());
    let mut rows = Vec::with_capacity(tools);
    for service in SERVICES {
        let left = tools - rows.len();
        for tool in server_tools(&mut rng, service, per_server.min(left))? {
            rows.push((
                format!("{service}__{}", tool.name),
                (*service).to_owned(),
                tool,
            ));
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(rows)
}

fn entries(rows: &[(String, String, Arc<Tool>)]) -> Vec<IndexEntry<'_>> {
    rows.iter()
        .map(|(name, server, tool)| IndexEntry { name, server, tool })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(at).copied().unwrap_or_default()
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn kb(bytes: u64) -> String {
    format!("{:.1} KB", bytes as f64 / 1000.0)
}

pub(crate) fn run(args: SearchArgs) -> Result<(), String> {
    let SearchArgs {
        tools,
        rounds,
        k,
        seed,
    } = args;
    if tools == 0 || tools > mcp_stack_runtime::search::MAX_INDEXED_TOOLS {
        return Err(format!(
            "--tools: give 1 to {}",
            mcp_stack_runtime::search::MAX_INDEXED_TOOLS
        ));
    }
    if rounds == 0 || k == 0 {
        return Err("--rounds and -k: give at least 1".into());
    }
    if cfg!(debug_assertions) {
        println!("(a debug build: these figures mean nothing; run with --release)");
    }
    let rows = catalog(tools, seed)?;
    println!(
        "bench search: {} generated tools on {} servers (seed {seed}), {} queries × {rounds} \
         rounds, k = {k}",
        rows.len(),
        SERVICES.len(),
        QUERIES.len()
    );
    println!();

    // Building.
    let mut builds = Vec::new();
    let mut index = ToolIndex::build(entries(&rows));
    for _ in 0..5 {
        let start = Instant::now();
        index = ToolIndex::build(entries(&rows));
        builds.push(start.elapsed());
    }
    builds.sort_unstable();
    println!(
        "index build:  {} (median of 5), {} terms, {} per tool",
        ms(percentile(&builds, 0.5)),
        index.terms(),
        us(percentile(&builds, 0.5) / u32::try_from(rows.len()).unwrap_or(u32::MAX)),
    );

    // One server's list fetched again: every tool a new `Arc`, one edited,
    // one added.
    let mut changed = rows.clone();
    let server = SERVICES.get(7).copied().unwrap_or("gdrive");
    let mut edited = false;
    for row in changed.iter_mut().filter(|r| r.1 == server) {
        let mut tool = Tool::clone(&row.2);
        if !edited {
            tool.description = Some("Edited: the description changed.".into());
            edited = true;
        }
        row.2 = Arc::new(tool);
    }
    let added: Tool = serde_json::from_value(json!({
        "name": "added_tool", "description": "A tool the server added.",
        "inputSchema": {"type": "object"}
    }))
    .map_err(|e| e.to_string())?;
    changed.push((
        format!("{server}__added_tool"),
        server.to_owned(),
        Arc::new(added),
    ));
    let mut updates = Vec::new();
    let mut updated = index.update(entries(&changed));
    for _ in 0..5 {
        let start = Instant::now();
        updated = index.update(entries(&changed));
        updates.push(start.elapsed());
    }
    updates.sort_unstable();
    println!(
        "index update: {} (median of 5) after `{server}` changed: {} of {} tools carried over",
        ms(percentile(&updates, 0.5)),
        updated.reused(),
        updated.len()
    );
    drop(updated);

    // Queries, each timed on its own.
    let mut all = Vec::with_capacity(QUERIES.len() * rounds);
    let mut per_query: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); QUERIES.len()];
    let mut found = 0usize;
    for _ in 0..rounds {
        for (q, times) in QUERIES.iter().zip(per_query.iter_mut()) {
            let start = Instant::now();
            let hits = index.search(q, k).map_err(|e| e.to_string())?;
            let took = start.elapsed();
            found += hits.len();
            std::hint::black_box(&hits);
            all.push(took);
            times.push(took);
        }
    }
    all.sort_unstable();
    let (p50, p99, max) = (
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        all.last().copied().unwrap_or_default(),
    );
    let slowest = QUERIES
        .iter()
        .zip(per_query.iter_mut())
        .map(|(q, times)| {
            times.sort_unstable();
            (percentile(times, 0.5), *q)
        })
        .max()
        .unwrap_or_default();
    println!(
        "per query:    p50 {}, p99 {}, max {} over {} searches ({:.1} results each); \
         target p99 ≤ {}: {}",
        us(p50),
        us(p99),
        us(max),
        all.len(),
        found as f64 / all.len().max(1) as f64,
        ms(TARGET_P99),
        if p99 <= TARGET_P99 { "met" } else { "NOT met" }
    );
    println!(
        "              slowest query (median {}): {:?}",
        us(slowest.0),
        slowest.1.chars().take(60).collect::<String>()
    );

    // The schema bytes a model is handed.
    let full = index.full_schema_bytes();
    let search_tool = DeferredTools::search_tool();
    let search_bytes = serde_json::to_vec(&search_tool)
        .map_err(|e| e.to_string())?
        .len() as u64;
    // Five always-on tools: the first of five servers.
    let always_on: u64 = (0..5)
        .filter_map(|i| index.schema_bytes(i * rows.len() / 5))
        .sum();
    let listing = search_bytes + always_on;
    let mut result_bytes = 0u64;
    let mut searches = 0u64;
    for q in QUERIES {
        let hits = index.search(q, 5).map_err(|e| e.to_string())?;
        result_bytes += hits
            .iter()
            .filter_map(|h| index.schema_bytes(h.index()))
            .sum::<u64>();
        searches += 1;
    }
    let per_search = result_bytes / searches.max(1);
    let pct = |b: u64| 100.0 * b as f64 / full.max(1) as f64;
    println!();
    println!(
        "schema bytes: full catalog {} ({} bytes per tool)",
        kb(full),
        full / rows.len().max(1) as u64
    );
    println!(
        "              deferred listing {} ({:.2} % of full): search_tools {} bytes + 5 \
         always-on tools {} bytes",
        kb(listing),
        pct(listing),
        search_bytes,
        always_on
    );
    println!(
        "              a search of 5 results hands out {} on average; a turn after 3 searches \
         (listing + 15 tools) {} ({:.2} % of full)",
        kb(per_search),
        kb(listing + 3 * per_search),
        pct(listing + 3 * per_search)
    );
    Ok(())
}
