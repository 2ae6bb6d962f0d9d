//! The catalog's naming, sorting and lookups.

use super::*;
use serde_json::json;

fn tool(name: &str, read_only: bool) -> Arc<Tool> {
    Arc::new(
        serde_json::from_value(json!({
            "name": name,
            "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
            "annotations": {"readOnlyHint": read_only}
        }))
        .unwrap(),
    )
}

#[test]
fn namespaced_sorted_filtered_with_schema_and_annotations() {
    let a = [
        tool("write", false),
        tool("read", true),
        tool("secret", true),
    ];
    let b = [tool("read", true)];
    let mut filter_a = ToolFilter::default();
    filter_a.exclude.insert("secret".to_owned());
    let open = ToolFilter::default();
    let servers = [
        ServerEntries {
            server: "zeta",
            filter: &filter_a,
            tools: a.iter().collect(),
            resources: &[],
            templates: &[],
            prompts: &[],
            diagnostics: &[],
            protocol: ProtocolVersion::V2026_07_28,
            transport: TransportKind::StreamableHttp,
            status: ToolStatus::Ready,
            changed: BTreeMap::new(),
        },
        ServerEntries {
            server: "alpha",
            filter: &open,
            tools: b.iter().collect(),
            resources: &[],
            templates: &[],
            prompts: &[],
            diagnostics: &["no tools capability".to_owned()],
            protocol: ProtocolVersion::V2025_11_25,
            transport: TransportKind::Stdio,
            status: ToolStatus::Ready,
            changed: BTreeMap::new(),
        },
    ];
    let c = RuntimeCatalog::build(&servers, Vec::new());
    let names: Vec<&str> = c.tools().iter().map(RuntimeTool::name).collect();
    assert_eq!(names, ["alpha__read", "zeta__read", "zeta__write"]);
    let w = c.get("zeta__write").unwrap();
    assert_eq!((w.server(), w.tool_name()), ("zeta", "write"));
    assert_eq!(w.annotations().unwrap().read_only_hint, Some(false));
    assert_eq!(w.input_schema()["properties"]["x"]["type"], "string");
    assert!(c.get("zeta__secret").is_none());
    assert_eq!(c.notes().len(), 1);
    assert_eq!(c.notes()[0].server, "alpha");
    let connected: Vec<(&str, &str)> = c
        .connected()
        .iter()
        .map(|s| (s.server.as_str(), s.protocol.as_str()))
        .collect();
    assert_eq!(connected, [("alpha", "2025-11-25"), ("zeta", "2026-07-28")]);
}

proptest::proptest! {
    /// Lookups by name are binary searches over the sorted entries:
    /// every entry is found under its own name, and nothing else is.
    #[test]
    fn every_entry_is_found_by_its_name(
        names in proptest::collection::vec(
            ("[a-cA-C]{1,2}", "[a-cA-C_.-]{1,6}"),
            1..40,
        )
    ) {
        let open = ToolFilter::default();
        let mut by_server: BTreeMap<&str, Vec<Arc<Tool>>> = BTreeMap::new();
        let mut prompts: BTreeMap<&str, Vec<Arc<Prompt>>> = BTreeMap::new();
        for (server, name) in &names {
            by_server.entry(server).or_default().push(tool(name, true));
            prompts.entry(server).or_default().push(prompt(name));
        }
        let servers: Vec<ServerEntries<'_>> = by_server
            .iter()
            .map(|(server, tools)| ServerEntries {
                tools: tools.iter().collect(),
                ..entries(server, &open, &[], &[], &prompts[server])
            })
            .collect();
        let c = RuntimeCatalog::build(&servers, Vec::new());
        proptest::prop_assert!(!c.tools().is_empty());
        for t in c.tools() {
            let found = c.get(t.name()).map(RuntimeTool::name);
            proptest::prop_assert_eq!(found, Some(t.name()));
            let missing = format!("{}~", t.name());
            proptest::prop_assert!(c.get(&missing).is_none());
        }
        for p in c.prompts() {
            proptest::prop_assert_eq!(c.prompt(p.name()).map(RuntimePrompt::name), Some(p.name()));
        }
    }
}

fn resource(uri: &str, name: &str) -> Arc<Resource> {
    Arc::new(Resource::new(uri, name))
}

fn template(uri: &str, name: &str) -> Arc<ResourceTemplate> {
    Arc::new(ResourceTemplate::new(uri, name))
}

fn prompt(name: &str) -> Arc<Prompt> {
    Arc::new(Prompt::new(name))
}

fn entries<'a>(
    server: &'a str,
    filter: &'a ToolFilter,
    resources: &'a [Arc<Resource>],
    templates: &'a [Arc<ResourceTemplate>],
    prompts: &'a [Arc<Prompt>],
) -> ServerEntries<'a> {
    ServerEntries {
        server,
        filter,
        tools: Vec::new(),
        resources,
        templates,
        prompts,
        diagnostics: &[],
        protocol: ProtocolVersion::V2025_11_25,
        transport: TransportKind::Stdio,
        status: ToolStatus::Ready,
        changed: BTreeMap::new(),
    }
}

