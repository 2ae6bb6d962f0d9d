//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640): list a
//! server's skills, load one, read its files, each file verified.
//!
//! Nothing is fetched ahead of need. [`Session::list_skills`](crate::Session::list_skills) asks for the
//! listing only (the entries carry everything a registry or an approval
//! needs); [`Session::load_skill`](crate::Session::load_skill) fetches the skill's `SKILL.md`, and
//! [`Session::read_skill_file`](crate::Session::read_skill_file) one supporting file, when the caller asks.
//! Connecting fetches nothing of a skill, and neither does approving one:
//! approval is the caller's, and binds to the entry.
//!
//! Every file read is checked against the entry it was listed in: its size,
//! its SHA-256 digest, and for `SKILL.md` its frontmatter, field by field,
//! against the entry's. A file that fails is
//! [`SessionError::SkillRejected`] and its content is dropped; so is a file
//! the entry does not list (refused before any request), and a skill whose
//! entry lists no digests (`"dynamic"`): this client loads only what it can
//! verify. A failure also marks the cached listing stale (the usual cause is
//! a skill updated since it was listed), so the next
//! [`list_skills`](crate::Session::list_skills) fetches it again.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_stack_protocol::request::{ResourcesDirectoryRead, SkillsGet, SkillsList};
use mcp_stack_protocol::skills::{
    DirectoryReadParams, DirectoryReadResult, GetSkillParams, ListSkillsResult, SkillEntry,
    SkillFile, SkillResources, SkillsSettings, frontmatter, parse_sha256,
};
use mcp_stack_protocol::types::{Extra, Resource, ResourceContents};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::conn::{Inner, require};
use crate::error::SessionError;
use crate::features::read_resource;
use crate::paging::{ListCache, Page};
use crate::skill_problem::SkillProblem;

impl Page for ListSkillsResult {
    type Item = SkillEntry;
    fn into_parts(self) -> (Vec<SkillEntry>, Option<String>, Extra) {
        (self.skills, self.next_cursor, self.extra)
    }
}

impl Page for DirectoryReadResult {
    type Item = Resource;
    fn into_parts(self) -> (Vec<Resource>, Option<String>, Extra) {
        (self.resources, self.next_cursor, self.extra)
    }
}

/// A file of a skill, read and verified against its entry.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedFile {
    /// Its URI.
    pub uri: String,
    /// Its MIME type, as the server gave it.
    pub mime_type: Option<String>,
    /// Its bytes: their length and SHA-256 are the listed ones.
    pub bytes: Vec<u8>,
}

impl VerifiedFile {
    /// The bytes as text, when they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// A loaded skill: the entry it was loaded from and its verified `SKILL.md`.
/// Its other files are read, one at a time, with
/// [`Session::read_skill_file`](crate::Session::read_skill_file), which holds them to this entry.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    entry: SkillEntry,
    skill_md: VerifiedFile,
    text: String,
    body_start: usize,
    frontmatter: Map<String, Value>,
}

impl LoadedSkill {
    /// The entry the skill was loaded from (and its files are held to).
    pub fn entry(&self) -> &SkillEntry {
        &self.entry
    }

    /// The verified `SKILL.md`.
    pub fn skill_md(&self) -> &VerifiedFile {
        &self.skill_md
    }

    /// `SKILL.md`, whole.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// `SKILL.md` after its frontmatter: the instructions.
    pub fn body(&self) -> &str {
        self.text.get(self.body_start..).unwrap_or_default()
    }

    /// The frontmatter, read from the file (equal to the entry's).
    pub fn frontmatter(&self) -> &Map<String, Value> {
        &self.frontmatter
    }

    /// The listed file a reference names: a URI, or a path relative to the
    /// skill's root (`references/FORMS.md`). `None` when the entry does not
    /// list it, or the path leaves the skill (`..`, an absolute path).
    pub fn file(&self, reference: &str) -> Option<&SkillFile> {
        if reference.contains("://") {
            return self.entry.file(reference);
        }
        let clean = !reference.is_empty()
            && !reference.starts_with('/')
            && reference
                .split('/')
                .all(|s| !s.is_empty() && s != "." && s != "..");
        if !clean {
            return None;
        }
        let root = self.entry.root()?;
        self.entry.file(&format!("{root}/{reference}"))
    }
}

