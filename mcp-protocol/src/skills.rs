//! The skills extension, `io.modelcontextprotocol/skills` (SEP-2640):
//! [Agent Skills](https://agentskills.io/specification) served as MCP
//! resources.
//!
//! A skill is a directory of files, at least a `SKILL.md` that begins with a
//! YAML frontmatter block (`name`, `description`, …). Each file is a
//! resource, conventionally `skill://<skill-path>/<file-path>`, read with
//! `resources/read`. A server declares the extension under
//! `capabilities.extensions` ([`SkillsSettings`]) and then answers:
//!
//! * `skills/list` ([`ListSkillsResult`], paged like `resources/list`): one
//!   [`SkillEntry`] per skill, with the frontmatter copied as JSON and the
//!   skill's complete file list, each file with its SHA-256 `digest` and
//!   `size` ([`SkillFile`]), or `"dynamic"` for generated skills that
//!   publish none;
//! * `skills/get` ([`GetSkillParams`], [`GetSkillResult`]): one entry by its
//!   `SKILL.md` URI;
//! * `resources/directory/read` ([`DirectoryReadParams`],
//!   [`DirectoryReadResult`]), only when it declares `directoryRead: true`:
//!   the direct children of a directory resource (`inode/directory`).
//!
//! A host fetches a skill's files only when it loads the skill (`SKILL.md`)
//! or reads one of its files, never on connection, listing or approval;
//! checks each file against its entry's digest and size; compares the
//! `SKILL.md` frontmatter, field by field, with the entry's
//! ([`frontmatter`]); and uses nothing that fails.
//!
//! ```
//! use mcp_stack_protocol::skills::{ListSkillsResult, SkillResources};
//!
//! let page: ListSkillsResult = serde_json::from_value(serde_json::json!({
//!     "skills": [{
//!         "uri": "skill://pdf-processing/SKILL.md",
//!         "frontmatter": {"name": "pdf-processing", "description": "PDF work"},
//!         "resources": [{"uri": "skill://pdf-processing/SKILL.md",
//!                        "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
//!                        "size": 120}]
//!     }]
//! })).unwrap();
//! let skill = &page.skills[0];
//! assert_eq!(skill.name(), Some("pdf-processing"));
//! assert_eq!(skill.root(), Some("skill://pdf-processing"));
//! assert!(matches!(skill.resources, SkillResources::Files(ref f) if f[0].size == Some(120)));
//! ```

use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::types::{Extra, Resource, ServerCapabilities};

pub mod frontmatter;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";
/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// `resources` of a generated skill that publishes no digests.
pub const DYNAMIC: &str = "dynamic";
/// The prefix of a digest: SHA-256, as `sha256:` and 64 lowercase hex digits.
pub const SHA256_PREFIX: &str = "sha256:";

/// What a server declared for the extension: present when it declared it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillsSettings {
    /// The server answers `resources/directory/read` (`directoryRead: true`).
    pub directory_read: bool,
}

impl SkillsSettings {
    /// The settings a server declared, `None` when it did not declare the
    /// extension. The settings sit inline under the identifier (an empty
    /// object is support with no optional feature); a value that is not an
    /// object is not a declaration.
    pub fn of(capabilities: &ServerCapabilities) -> Option<Self> {
        let settings = capabilities.extension(EXTENSION_ID)?.as_object()?;
        Some(SkillsSettings {
            directory_read: settings.get("directoryRead") == Some(&Value::Bool(true)),
        })
    }
}

/// One skill, as `skills/list` and `skills/get` describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter, as JSON (at least `name` and `description`).
    #[serde(default)]
    pub frontmatter: Map<String, Value>,
    /// The skill's files with their digests, or none for a generated skill.
    #[serde(default)]
    pub resources: SkillResources,
    /// Other fields (`_meta`).
    #[serde(flatten)]
    pub extra: Extra,
}

impl SkillEntry {
    /// The frontmatter's `name`.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The frontmatter's `description`.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The skill's root directory: its URI without `/SKILL.md`, when it ends so.
    pub fn root(&self) -> Option<&str> {
        self.uri
            .strip_suffix(SKILL_MD)
            .and_then(|r| r.strip_suffix('/'))
    }

    /// The listed files (none for a generated skill).
    pub fn files(&self) -> &[SkillFile] {
        match &self.resources {
            SkillResources::Files(files) => files,
            SkillResources::Dynamic => &[],
        }
    }

    /// The listed file with this URI.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.files().iter().find(|f| f.uri == uri)
    }
}