#[test]
fn resources_templates_and_prompts_are_namespaced_like_tools() {
    let open = ToolFilter::default();
    let ra = [
        resource("file:///shared", "readme"),
        resource("a://only", "only"),
    ];
    let rb = [resource("file:///shared", "readme")];
    let ta = [template("a://items/{id}", "item")];
    let pa = [prompt("greet"), prompt("review code")];
    let pb = [prompt("greet")];
    let c = RuntimeCatalog::build(
        &[
            entries("a", &open, &ra, &ta, &pa),
            entries("b", &open, &rb, &[], &pb),
        ],
        Vec::new(),
    );
    let names = |v: Vec<&str>| v.join(" ");
    assert_eq!(
        names(c.resources().iter().map(RuntimeResource::name).collect()),
        "a__only a__readme b__readme"
    );
    assert_eq!(
        names(c.prompts().iter().map(RuntimePrompt::name).collect()),
        "a__greet a__review_code b__greet"
    );
    let t = c.resource_template("a__item").unwrap();
    assert_eq!((t.server(), t.uri_template()), ("a", "a://items/{id}"));
    let r = c.resource("b__readme").unwrap();
    assert_eq!(
        (r.server(), r.uri(), r.resource_name()),
        ("b", "file:///shared", "readme")
    );
    let p = c.prompt("a__review_code").unwrap();
    assert_eq!(p.prompt_name(), "review code");
    // The URI index: one URI, two servers.
    let shared: Vec<&str> = c.resources_at("file:///shared").map(|r| r.name()).collect();
    assert_eq!(shared, ["a__readme", "b__readme"]);
    assert_eq!(c.resources_at("a://only").count(), 1);
    assert_eq!(c.resources_at("nope").count(), 0);
    assert!(c.notes().is_empty(), "{:?}", c.notes());
    // Kinds are named apart: a tool could share a prompt's name.
    assert!(c.get("a__greet").is_none());
    assert_eq!(
        c.some_names(EntryKind::Prompt, 2),
        ["a__greet", "a__review_code"]
    );
}

#[test]
fn clashes_long_names_and_duplicates() {
    let open = ToolFilter::default();
    // `my.srv` and `my_srv` both want `my_srv__doc`: the exact one keeps it.
    let r1 = [resource("x://1", "doc")];
    let r2 = [resource("y://1", "doc")];
    // One server, several resources named `doc`, and a URI listed twice.
    let long = "n".repeat(80);
    let r3 = [
        resource("z://b", "doc"),
        resource("z://a", "doc"),
        resource("z://a", "doc again"),
        resource("z://long", &long),
    ];
    let p3 = [prompt("p"), prompt("p")];
    let c = RuntimeCatalog::build(
        &[
            entries("my.srv", &open, &r1, &[], &[]),
            entries("my_srv", &open, &r2, &[], &[]),
            entries("z", &open, &r3, &[], &p3),
        ],
        Vec::new(),
    );
    let exact = c.resource("my_srv__doc").unwrap();
    assert_eq!(exact.server(), "my_srv");
    let other = c
        .resources()
        .iter()
        .find(|r| r.server() == "my.srv")
        .unwrap();
    assert!(other.name().starts_with("my_srv__doc_"), "{}", other.name());
    // The first `doc` by URI keeps the name; the other is named after its URI.
    assert_eq!(c.resource("z__doc").unwrap().uri(), "z://a");
    let b = c.resources_at("z://b").next().unwrap();
    assert_eq!(b.name(), "z__doc_z___b");
    // A URI listed twice is kept once, with a note.
    assert_eq!(c.resources_at("z://a").count(), 1);
    let long_name = c.resources_at("z://long").next().unwrap().name();
    assert_eq!(long_name.len(), naming::MAX_TOOL_NAME_LEN);
    assert!(c.resources().iter().all(|r| r.name().len() <= 64));
    assert_eq!(c.prompts().len(), 1);
    let notes: Vec<&str> = c.notes().iter().map(|n| n.message.as_str()).collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("resource `z://a` more than once")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("several resources are named `doc`")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("prompt `p` more than once")),
        "{notes:?}"
    );
    // Deterministic: the same input, in another order, the same names.
    let r3_reordered = [r3[3].clone(), r3[2].clone(), r3[0].clone(), r3[1].clone()];
    let again = RuntimeCatalog::build(
        &[
            entries("my_srv", &open, &r2, &[], &[]),
            entries("my.srv", &open, &r1, &[], &[]),
            entries("z", &open, &r3_reordered, &[], &p3),
        ],
        Vec::new(),
    );
    let all = |c: &RuntimeCatalog| -> Vec<(String, String)> {
        c.resources()
            .iter()
            .map(|r| (r.name().to_owned(), r.uri().to_owned()))
            .collect()
    };
    assert_eq!(all(&c), all(&again));
}