/// What the server declared for the skills extension, or
/// [`SessionError::NotSupported`] when it did not declare it.
pub(crate) fn settings(core: &Inner) -> Result<SkillsSettings, SessionError> {
    SkillsSettings::of(&core.init.capabilities).ok_or(SessionError::NotSupported(
        "skills (extension io.modelcontextprotocol/skills)",
    ))
}

/// The skills feature of a session: the cached listing, made on first use.
#[derive(Debug, Default)]
pub(crate) struct Skills {
    listing: ListCache<SkillEntry>,
}

impl Skills {
    /// Behind [`Session::list_skills`](crate::Session::list_skills).
    pub(crate) async fn list(&self, core: &Inner) -> Result<Arc<Vec<SkillEntry>>, SessionError> {
        settings(core)?;
        core.cached_list::<SkillsList>(&self.listing, &core.shared.stale.skills)
            .await
    }

    /// Behind [`Session::get_skill`](crate::Session::get_skill).
    pub(crate) async fn get(&self, core: &Inner, uri: &str) -> Result<SkillEntry, SessionError> {
        settings(core)?;
        let timeout = core.config.request_timeout;
        let params = GetSkillParams {
            uri: uri.to_owned(),
        };
        let result = core
            .send::<SkillsGet>(&params, timeout, &core.context())
            .await?;
        Ok(result.skill)
    }

    /// Behind [`Session::load_skill`](crate::Session::load_skill).
    pub(crate) async fn load(
        &self,
        core: &Inner,
        entry: &SkillEntry,
    ) -> Result<LoadedSkill, SessionError> {
        settings(core)?;
        let reject = |problem| reject(core, entry, &entry.uri, problem);
        if let SkillResources::Dynamic = entry.resources {
            return Err(reject(SkillProblem::NoDigests));
        }
        let Some(listed) = entry.file(&entry.uri) else {
            return Err(reject(SkillProblem::SkillMdNotListed));
        };
        let skill_md = fetch_verified(core, entry, listed).await?;
        let text = match std::str::from_utf8(&skill_md.bytes) {
            Ok(t) => t.to_owned(),
            Err(_) => return Err(reject(SkillProblem::NotText)),
        };
        let (fields, body) = match frontmatter::parse(&text) {
            Ok(parsed) => parsed,
            Err(e) => return Err(reject(SkillProblem::Frontmatter(e))),
        };
        let differ = frontmatter::differences(&fields, &entry.frontmatter);
        if !differ.is_empty() {
            return Err(reject(SkillProblem::FrontmatterMismatch(differ)));
        }
        let body_start = text.len() - body.len();
        Ok(LoadedSkill {
            entry: entry.clone(),
            skill_md,
            text,
            body_start,
            frontmatter: fields,
        })
    }

    /// Behind [`Session::read_skill_file`](crate::Session::read_skill_file).
    pub(crate) async fn read_file(
        &self,
        core: &Inner,
        skill: &LoadedSkill,
        reference: &str,
    ) -> Result<VerifiedFile, SessionError> {
        let Some(listed) = skill.file(reference) else {
            return Err(reject(
                core,
                &skill.entry,
                reference,
                SkillProblem::Unlisted,
            ));
        };
        fetch_verified(core, &skill.entry, listed).await
    }

    /// Behind [`Session::read_directory`](crate::Session::read_directory).
    pub(crate) async fn read_directory(
        &self,
        core: &Inner,
        uri: &str,
    ) -> Result<Vec<Resource>, SessionError> {
        let settings = settings(core)?;
        require(
            settings.directory_read,
            "resources/directory/read (skills extension setting directoryRead)",
        )?;
        let base = DirectoryReadParams {
            uri: uri.to_owned(),
            cursor: None,
        };
        let (children, _) = core.pages_with::<ResourcesDirectoryRead>(base).await?;
        Ok(children)
    }
}

