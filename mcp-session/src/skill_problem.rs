//! [`SkillProblem`]: why a skill's file was refused. A leaf, so that
//! `error.rs` names it without depending on the skills feature.

use std::fmt;

use mcp_stack_protocol::skills::{SKILL_MD, frontmatter};

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