/// A skill's `resources`: its complete file list, or `"dynamic"`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included, each once.
    Files(Vec<SkillFile>),
    /// Generated content without digests (`"dynamic"`; an absent field, as
    /// earlier drafts had it, reads the same). It cannot be verified.
    #[default]
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(s),
            SkillResources::Dynamic => s.serialize_str(DYNAMIC),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Array(items) => Vec::<SkillFile>::deserialize(Value::Array(items))
                .map(SkillResources::Files)
                .map_err(D::Error::custom),
            Value::String(s) if s == DYNAMIC => Ok(SkillResources::Dynamic),
            Value::Null => Ok(SkillResources::Dynamic),
            other => Err(D::Error::custom(format!(
                "skill resources must be an array or \"{DYNAMIC}\", not {other}"
            ))),
        }
    }
}

/// One file of a skill: where it is, and what its bytes must be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and the 64 lowercase hex digits of the SHA-256 of its raw
    /// bytes ([`parse_sha256`]).
    pub digest: String,
    /// Its length in bytes (required by the extension; absent in early drafts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SkillFile {
    /// A file entry from its URI and content (the digest and size computed
    /// by the caller: this crate has no hash function).
    pub fn new(uri: impl Into<String>, sha256: &[u8; 32], size: u64) -> Self {
        SkillFile {
            uri: uri.into(),
            digest: format_sha256(sha256),
            size: Some(size),
            extra: Extra::new(),
        }
    }
}

/// The 32 bytes of a `sha256:{64 lowercase hex}` digest; `None` for
/// anything else (another algorithm, upper case, a wrong length).
pub fn parse_sha256(digest: &str) -> Option<[u8; 32]> {
    let hex = digest.strip_prefix(SHA256_PREFIX)?.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let [hi, lo] = pair else { return None };
        *byte = (nibble(*hi)? << 4) | nibble(*lo)?;
    }
    Some(out)
}

/// A SHA-256 as the extension writes it: `sha256:` and 64 lowercase hex digits.
pub fn format_sha256(hash: &[u8; 32]) -> String {
    let mut out = String::with_capacity(SHA256_PREFIX.len() + 64);
    out.push_str(SHA256_PREFIX);
    for b in hash {
        for nibble in [b >> 4, b & 0xf] {
            out.extend(char::from_digit(u32::from(nibble), 16));
        }
    }
    out
}

/// `skills/list` result: one page of skills.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// This page's skills (an entry is never split across pages).
    #[serde(default)]
    pub skills: Vec<SkillEntry>,
    /// Where the next page starts; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Other fields (on 2026-07-28, cache hints).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `skills/get` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetSkillParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
}

