#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! The skills extension through a `Session`, against a scripted peer: the
//! listing fetches no file, a skill's files are fetched only when it is
//! loaded or read, and each is verified (size, digest, frontmatter) with a
//! typed refusal; undeclared features fail without a request.

mod common;

use std::sync::{Arc, Mutex};

use mcp_stack_jsonrpc::Request;
use mcp_stack_session::protocol::skills::{SkillEntry, format_sha256};
use mcp_stack_session::{Session, SessionConfig, SessionError, SkillProblem};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use common::{Reply, init_result, params, start};

const SKILL: &str = "skill://pdf-processing/SKILL.md";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";
const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
const FORMS_MD: &str = "Supporting content.\n";

fn digest(text: &str) -> String {
    format_sha256(&Sha256::digest(text.as_bytes()).into())
}

fn config() -> SessionConfig {
    SessionConfig::new()
        .server_name("fake")
        .protocol(mcp_stack_session::ProtocolPin::Mode(
            mcp_stack_session::ProtocolMode::Handshake,
        ))
}

fn entry_json() -> Value {
    json!({
        "uri": SKILL,
        "frontmatter": {"name": "pdf-processing",
                        "description": "Extract, fill, and assemble PDF documents"},
        "resources": [
            {"uri": SKILL, "digest": digest(SKILL_MD), "size": SKILL_MD.len()},
            {"uri": FORMS, "digest": digest(FORMS_MD), "size": FORMS_MD.len()}
        ]
    })
}

/// What the server serves: the listing, and the bytes of each file (which
/// a test may tamper with).
struct Served {
    caps: Value,
    entry: Value,
    skill_md: String,
}

fn server(served: Served) -> common::Script {
    let served = Arc::new(Mutex::new(served));
    Arc::new(move |r: &Request| {
        let s = served.lock().unwrap();
        let p = params(r);
        match r.method.as_str() {
            "initialize" => Reply::Ok(init_result("2025-11-25", s.caps.clone())),
            "skills/list" => match p["cursor"].as_str() {
                None => Reply::Ok(json!({"skills": [s.entry.clone()], "nextCursor": "2"})),
                Some("2") => Reply::Ok(json!({"skills": [{
                    "uri": "skill://gen/SKILL.md",
                    "frontmatter": {"name": "gen", "description": "generated"},
                    "resources": "dynamic"
                }]})),
                Some(_) => Reply::Err(-32602, "bad cursor"),
            },
            "skills/get" => Reply::Ok(json!({"skill": s.entry.clone()})),
            "resources/read" => {
                let uri = p["uri"].as_str().unwrap_or_default().to_string();
                let text = if uri == FORMS {
                    FORMS_MD.to_string()
                } else {
                    s.skill_md.clone()
                };
                Reply::Ok(json!({"contents": [
                    {"uri": uri, "mimeType": "text/markdown", "text": text}
                ]}))
            }
            "resources/directory/read" => match p["cursor"].as_str() {
                None => Reply::Ok(json!({"resources": [
                    {"uri": "skill://pdf-processing/references", "name": "references",
                     "mimeType": "inode/directory"}
                ], "nextCursor": "b"})),
                Some(_) => Reply::Ok(json!({"resources": [
                    {"uri": SKILL, "name": "SKILL.md", "mimeType": "text/markdown"}
                ]})),
            },
            _ => Reply::Err(-32601, "method not found"),
        }
    })
}

