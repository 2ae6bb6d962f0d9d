//! `mcp_stack_config::edit`: adding then removing a server gives back the file
//! byte for byte, in every format, on commented and oddly formatted files;
//! the entry reads back as its client's; refusals return no text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use mcp_stack_config::edit::{
    EditError, Existing, NewServer, RemoteTransport, add_server, detect_format, remove_server,
    server_names,
};
use mcp_stack_config::{Format, Options, TransportConfig, parse_str, resolve};
use proptest::prelude::*;

/// A file of each format, commented (where its client reads comments) and
/// oddly laid out: tabs, CRLF, a trailing comma, blank lines, comments on
/// the servers' lines.
fn fixtures() -> Vec<(Format, &'static str)> {
    vec![
        (
            Format::OpenClawJson,
            "{\n    \"agent\": {\"toolCallTimeoutMs\": 5000},\n    \"mcpServers\": {\n        \"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"fs\"],\n                 \"timeoutMs\": 9000}\n    }\n}",
        ),
        (
            Format::OpenClawToml,
            "# OpenClaw\n[agent]\ntoolCallTimeoutMs = 5000   # five seconds\n\n[mcp_servers.fs]\ncommand = 'npx'\nargs = [ \"-y\",\n  \"fs\" ]\n\n  # indented comment\n[mcp_servers.fs.env]\nROOT = \"/tmp\"\n\n# the end\n",
        ),
        (
            Format::ClaudeDesktop,
            "{\r\n\t\"globalShortcut\": \"\",\r\n\t\"mcpServers\": {\r\n\t\t\"fs\": {\r\n\t\t\t\"command\": \"npx\"\r\n\t\t}\r\n\t}\r\n}\r\n",
        ),
        (
            Format::Cursor,
            "{ \"mcpServers\": { \"remote\": { \"url\": \"https://example.com/mcp\" } } }",
        ),
        (
            Format::VsCode,
            "// VS Code\n{\n  \"inputs\": [],\n  /* servers */\n  \"servers\": {\n    \"fs\": { \"type\": \"stdio\", \"command\": \"npx\" }, // the files\n    // the last one\n    \"kit\": {\n      \"type\": \"stdio\",\n      \"command\": \"mcp\",\n    },\n  },\n}\n",
        ),
        (
            Format::Codex,
            "model = \"o4\"  # the model\n\n[mcp_servers.docs]\nurl = \"https://example.com/mcp\"\nbearer_token_env_var = \"DOCS_TOKEN\"\n\n[profiles.fast]\nmodel = \"mini\"\n",
        ),
        (
            Format::ClaudeCode,
            "{\n  \"mcpServers\": {\n    \"fs\": {\"type\": \"stdio\", \"command\": \"npx\", \"args\": [\"-y\", \"fs\"]},\n    \"docs\": {\"type\": \"http\", \"url\": \"https://example.com/mcp\"}\n  }\n}\n",
        ),
        (
            Format::GeminiCli,
            "{\n  \"theme\": \"GitHub\",\n  \"mcpServers\": {\n    \"docs\": {\"httpUrl\": \"https://example.com/mcp\", \"timeout\": 5000}\n  }\n}\n",
        ),
        (
            Format::Windsurf,
            "{\n  \"mcpServers\": {\n    \"docs\": {\"serverUrl\": \"https://example.com/mcp\"}\n  }\n}\n",
        ),
        (
            Format::Zed,
            "{\n  \"theme\": \"One Dark\",\n  \"context_servers\": {\n    \"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"fs\"], \"env\": {}}\n  }\n}\n",
        ),
    ]
}

fn stdio() -> NewServer {
    NewServer::stdio("mcp", ["demo-server", "--fast"]).env("API_KEY", "${API_KEY}")
}

fn remote() -> NewServer {
    NewServer::remote("https://tools.example.com/mcp").header("Authorization", "Bearer ${TOKEN}")
}

/// What the file reads as, with `API_KEY`, `TOKEN` set.
fn resolved(text: &str, format: Format, name: &str) -> TransportConfig {
    let loaded = parse_str(text, &Options::new().format(format))
        .unwrap_or_else(|e| panic!("{format}: {e}\n{text}"));
    let env = |v: &str| Some(format!("value-of-{v}"));
    let r = resolve(&loaded.config, &env).unwrap();
    r.servers[name].transport.clone()
}

