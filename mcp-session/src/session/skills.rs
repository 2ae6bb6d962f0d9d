//! The facade's skills extension (see `skills.rs`).

use std::sync::Arc;

use mcp_stack_protocol::skills::{SkillEntry, SkillsSettings};
use mcp_stack_protocol::types::Resource;

use super::Session;
use crate::error::SessionError;
use crate::skills::{self, LoadedSkill, VerifiedFile};

impl Session {
    /// What the server declared for the skills extension, or
    /// [`SessionError::NotSupported`] when it did not declare it.
    pub fn skills_settings(&self) -> Result<SkillsSettings, SessionError> {
        skills::settings(self.core())
    }

    /// The server's skills (`skills/list`): every page, cached until
    /// `notifications/resources/list_changed`, the TTL a 2026-07-28 server gives, or a
    /// file that fails verification. Only the listing is fetched: no skill
    /// file is read until the skill is loaded. A server that did not declare
    /// the extension is [`SessionError::NotSupported`], without a request.
    /// The listing may be partial: a skill it lacks can still be asked for
    /// by URI ([`get_skill`](Self::get_skill)).
    pub async fn list_skills(&self) -> Result<Arc<Vec<SkillEntry>>, SessionError> {
        self.inner.skills().list(self.core()).await
    }

    /// One skill's entry by the URI of its `SKILL.md` (`skills/get`),
    /// listed or not: how a skill named by a URI (in instructions, by the
    /// user) is loaded, and how one entry is refreshed after a mismatch.
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, SessionError> {
        self.inner.skills().get(self.core(), uri).await
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
        self.inner.skills().load(self.core(), entry).await
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
        self.inner
            .skills()
            .read_file(self.core(), skill, reference)
            .await
    }

    /// The direct children of a directory resource
    /// (`resources/directory/read`, every page): files with their metadata,
    /// subdirectories with MIME type `inode/directory`. Only for a server
    /// that declared `directoryRead` with the skills extension; otherwise
    /// [`SessionError::NotSupported`], without a request.
    pub async fn read_directory(&self, uri: &str) -> Result<Vec<Resource>, SessionError> {
        self.inner.skills().read_directory(self.core(), uri).await
    }
}