/// `skills/get` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetSkillResult {
    /// The skill's entry, as `skills/list` would give it.
    pub skill: SkillEntry,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `resources/directory/read` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectoryReadParams {
    /// The directory's URI (no trailing slash).
    pub uri: String,
    /// Where to continue, from the previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `resources/directory/read` result: one page of a directory's direct children.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryReadResult {
    /// Files with their metadata; subdirectories with `mimeType`
    /// `inode/directory`.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// Where the next page starts; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A resource of a directory listing is itself a directory.
pub fn is_directory(resource: &Resource) -> bool {
    resource.mime_type.as_deref() == Some(DIRECTORY_MIME_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const D: &str = "sha256:a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";

    #[test]
    fn an_entry_reads_and_writes_its_wire_form() {
        let wire = json!({
            "uri": "skill://acme/billing/refunds/SKILL.md",
            "frontmatter": {"name": "refunds", "description": "Refunds", "license": "MIT",
                            "metadata": {"version": "2.1.0"}},
            "resources": [
                {"uri": "skill://acme/billing/refunds/SKILL.md", "digest": D, "size": 42},
                {"uri": "skill://acme/billing/refunds/examples/email.md", "digest": D, "size": 7,
                 "x-extra": true}
            ],
            "_meta": {"io.modelcontextprotocol.skills/origin": "x"}
        });
        let entry: SkillEntry = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(entry.name(), Some("refunds"));
        assert_eq!(entry.description(), Some("Refunds"));
        assert_eq!(entry.root(), Some("skill://acme/billing/refunds"));
        assert_eq!(entry.files().len(), 2);
        let email = entry
            .file("skill://acme/billing/refunds/examples/email.md")
            .unwrap();
        assert_eq!(email.size, Some(7));
        assert_eq!(email.extra["x-extra"], json!(true));
        assert!(entry.extra.contains_key("_meta"));
        assert_eq!(serde_json::to_value(&entry).unwrap(), wire);
    }

    #[test]
    fn dynamic_skills_carry_no_files() {
        let e: SkillEntry = serde_json::from_value(json!({
            "uri": "skill://gen/SKILL.md", "frontmatter": {"name": "gen"}, "resources": "dynamic"
        }))
        .unwrap();
        assert_eq!(e.resources, SkillResources::Dynamic);
        assert!(e.files().is_empty());
        assert_eq!(serde_json::to_value(&e).unwrap()["resources"], "dynamic");
        // Absent: an early draft's way of saying the same.
        let e: SkillEntry = serde_json::from_value(json!({"uri": "skill://gen/SKILL.md"})).unwrap();
        assert_eq!(e.resources, SkillResources::Dynamic);
        assert_eq!(e.root(), Some("skill://gen"));
        // Anything else is not an entry.
        for bad in [json!("static"), json!(3), json!({"uri": "x"})] {
            let r = serde_json::from_value::<SkillEntry>(
                json!({"uri": "skill://a/SKILL.md", "resources": bad}),
            );
            assert!(r.is_err(), "{r:?}");
        }
    }

    #[test]
    fn list_get_and_directory_read_results() {
        let page: ListSkillsResult = serde_json::from_value(json!({
            "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
            "skills": [{"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a"},
                        "resources": []}],
            "nextCursor": "2"
        }))
        .unwrap();
        assert_eq!(page.skills.len(), 1);
        assert_eq!(page.next_cursor.as_deref(), Some("2"));
        assert_eq!(page.extra["ttlMs"], json!(0));

        let got: GetSkillResult = serde_json::from_value(json!({
            "skill": {"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a"}, "resources": []}
        }))
        .unwrap();
        assert_eq!(got.skill.uri, "skill://a/SKILL.md");
        assert_eq!(
            serde_json::to_value(GetSkillParams {
                uri: "skill://a/SKILL.md".into()
            })
            .unwrap(),
            json!({"uri": "skill://a/SKILL.md"})
        );

        let params = DirectoryReadParams {
            uri: "skill://a/templates".into(),
            cursor: None,
        };
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({"uri": "skill://a/templates"})
        );
        let dir: DirectoryReadResult = serde_json::from_value(json!({"resources": [
            {"uri": "skill://a/templates/x.md", "name": "x.md", "mimeType": "text/markdown"},
            {"uri": "skill://a/templates/eu", "name": "eu", "mimeType": "inode/directory"}
        ]}))
        .unwrap();
        assert!(!is_directory(&dir.resources[0]));
        assert!(is_directory(&dir.resources[1]));
        assert_eq!(dir.next_cursor, None);
    }

    #[test]
    fn digests_are_strict() {
        let bytes = parse_sha256(D).unwrap();
        assert_eq!(format_sha256(&bytes), D);
        assert_eq!(bytes[0], 0xa1);
        assert!(parse_sha256(&D.to_uppercase()).is_none());
        assert!(parse_sha256(&D.replace("sha256:", "sha512:")).is_none());
        assert!(parse_sha256(&D[..D.len() - 1]).is_none());
        assert!(parse_sha256(&format!("{D}0")).is_none());
        assert!(parse_sha256(&D.replace('a', "g")).is_none());
        let f = SkillFile::new("skill://a/SKILL.md", &[0xff; 32], 3);
        assert_eq!(f.digest, format!("sha256:{}", "ff".repeat(32)));
    }

    #[test]
    fn the_declaration_is_read_from_the_capabilities() {
        let caps: ServerCapabilities = serde_json::from_value(json!({
            "resources": {}, "extensions": {EXTENSION_ID: {}}
        }))
        .unwrap();
        assert_eq!(
            SkillsSettings::of(&caps),
            Some(SkillsSettings {
                directory_read: false
            })
        );
        let caps: ServerCapabilities = serde_json::from_value(json!({
            "extensions": {EXTENSION_ID: {"directoryRead": true}}
        }))
        .unwrap();
        assert!(SkillsSettings::of(&caps).unwrap().directory_read);
        for caps in [
            json!({}),
            json!({"extensions": {}}),
            json!({"extensions": {EXTENSION_ID: true}}),
            json!({"extensions": {"io.modelcontextprotocol/other": {}}}),
        ] {
            let caps: ServerCapabilities = serde_json::from_value(caps).unwrap();
            assert_eq!(SkillsSettings::of(&caps), None);
        }
    }
}
