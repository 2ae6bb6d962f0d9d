//! What validation found: problems, each with its path and severity.

use std::fmt;

/// How bad a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Severity {
    /// The config cannot be used.
    Error,
    /// The config works, but something in it is ignored (an error in strict mode).
    Warning,
}

/// One problem in a config, at a path like `mcpServers.remote-tools.headers.Authorization`.
///
/// Messages never quote env or header values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Problem {
    /// Error or warning.
    pub severity: Severity,
    /// Where: dot-separated keys, `[i]` for list items; empty for the whole file.
    pub path: String,
    /// What is wrong and what to do, in plain words.
    pub message: String,
}

impl Problem {
    pub(crate) fn error(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            path: path.into(),
            message: message.into(),
        }
    }

    pub(crate) fn warning(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        if self.path.is_empty() {
            write!(f, "{level}: {}", self.message)
        } else {
            write!(f, "{level}: {}: {}", self.path, self.message)
        }
    }
}

/// All problems found in one config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// In the order found (document order per server, servers by name).
    pub problems: Vec<Problem>,
}

impl Report {
    /// Whether any problem is an error.
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| p.severity == Severity::Error)
    }

    /// Number of errors.
    pub fn error_count(&self) -> usize {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .count()
    }

    /// Whether there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.problems.is_empty()
    }

    /// Problem at this exact path, if any (handy in tests).
    pub fn find(&self, path: &str) -> Option<&Problem> {
        self.problems.iter().find(|p| p.path == path)
    }

    /// The report as text lines: one per problem, then a summary line.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.problems.iter().map(ToString::to_string).collect();
        let errors = self.error_count();
        let warnings = self.problems.len() - errors;
        lines.push(match (errors, warnings) {
            (0, 0) => "ok: no problems".to_owned(),
            (e, w) => format!("{e} error(s), {w} warning(s)"),
        });
        lines
    }

    /// Makes every warning an error (strict mode).
    pub(crate) fn make_strict(&mut self) {
        for p in &mut self.problems {
            p.severity = Severity::Error;
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines().join("\n"))
    }
}