fn skills_caps() -> Value {
    json!({"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}})
}

fn honest() -> Served {
    Served {
        caps: skills_caps(),
        entry: entry_json(),
        skill_md: SKILL_MD.into(),
    }
}

fn count(fake: &common::Fake, method: &str) -> usize {
    fake.methods().iter().filter(|m| *m == method).count()
}

fn reads(fake: &common::Fake) -> Vec<String> {
    fake.seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|m| match m {
            mcp_stack_jsonrpc::Message::Request(r) if r.method == "resources/read" => {
                params(r)["uri"].as_str().map(str::to_string)
            }
            _ => None,
        })
        .collect()
}

fn rejected(e: SessionError) -> (String, SkillProblem) {
    match e {
        SessionError::SkillRejected { file, problem, .. } => (file, problem),
        other => panic!("not a refusal: {other}"),
    }
}

#[tokio::test]
async fn connecting_and_listing_fetch_no_skill_file() {
    let (t, fake) = start(server(honest()));
    let s = Session::connect_shared(t, config()).await.unwrap();
    assert!(!s.skills_settings().unwrap().directory_read);
    assert_eq!(count(&fake, "skills/list"), 0, "nothing on connect");
    let skills = s.list_skills().await.unwrap();
    assert_eq!(skills.len(), 2, "both pages");
    assert_eq!(skills[0].name(), Some("pdf-processing"));
    assert_eq!(skills[0].files().len(), 2);
    assert_eq!(skills[1].name(), Some("gen"));
    // Cached.
    s.list_skills().await.unwrap();
    assert_eq!(count(&fake, "skills/list"), 2, "two pages, once");
    assert!(reads(&fake).is_empty(), "no file read: {:?}", reads(&fake));
    // A generated skill cannot be verified: refused, nothing fetched.
    let (_, problem) = rejected(s.load_skill(&skills[1]).await.unwrap_err());
    assert_eq!(problem, SkillProblem::NoDigests);
    assert!(reads(&fake).is_empty());
}

#[tokio::test]
async fn a_good_skill_loads_and_its_files_are_read_when_needed() {
    let (t, fake) = start(server(honest()));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let skills = s.list_skills().await.unwrap();
    let skill = s.load_skill(&skills[0]).await.unwrap();
    assert_eq!(reads(&fake), [SKILL], "SKILL.md only");
    assert_eq!(skill.text(), SKILL_MD);
    assert_eq!(skill.body(), "\nSkill body.\n");
    assert_eq!(skill.frontmatter()["name"], "pdf-processing");
    assert_eq!(skill.skill_md().mime_type.as_deref(), Some("text/markdown"));
    let forms = s
        .read_skill_file(&skill, "references/FORMS.md")
        .await
        .unwrap();
    assert_eq!(forms.text(), Some(FORMS_MD));
    assert_eq!(reads(&fake), [SKILL, FORMS]);
    // A file the entry does not list is refused before any request.
    let (file, problem) = rejected(
        s.read_skill_file(&skill, "scripts/extract.py")
            .await
            .unwrap_err(),
    );
    assert_eq!(file, "scripts/extract.py");
    assert_eq!(problem, SkillProblem::Unlisted);
    assert_eq!(reads(&fake).len(), 2);

    // skills/get: the entry by URI, the same shape.
    let got = s.get_skill(SKILL).await.unwrap();
    assert_eq!(got, skills[0]);
    let sent = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .find_map(|m| match m {
            mcp_stack_jsonrpc::Message::Request(r) if r.method == "skills/get" => Some(params(r)),
            _ => None,
        })
        .unwrap();
    assert_eq!(sent, json!({"uri": SKILL}));
}

/// Loads the listed skill from a server serving `skill_md` (and the entry
/// `entry`), expecting a refusal of SKILL.md; the supporting file is never
/// read, and the listing is fetched again afterwards.
async fn refused(entry: Value, skill_md: String) -> SkillProblem {
    let (t, fake) = start(server(Served {
        caps: skills_caps(),
        entry,
        skill_md,
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let skills = s.list_skills().await.unwrap();
    let (file, problem) = rejected(s.load_skill(&skills[0]).await.unwrap_err());
    assert_eq!(file, SKILL);
    assert_eq!(reads(&fake), [SKILL], "stopped at SKILL.md");
    // The listing may be stale: the next list asks again.
    s.list_skills().await.unwrap();
    assert_eq!(count(&fake, "skills/list"), 4);
    problem
}

#[tokio::test]
async fn a_digest_mismatch_is_refused() {
    let tampered = SKILL_MD.replace("Skill body.", "Evil body!!");
    let problem = refused(entry_json(), tampered.clone()).await;
    assert_eq!(
        problem,
        SkillProblem::DigestMismatch {
            expected: digest(SKILL_MD),
            actual: digest(&tampered)
        }
    );
}

#[tokio::test]
async fn a_size_mismatch_is_refused() {
    let problem = refused(entry_json(), format!("{SKILL_MD}extra bytes\n")).await;
    assert_eq!(
        problem,
        SkillProblem::SizeMismatch {
            expected: SKILL_MD.len() as u64,
            actual: SKILL_MD.len() as u64 + 12
        }
    );
}

#[tokio::test]
async fn a_frontmatter_mismatch_is_refused() {
    // Digest and size honest for the tampered file: only the frontmatter
    // comparison can catch it.
    let tampered = SKILL_MD.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: Exfiltrate credentials",
    );
    let mut entry = entry_json();
    entry["resources"][0]["digest"] = json!(digest(&tampered));
    entry["resources"][0]["size"] = json!(tampered.len());
    let problem = refused(entry, tampered).await;
    assert_eq!(
        problem,
        SkillProblem::FrontmatterMismatch(vec!["description".into()])
    );

    // A field the entry leaves out is a discrepancy too.
    let extra = SKILL_MD.replace("---\n\n", "license: MIT\n---\n\n");
    let mut entry = entry_json();
    entry["resources"][0]["digest"] = json!(digest(&extra));
    entry["resources"][0]["size"] = json!(extra.len());
    let problem = refused(entry, extra).await;
    assert_eq!(
        problem,
        SkillProblem::FrontmatterMismatch(vec!["license".into()])
    );

    // Frontmatter this client cannot read cannot be verified.
    let block = SKILL_MD.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: |\n  Extract, fill, and assemble PDF documents",
    );
    let mut entry = entry_json();
    entry["resources"][0]["digest"] = json!(digest(&block));
    entry["resources"][0]["size"] = json!(block.len());
    let problem = refused(entry, block).await;
    assert!(
        matches!(problem, SkillProblem::Frontmatter(_)),
        "{problem:?}"
    );
}

#[tokio::test]
async fn entries_that_cannot_be_verified_are_refused_without_a_request() {
    let (t, fake) = start(server(honest()));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let mut no_skill_md: SkillEntry = serde_json::from_value(entry_json()).unwrap();
    if let mcp_stack_session::protocol::skills::SkillResources::Files(files) =
        &mut no_skill_md.resources
    {
        files.remove(0);
    }
    let (_, problem) = rejected(s.load_skill(&no_skill_md).await.unwrap_err());
    assert_eq!(problem, SkillProblem::SkillMdNotListed);
    let mut bad_digest = entry_json();
    bad_digest["resources"][0]["digest"] = json!("md5:abc");
    let bad_digest: SkillEntry = serde_json::from_value(bad_digest).unwrap();
    let (_, problem) = rejected(s.load_skill(&bad_digest).await.unwrap_err());
    assert_eq!(problem, SkillProblem::MalformedDigest("md5:abc".into()));
    assert!(reads(&fake).is_empty());
}

#[tokio::test]
async fn without_the_extension_nothing_is_sent() {
    let (t, fake) = start(server(Served {
        caps: json!({"resources": {}}),
        ..honest()
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let entry: SkillEntry = serde_json::from_value(entry_json()).unwrap();
    assert!(matches!(
        s.skills_settings(),
        Err(SessionError::NotSupported(_))
    ));
    assert!(matches!(
        s.list_skills().await,
        Err(SessionError::NotSupported(_))
    ));
    assert!(matches!(
        s.get_skill(SKILL).await,
        Err(SessionError::NotSupported(_))
    ));
    assert!(matches!(
        s.load_skill(&entry).await,
        Err(SessionError::NotSupported(_))
    ));
    assert!(matches!(
        s.read_directory("skill://pdf-processing").await,
        Err(SessionError::NotSupported(_))
    ));
    let sent = fake.methods();
    assert!(
        sent.iter()
            .all(|m| m == "initialize" || m == "notifications/initialized"),
        "{sent:?}"
    );
}

#[tokio::test]
async fn directories_are_read_only_where_declared() {
    // Declared without directoryRead: refused locally.
    let (t, fake) = start(server(honest()));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let e = s
        .read_directory("skill://pdf-processing")
        .await
        .unwrap_err();
    assert!(matches!(e, SessionError::NotSupported(_)), "{e}");
    assert_eq!(count(&fake, "resources/directory/read"), 0);

    let (t, fake) = start(server(Served {
        caps: json!({"resources": {},
                     "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}}}),
        ..honest()
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let children = s.read_directory("skill://pdf-processing").await.unwrap();
    let uris: Vec<&str> = children.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["skill://pdf-processing/references", SKILL]);
    assert!(mcp_stack_session::protocol::skills::is_directory(
        &children[0]
    ));
    let sent: Vec<Value> = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|m| match m {
            mcp_stack_jsonrpc::Message::Request(r) if r.method == "resources/directory/read" => {
                Some(params(r))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        sent,
        [
            json!({"uri": "skill://pdf-processing"}),
            json!({"uri": "skill://pdf-processing", "cursor": "b"})
        ]
    );
}
