//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640): list a
//! server's skills, load one, read its files, each file verified.
//!
//! Nothing is fetched ahead of need. [`Session::list_skills`] asks for the
//! listing only (the entries carry everything a registry or an approval
//! needs); [`Session::load_skill`] fetches the skill's `SKILL.md`, and
//! [`Session::read_skill_file`] one supporting file, when the caller asks.
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
//! [`list_skills`](Session::list_skills) fetches it again.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_protocol::methods;
use mcp_protocol::skills::{
    DirectoryReadResult, GetSkillParams, GetSkillResult, ListSkillsResult, SKILL_MD, SkillEntry,
    SkillFile, SkillResources, SkillsSettings, frontmatter, parse_sha256,
};
use mcp_protocol::types::{Extra, Resource, ResourceContents};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::features::Page;
use crate::{Session, SessionError};

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

/// Why a skill's file was refused. Nothing of a refused file is returned.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SkillProblem {
    /// The entry lists no files with digests (`"dynamic"`), so nothing of
    /// it can be verified. Nothing was fetched.
    NoDigests,
    /// The entry's file list has no entry for its own `SKILL.md`. Nothing
    /// was fetched.
    SkillMdNotListed,
    /// The file is not in the entry's file list (or its path leaves the
    /// skill). Nothing was fetched.
    Unlisted,
    /// The entry's digest is not `sha256:` and 64 lowercase hex digits.
    /// Nothing was fetched.
    MalformedDigest(String),
    /// The server's answer has no single content entry for the file, or its
    /// bytes could not be decoded.
    NoContent(String),
    /// The content's length is not the listed size.
    SizeMismatch {
        /// The listed size, in bytes.
        expected: u64,
        /// The length read.
        actual: u64,
    },
    /// The content's SHA-256 is not the listed digest.
    DigestMismatch {
        /// The listed digest.
        expected: String,
        /// The digest of what was read.
        actual: String,
    },
    /// `SKILL.md` is not UTF-8 text.
    NotText,
    /// `SKILL.md`'s frontmatter could not be read.
    Frontmatter(frontmatter::FrontmatterError),
    /// `SKILL.md`'s frontmatter differs from the entry's in these fields.
    FrontmatterMismatch(Vec<String>),
}

impl fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillProblem::NoDigests => write!(
                f,
                "the entry lists no file digests (\"dynamic\"), so its content cannot be verified"
            ),
            SkillProblem::SkillMdNotListed => {
                write!(f, "the entry's resources do not list its own {SKILL_MD}")
            }
            SkillProblem::Unlisted => write!(f, "the file is not listed in the skill's resources"),
            SkillProblem::MalformedDigest(d) => {
                write!(
                    f,
                    "the listed digest {d:?} is not sha256:<64 lowercase hex>"
                )
            }
            SkillProblem::NoContent(why) => write!(f, "no content to verify: {why}"),
            SkillProblem::SizeMismatch { expected, actual } => {
                write!(f, "{actual} bytes read, {expected} listed")
            }
            SkillProblem::DigestMismatch { expected, actual } => {
                write!(f, "digest {actual}, {expected} listed")
            }
            SkillProblem::NotText => write!(f, "{SKILL_MD} is not UTF-8 text"),
            SkillProblem::Frontmatter(e) => write!(f, "{e}"),
            SkillProblem::FrontmatterMismatch(fields) => write!(
                f,
                "the frontmatter differs from the listed entry's in {}",
                fields.join(", ")
            ),
        }
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
/// [`Session::read_skill_file`], which holds them to this entry.
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

impl Session {
    /// What the server declared for the skills extension, or
    /// [`SessionError::NotSupported`] when it did not declare it.
    pub fn skills_settings(&self) -> Result<SkillsSettings, SessionError> {
        SkillsSettings::of(&self.inner.init.capabilities).ok_or(SessionError::NotSupported(
            "skills (extension io.modelcontextprotocol/skills)",
        ))
    }

    /// The server's skills (`skills/list`): every page, cached until
    /// `notifications/resources/list_changed`, a modern server's TTL, or a
    /// file that fails verification. Only the listing is fetched: no skill
    /// file is read until the skill is loaded. A server that did not declare
    /// the extension is [`SessionError::NotSupported`], without a request.
    /// The listing may be partial: a skill it lacks can still be asked for
    /// by URI ([`get_skill`](Self::get_skill)).
    pub async fn list_skills(&self) -> Result<Arc<Vec<SkillEntry>>, SessionError> {
        self.skills_settings()?;
        self.cached_list::<ListSkillsResult>(
            methods::SKILLS_LIST,
            &self.inner.features().skills,
            &self.inner.shared.stale.skills,
        )
        .await
    }