/// Reads a listed file and checks its size and digest; the content of a
/// file that fails is dropped.
async fn fetch_verified(
    core: &Inner,
    entry: &SkillEntry,
    listed: &SkillFile,
) -> Result<VerifiedFile, SessionError> {
    let reject = |problem| reject(core, entry, &listed.uri, problem);
    let Some(expected) = parse_sha256(&listed.digest) else {
        return Err(reject(SkillProblem::MalformedDigest(listed.digest.clone())));
    };
    let read = read_resource(core, &listed.uri).await?;
    let mut matching = read
        .contents
        .into_iter()
        .filter(|c| c.uri() == Some(listed.uri.as_str()));
    let (Some(content), None) = (matching.next(), matching.next()) else {
        return Err(reject(SkillProblem::NoContent(format!(
            "the answer does not hold exactly one content entry for {}",
            listed.uri
        ))));
    };
    let mime_type = content.mime_type().map(str::to_owned);
    let bytes = match content {
        ResourceContents::Text(t) => t.text.into_bytes(),
        ResourceContents::Blob(b) => match b.bytes() {
            Ok(bytes) => bytes,
            Err(e) => return Err(reject(SkillProblem::NoContent(format!("bad base64: {e}")))),
        },
        _ => {
            return Err(reject(SkillProblem::NoContent(
                "the content entry is neither text nor blob".into(),
            )));
        }
    };
    let actual_size = bytes.len() as u64;
    if let Some(size) = listed.size
        && size != actual_size
    {
        return Err(reject(SkillProblem::SizeMismatch {
            expected: size,
            actual: actual_size,
        }));
    }
    let actual: [u8; 32] = Sha256::digest(&bytes).into();
    if actual != expected {
        return Err(reject(SkillProblem::DigestMismatch {
            expected: listed.digest.clone(),
            actual: mcp_stack_protocol::skills::format_sha256(&actual),
        }));
    }
    Ok(VerifiedFile {
        uri: listed.uri.clone(),
        mime_type,
        bytes,
    })
}

/// The error for a refused file; the cached listing is marked stale.
fn reject(core: &Inner, entry: &SkillEntry, file: &str, problem: SkillProblem) -> SessionError {
    core.shared.stale.skills.store(true, Ordering::Release);
    tracing::warn!(
        server = %core.config.server_name,
        skill = %entry.uri,
        file,
        "skill content refused: {problem}"
    );
    SessionError::SkillRejected {
        skill: entry.uri.clone(),
        file: file.to_owned(),
        problem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(files: &[&str]) -> LoadedSkill {
        let resources = files
            .iter()
            .map(|f| SkillFile::new(format!("skill://acme/pdf/{f}"), &[0; 32], 1))
            .collect();
        LoadedSkill {
            entry: SkillEntry {
                uri: "skill://acme/pdf/SKILL.md".into(),
                frontmatter: Map::new(),
                resources: SkillResources::Files(resources),
                extra: Extra::new(),
            },
            skill_md: VerifiedFile {
                uri: "skill://acme/pdf/SKILL.md".into(),
                mime_type: None,
                bytes: Vec::new(),
            },
            text: "---\n---\nbody".into(),
            body_start: 8,
            frontmatter: Map::new(),
        }
    }

    #[test]
    fn references_resolve_only_to_listed_files_inside_the_skill() {
        let s = loaded(&["SKILL.md", "references/FORMS.md", "a.md"]);
        assert_eq!(s.body(), "body");
        let uri = |r: &str| s.file(r).map(|f| f.uri.clone());
        assert_eq!(
            uri("references/FORMS.md").as_deref(),
            Some("skill://acme/pdf/references/FORMS.md")
        );
        assert_eq!(
            uri("skill://acme/pdf/a.md").as_deref(),
            Some("skill://acme/pdf/a.md")
        );
        for bad in [
            "references/OTHER.md",
            "../pdf/a.md",
            "./a.md",
            "/a.md",
            "references//FORMS.md",
            "",
            "skill://acme/other/a.md",
        ] {
            assert_eq!(uri(bad), None, "{bad}");
        }
    }

    #[test]
    fn problems_say_what_failed() {
        let p = SkillProblem::SizeMismatch {
            expected: 3,
            actual: 5,
        };
        assert_eq!(p.to_string(), "5 bytes read, 3 listed");
        let p = SkillProblem::FrontmatterMismatch(vec!["description".into()]);
        assert!(p.to_string().ends_with("in description"));
    }
}