/// Whether `text` parses as JSON once comments and trailing commas are
/// read (only VS Code's fixture has them; `parse_str` reads plain JSON).
fn plain(format: Format) -> bool {
    format != Format::VsCode
}

#[test]
fn add_then_remove_gives_back_every_byte() {
    for (format, text) in fixtures() {
        let servers: Vec<(&str, NewServer)> = match format {
            Format::ClaudeDesktop | Format::Zed => vec![("added", stdio())],
            _ => vec![("added", stdio()), ("added-remote", remote())],
        };
        for (name, server) in servers {
            let added = add_server(text, format, name, &server, Existing::Refuse)
                .unwrap_or_else(|e| panic!("{format}: {e}"));
            assert!(added.len() > text.len());
            let back = remove_server(&added, format, name).unwrap();
            assert_eq!(back, text, "{format} {name}:\n{added}");
            // Every old byte is still there, in order, around the entry.
            let prefix = text
                .bytes()
                .zip(added.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            let suffix = text
                .bytes()
                .rev()
                .zip(added.bytes().rev())
                .take_while(|(a, b)| a == b)
                .count();
            assert!(
                prefix + suffix + 1 >= text.len(),
                "{format}: changed beyond the entry:\n{added}"
            );
            let names = server_names(&added, format).unwrap();
            assert_eq!(names.last().map(String::as_str), Some(name), "{format}");
        }
    }
}

#[test]
fn the_entry_reads_back_as_written() {
    for (format, text) in fixtures() {
        let added = add_server(text, format, "added", &stdio(), Existing::Refuse).unwrap();
        let source = if plain(format) {
            added.clone()
        } else {
            // parse_str reads plain JSON: check the entry alone.
            let start = added.find("\"added\"").unwrap();
            let entry = &added[start..];
            let end = entry.find("\n    }").unwrap() + "\n    }".len();
            format!("{{\"servers\": {{{}}}}}", &entry[..end])
        };
        match resolved(&source, format, "added") {
            TransportConfig::Stdio {
                command, args, env, ..
            } => {
                assert_eq!(command, "mcp");
                assert_eq!(args, ["demo-server", "--fast"]);
                assert_eq!(env["API_KEY"].expose(), "value-of-API_KEY");
            }
            other => panic!("{format}: {other:?}"),
        }
        if matches!(format, Format::ClaudeDesktop | Format::Zed) || !plain(format) {
            continue;
        }
        let added = add_server(text, format, "web", &remote(), Existing::Refuse).unwrap();
        match resolved(&added, format, "web") {
            TransportConfig::Http { url, headers, .. } => {
                assert_eq!(url, "https://tools.example.com/mcp");
                assert_eq!(headers["Authorization"].expose(), "Bearer value-of-TOKEN");
            }
            other => panic!("{format}: {other:?}"),
        }
    }
}

#[test]
fn entries_are_written_in_the_format_s_own_words() {
    let vscode = add_server(
        "{\"servers\": {}}",
        Format::VsCode,
        "w",
        &remote().transport(RemoteTransport::Sse),
        Existing::Refuse,
    )
    .unwrap();
    assert_eq!(
        vscode,
        "{\"servers\": {\n  \"w\": {\n    \"type\": \"sse\",\n    \"url\": \"https://tools.example.com/mcp\",\n    \"headers\": {\n      \"Authorization\": \"Bearer ${TOKEN}\"\n    }\n  }\n}}"
    );
    let stdio_vscode = add_server(
        "{\n  \"servers\": {}\n}\n",
        Format::VsCode,
        "s",
        &stdio(),
        Existing::Refuse,
    )
    .unwrap();
    assert!(
        stdio_vscode.contains("\"type\": \"stdio\",\n      \"command\": \"mcp\""),
        "{stdio_vscode}"
    );

    let codex = add_server("", Format::Codex, "web", &remote(), Existing::Refuse).unwrap();
    assert_eq!(
        codex,
        "[mcp_servers.web]\nurl = \"https://tools.example.com/mcp\"\nhttp_headers = { Authorization = \"Bearer ${TOKEN}\" }\n"
    );
    let openclaw = add_server(
        "{\"mcpServers\": {}}",
        Format::OpenClawJson,
        "w",
        &remote().transport(RemoteTransport::StreamableHttp),
        Existing::Refuse,
    )
    .unwrap();
    assert!(
        openclaw.contains("\"transport\": \"streamable-http\""),
        "{openclaw}"
    );
    let toml = add_server(
        "[agent]\n",
        Format::OpenClawToml,
        "w",
        &remote().transport(RemoteTransport::Sse),
        Existing::Refuse,
    )
    .unwrap();
    assert!(
        toml.contains("[mcp_servers.w]\ntransport = \"sse\"\nurl = "),
        "{toml}"
    );
    // Unnamed: the client's default, nothing written.
    let cursor = add_server(
        "{\"mcpServers\": {}}",
        Format::Cursor,
        "w",
        &remote(),
        Existing::Refuse,
    )
    .unwrap();
    assert!(
        !cursor.contains("type") && !cursor.contains("transport"),
        "{cursor}"
    );
}

#[test]
fn a_new_table_goes_after_the_other_servers() {
    let text = "[mcp_servers.a]\ncommand = \"a\"\n\n[mcp_servers.a.env]\nK = \"v\"\n\n[profiles.x]\nmodel = \"m\"\n";
    let added = add_server(
        text,
        Format::Codex,
        "b",
        &NewServer::stdio("b", [""; 0]),
        Existing::Refuse,
    )
    .unwrap();
    let (b, profiles) = (
        added.find("[mcp_servers.b]").unwrap(),
        added.find("[profiles.x]").unwrap(),
    );
    let env = added.find("[mcp_servers.a.env]").unwrap();
    assert!(env < b && b < profiles, "{added}");
    // An inline servers table takes an inline member.
    let inline = "mcp_servers = { a = { command = \"a\" } }\n";
    let added = add_server(
        inline,
        Format::Codex,
        "b",
        &NewServer::stdio("b", ["x"]),
        Existing::Refuse,
    )
    .unwrap();
    assert_eq!(remove_server(&added, Format::Codex, "b").unwrap(), inline);
    assert!(resolved(&added, Format::Codex, "b") != resolved(&added, Format::Codex, "a"));
}

#[test]
fn the_servers_object_is_made_when_missing() {
    let text = "{\n  \"agent\": {}\n}\n";
    let added = add_server(text, Format::OpenClawJson, "a", &stdio(), Existing::Refuse).unwrap();
    assert_eq!(
        added,
        "{\n  \"agent\": {},\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"mcp\",\n      \"args\": [\"demo-server\", \"--fast\"],\n      \"env\": {\n        \"API_KEY\": \"${API_KEY}\"\n      }\n    }\n  }\n}\n"
    );
    // TOML: no `[mcp_servers]` header of its own, so removing gives the file back.
    let toml = "model = \"x\"\n";
    let added = add_server(toml, Format::Codex, "a", &stdio(), Existing::Refuse).unwrap();
    assert!(!added.contains("[mcp_servers]\n"), "{added}");
    assert_eq!(remove_server(&added, Format::Codex, "a").unwrap(), toml);
}

#[test]
fn replacing_keeps_the_place_and_the_comments() {
    let text = "{\n  \"servers\": {\n    // first\n    \"a\": {\"type\": \"stdio\", \"command\": \"old\"}, // keep me\n    \"b\": {\"type\": \"stdio\", \"command\": \"b\"}\n  }\n}";
    let e = add_server(text, Format::VsCode, "a", &stdio(), Existing::Refuse).unwrap_err();
    assert!(matches!(e, EditError::Exists { .. }), "{e}");
    let replaced = add_server(text, Format::VsCode, "a", &stdio(), Existing::Replace).unwrap();
    assert!(
        replaced.contains(
            "// first\n    \"a\": {\n      \"type\": \"stdio\",\n      \"command\": \"mcp\""
        ),
        "{replaced}"
    );
    assert!(replaced.contains("}, // keep me\n    \"b\""), "{replaced}");
    assert!(!replaced.contains("old"));
    let toml = "# top\n[mcp_servers.a] # a's\ncommand = \"old\"\n[mcp_servers.a.env]\nX = \"1\"\n\n[mcp_servers.b]\ncommand = \"b\"\n";
    let replaced = add_server(toml, Format::Codex, "a", &stdio(), Existing::Replace).unwrap();
    assert!(
        replaced.starts_with("# top\n[mcp_servers.a] # a's\ncommand = \"mcp\""),
        "{replaced}"
    );
    assert!(
        !replaced.contains("X = ") && !replaced.contains("old"),
        "{replaced}"
    );
    assert!(
        replaced.ends_with("\n[mcp_servers.b]\ncommand = \"b\"\n"),
        "{replaced}"
    );
}

#[test]
fn removing_keeps_the_neighbours_and_their_comments() {
    let text = "{\n  \"servers\": {\n    \"a\": {\"command\": \"a\", \"type\": \"stdio\"}, // a\n    \"b\": {\"command\": \"b\", \"type\": \"stdio\"}, // b\n    \"c\": {\"command\": \"c\", \"type\": \"stdio\"} // c\n  }\n}";
    let no_b = remove_server(text, Format::VsCode, "b").unwrap();
    assert_eq!(
        no_b,
        text.replace(
            "    \"b\": {\"command\": \"b\", \"type\": \"stdio\"}, // b\n",
            ""
        )
    );
    let no_c = remove_server(text, Format::VsCode, "c").unwrap();
    assert_eq!(
        no_c,
        "{\n  \"servers\": {\n    \"a\": {\"command\": \"a\", \"type\": \"stdio\"}, // a\n    \"b\": {\"command\": \"b\", \"type\": \"stdio\"} // b\n  }\n}"
    );
    let one_line = "{\"mcpServers\": {\"a\": {\"command\": \"a\"}, \"b\": {\"command\": \"b\"}}}";
    assert_eq!(
        remove_server(one_line, Format::Cursor, "a").unwrap(),
        "{\"mcpServers\": {\"b\": {\"command\": \"b\"}}}"
    );
    assert_eq!(
        remove_server(one_line, Format::Cursor, "b").unwrap(),
        "{\"mcpServers\": {\"a\": {\"command\": \"a\"}}}"
    );
    let only = remove_server(
        "{\"mcpServers\": {\n  \"a\": {\"command\": \"a\"}\n}}",
        Format::Cursor,
        "a",
    )
    .unwrap();
    assert_eq!(only, "{\"mcpServers\": {}}");
}

#[test]
fn refusals_return_no_text() {
    let desktop = "{\"mcpServers\": {}}";
    let e = add_server(
        desktop,
        Format::ClaudeDesktop,
        "web",
        &remote(),
        Existing::Refuse,
    )
    .unwrap_err();
    assert!(e.to_string().contains("stdio"), "{e}");
    let e = add_server(
        "",
        Format::Codex,
        "web",
        &remote().transport(RemoteTransport::Sse),
        Existing::Refuse,
    )
    .unwrap_err();
    assert!(e.to_string().contains("streamable HTTP only"), "{e}");
    let e = add_server(
        "{\"mcpServers\": {}}",
        Format::Cursor,
        "web",
        &remote().transport(RemoteTransport::Sse),
        Existing::Refuse,
    )
    .unwrap_err();
    assert!(e.to_string().contains("picks one itself"), "{e}");
    let e = add_server(
        desktop,
        Format::ClaudeDesktop,
        "a.b",
        &stdio(),
        Existing::Refuse,
    )
    .unwrap_err();
    assert!(matches!(e, EditError::BadName { .. }), "{e}");
    // Claude Desktop reads plain JSON: a comment would break it.
    let commented = "{\n  // mine\n  \"mcpServers\": {}\n}";
    let e = add_server(
        commented,
        Format::ClaudeDesktop,
        "a",
        &stdio(),
        Existing::Refuse,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("a comment at line 2, column 3"),
        "{e}"
    );
    // Not parsing: said where, without quoting the line.
    for (format, broken) in [
        (
            Format::Cursor,
            "{\"mcpServers\": {\"a\": {\"command\": \"s3cr3t-token\"}",
        ),
        (Format::VsCode, "{\"servers\": {\"a\": }}"),
        (
            Format::Codex,
            "[mcp_servers.a]\ncommand = \"s3cr3t-token\nx",
        ),
    ] {
        let e = add_server(broken, format, "b", &stdio(), Existing::Refuse).unwrap_err();
        assert!(matches!(e, EditError::Syntax { .. }), "{format}: {e}");
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
        assert!(remove_server(broken, format, "a").is_err());
    }
    let e = remove_server(desktop, Format::ClaudeDesktop, "nope").unwrap_err();
    assert!(matches!(e, EditError::NotFound { .. }), "{e}");
    let twice = "{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"a\": {\"command\": \"y\"}}}";
    assert!(matches!(
        remove_server(twice, Format::Cursor, "a"),
        Err(EditError::Duplicate { .. })
    ));
    let not_object = "{\"mcpServers\": []}";
    assert!(matches!(
        add_server(not_object, Format::Cursor, "a", &stdio(), Existing::Refuse),
        Err(EditError::NotAnObject { .. })
    ));
    // An entry the reader would refuse.
    let e = add_server(
        desktop,
        Format::Cursor,
        "w",
        &NewServer::remote("ftp://x"),
        Existing::Refuse,
    )
    .unwrap_err();
    assert!(matches!(e, EditError::Invalid { .. }), "{e}");
    // Secrets never in messages.
    let secret = NewServer::stdio("x", [""; 0]).env("K", "s3cr3t-value");
    let e = add_server(
        "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}",
        Format::Cursor,
        "a",
        &secret,
        Existing::Refuse,
    )
    .unwrap_err();
    assert!(!format!("{e} {e:?} {secret:?}").contains("s3cr3t"));
}

#[test]
fn formats_of_files_to_edit_are_detected_without_validation() {
    // A broken entry (both command and url) is still editable.
    let text = "{\"servers\": {\"bad\": {\"command\": \"x\", \"url\": \"http://h\"}}}";
    assert!(parse_str(text, &Options::new()).is_err());
    assert_eq!(detect_format(text, None).unwrap(), Format::VsCode);
    assert_eq!(
        detect_format(
            "// hi\n{\"servers\": {}}",
            Some(std::path::Path::new("/x/.vscode/mcp.json"))
        )
        .unwrap(),
        Format::VsCode
    );
    assert_eq!(
        detect_format("[mcp_servers.a]\ncommand = \"x\"\n", None).unwrap(),
        Format::Codex
    );
    assert!(matches!(
        detect_format("{\"other\": 1}", None),
        Err(EditError::UnknownFormat)
    ));
}

/// Files made of members in assorted layouts.
fn json_file() -> impl Strategy<Value = String> {
    let member = (
        "[a-z]{1,6}",
        prop_oneof![
            Just("{\"command\": \"x\"}".to_owned()),
            Just("{\n \"url\": \"http://h/\" ,\"headers\":{}}".to_owned()),
            Just("1".to_owned())
        ],
    );
    let sep = prop_oneof![
        Just(",\n    ".to_owned()),
        Just(", ".to_owned()),
        Just(" ,\t".to_owned()),
        Just(", // note\n  ".to_owned()),
        Just("/* c */,\n\n\t".to_owned()),
    ];
    (
        proptest::collection::vec((member, sep), 0..5),
        prop_oneof![Just(""), Just("\n"), Just(" // end\n"), Just(",\n")],
        prop_oneof![Just("\n  "), Just(""), Just("\r\n")],
        any::<bool>(),
    )
        .prop_map(|(members, tail, lead, crlf)| {
            let mut seen = std::collections::BTreeSet::new();
            let mut body = String::new();
            let members: Vec<_> = members
                .into_iter()
                .filter(|((k, _), _)| k != "zz" && seen.insert(k.clone()))
                .collect();
            for (i, ((k, v), sep)) in members.iter().enumerate() {
                body.push_str(&format!("\"{k}\": {v}"));
                if i + 1 < members.len() {
                    body.push_str(sep);
                }
            }
            // (An empty object with whitespace inside comes back as `{}`.)
            let inner = if members.is_empty() {
                String::new()
            } else {
                format!("{lead}{body}{tail}")
            };
            let text = format!(
                "/* top */ {{\"other\": [1, 2,],{lead}\"servers\": {{{inner}}}, \"after\": true}}\n"
            );
            if crlf {
                text.replace('\n', "\r\n")
            } else {
                text
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Adding then removing gives back the bytes; the bytes outside the
    /// servers object never change.
    #[test]
    fn json_round_trips(text in json_file(), with_env in any::<bool>()) {
        let server = if with_env { stdio() } else { remote() };
        let added = add_server(&text, Format::VsCode, "zz", &server, Existing::Refuse).unwrap();
        let back = remove_server(&added, Format::VsCode, "zz").unwrap();
        prop_assert_eq!(&back, &text);
        let head = &text[..text.find("\"servers\"").unwrap()];
        let tail = &text[text.rfind(", \"after\"").unwrap()..];
        prop_assert!(added.starts_with(head) && added.ends_with(tail));
        // Removing another member keeps the new one and the rest.
        let names = server_names(&added, Format::VsCode).unwrap();
        if let Some(first) = names.first().filter(|n| *n != "zz") {
            let fewer = remove_server(&added, Format::VsCode, first).unwrap();
            let left = server_names(&fewer, Format::VsCode).unwrap();
            prop_assert_eq!(left, names[1..].to_vec());
        }
    }
}

#[test]
fn toml_layouts() {
    // An explicit `[mcp_servers]` header with inline entries under it.
    let explicit = "[mcp_servers]\n# inline ones\na = { command = \"a\" }\n\n[other]\nk = 1\n";
    let added = add_server(explicit, Format::Codex, "b", &stdio(), Existing::Refuse).unwrap();
    assert_eq!(remove_server(&added, Format::Codex, "b").unwrap(), explicit);
    assert_eq!(server_names(&added, Format::Codex).unwrap(), ["a", "b"]);
    // Removing an inline entry keeps the header and its comment.
    let no_a = remove_server(explicit, Format::Codex, "a").unwrap();
    assert!(no_a.starts_with("[mcp_servers]\n"), "{no_a}");
    assert!(!no_a.contains("command"), "{no_a}");
    // Shapes that are not a table of servers are refused.
    for text in ["mcp_servers = 1\n", "[[mcp_servers]]\ncommand = \"x\"\n"] {
        let e = add_server(text, Format::Codex, "b", &stdio(), Existing::Refuse).unwrap_err();
        assert!(matches!(e, EditError::NotAnObject { .. }), "{text}: {e}");
    }
    let dotted = "mcp_servers.a.command = \"a\"\n";
    let e = add_server(dotted, Format::Codex, "b", &stdio(), Existing::Refuse).unwrap_err();
    assert!(e.to_string().contains("dotted keys"), "{e}");
    // CRLF files stay CRLF around the entry.
    let crlf = "# c\r\n[mcp_servers.a]\r\ncommand = \"a\"\r\n";
    let added = add_server(crlf, Format::Codex, "b", &stdio(), Existing::Refuse).unwrap();
    assert_eq!(remove_server(&added, Format::Codex, "b").unwrap(), crlf);
    // Mixed newlines: written back exactly, or refused; never rewritten.
    let mixed = "# c\r\n[mcp_servers.a]\ncommand = \"a\"\n";
    match add_server(mixed, Format::Codex, "b", &stdio(), Existing::Refuse) {
        Ok(added) => assert_eq!(remove_server(&added, Format::Codex, "b").unwrap(), mixed),
        Err(e) => assert!(matches!(e, EditError::Unchecked { .. }), "{e}"),
    }
}

#[test]
fn opencode_entries_are_refused_with_what_to_do_and_removal_still_works() {
    let text = "{\n  \"mcp\": {\n    \"fs\": {\"type\": \"local\", \"command\": [\"npx\", \"fs\"]}\n  }\n}\n";
    let e = add_server(text, Format::OpenCode, "kit", &stdio(), Existing::Refuse).unwrap_err();
    assert!(
        matches!(
            e,
            EditError::NotWritable {
                format: Format::OpenCode,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("by hand"), "{e}");
    let removed = remove_server(text, Format::OpenCode, "fs").unwrap();
    assert!(server_names(&removed, Format::OpenCode).unwrap().is_empty());
}

#[test]
fn zed_takes_local_servers_only() {
    let text = "{\"context_servers\": {}}";
    let e = add_server(text, Format::Zed, "web", &remote(), Existing::Refuse).unwrap_err();
    assert!(e.to_string().contains("Zed"), "{e}");
}