    /// One skill's entry by the URI of its `SKILL.md` (`skills/get`),
    /// listed or not: how a skill named by a URI (in instructions, by the
    /// user) is loaded, and how one entry is refreshed after a mismatch.
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, SessionError> {
        self.skills_settings()?;
        let timeout = self.inner.config.request_timeout;
        let params = GetSkillParams {
            uri: uri.to_owned(),
        };
        let result: GetSkillResult = self
            .inner
            .request(methods::SKILLS_GET, &params, timeout, &self.inner.context())
            .await?;
        Ok(result.skill)
    }

    /// Loads a skill: fetches its `SKILL.md` (`resources/read`), checks its
    /// size and digest against the entry's listing of it, reads its
    /// frontmatter and compares it with the entry's, field by field. Any
    /// failure is [`SessionError::SkillRejected`] and nothing is returned;
    /// an entry without digests, or that does not list its `SKILL.md`, is
    /// refused before any request. The skill's other files are not fetched
    /// here: [`read_skill_file`](Self::read_skill_file) reads each when it
    /// is needed.
    pub async fn load_skill(&self, entry: &SkillEntry) -> Result<LoadedSkill, SessionError> {
        self.skills_settings()?;
        let reject = |problem| self.reject(entry, &entry.uri, problem);
        if let SkillResources::Dynamic = entry.resources {
            return Err(reject(SkillProblem::NoDigests));
        }
        let Some(listed) = entry.file(&entry.uri) else {
            return Err(reject(SkillProblem::SkillMdNotListed));
        };
        let skill_md = self.fetch_verified(entry, listed).await?;
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

    /// Reads one file of a loaded skill, named by URI or by its path from
    /// the skill's root (`references/FORMS.md`), and verifies it against the
    /// entry the skill was loaded from. A file the entry does not list is
    /// refused without a request.
    pub async fn read_skill_file(
        &self,
        skill: &LoadedSkill,
        reference: &str,
    ) -> Result<VerifiedFile, SessionError> {
        let Some(listed) = skill.file(reference) else {
            return Err(self.reject(&skill.entry, reference, SkillProblem::Unlisted));
        };
        self.fetch_verified(&skill.entry, listed).await
    }

    /// The direct children of a directory resource
    /// (`resources/directory/read`, every page): files with their metadata,
    /// subdirectories with MIME type `inode/directory`. Only for a server
    /// that declared `directoryRead` with the skills extension; otherwise
    /// [`SessionError::NotSupported`], without a request.
    pub async fn read_directory(&self, uri: &str) -> Result<Vec<Resource>, SessionError> {
        let settings = self.skills_settings()?;
        self.require(
            settings.directory_read,
            "resources/directory/read (skills extension setting directoryRead)",
        )?;
        let mut base = Map::new();
        base.insert("uri".into(), json!(uri));
        let (children, _) = self
            .pages_with::<DirectoryReadResult>(methods::RESOURCES_DIRECTORY_READ, base)
            .await?;
        Ok(children)
    }

    /// Reads a listed file and checks its size and digest; the content of a
    /// file that fails is dropped.
    async fn fetch_verified(
        &self,
        entry: &SkillEntry,
        listed: &SkillFile,
    ) -> Result<VerifiedFile, SessionError> {
        let reject = |problem| self.reject(entry, &listed.uri, problem);
        let Some(expected) = parse_sha256(&listed.digest) else {
            return Err(reject(SkillProblem::MalformedDigest(listed.digest.clone())));
        };
        let read = self.read_resource(&listed.uri).await?;
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
                actual: mcp_protocol::skills::format_sha256(&actual),
            }));
        }
        Ok(VerifiedFile {
            uri: listed.uri.clone(),
            mime_type,
            bytes,
        })
    }

    /// The error for a refused file; the cached listing is marked stale.
    fn reject(&self, entry: &SkillEntry, file: &str, problem: SkillProblem) -> SessionError {
        self.inner
            .shared
            .stale
            .skills
            .store(true, Ordering::Release);
        tracing::warn!(
            server = %self.inner.config.server_name,
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
