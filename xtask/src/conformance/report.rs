//! The report: each check against pass/fail, judged against the
//! expected-failures file, with totals.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How one check came out, before the expected failures are applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Pass,
    Fail,
    /// Could not run in this build (named reason in the detail).
    Pending,
}

/// One line of the report.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// A stable name: `suite/initialize`, `everything/stdio/call/echo` …
    pub(crate) id: String,
    pub(crate) outcome: Outcome,
    pub(crate) detail: String,
    /// The suite's checks of this row that failed or warned, one line each
    /// (listed under the table).
    pub(crate) checks: Vec<String>,
}

impl Row {
    pub(crate) fn pass(id: impl Into<String>, detail: impl Into<String>) -> Self {
        Row {
            id: id.into(),
            outcome: Outcome::Pass,
            detail: detail.into(),
            checks: Vec::new(),
        }
    }

    pub(crate) fn fail(id: impl Into<String>, detail: impl Into<String>) -> Self {
        Row {
            id: id.into(),
            outcome: Outcome::Fail,
            detail: detail.into(),
            checks: Vec::new(),
        }
    }

    pub(crate) fn pending(id: impl Into<String>, detail: impl Into<String>) -> Self {
        Row {
            id: id.into(),
            outcome: Outcome::Pending,
            detail: detail.into(),
            checks: Vec::new(),
        }
    }

    /// The same row, with the suite's failing checks.
    pub(crate) fn with_checks(mut self, checks: Vec<String>) -> Self {
        self.checks = checks;
        self
    }

    pub(crate) fn from_result(id: impl Into<String>, r: Result<String, String>) -> Self {
        match r {
            Ok(d) => Row::pass(id, d),
            Err(d) => Row::fail(id, d),
        }
    }
}

/// The verdict on one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass,
    /// Failed, and not listed: the run fails.
    Fail,
    /// Failed, and listed with a reason.
    ExpectedFailure,
    /// Passed, but listed: the entry must go, the run fails.
    Stale,
    Pending,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "**FAIL**",
            Verdict::ExpectedFailure => "expected failure",
            Verdict::Stale => "**STALE** (passes; remove from expected failures)",
            Verdict::Pending => "pending",
        }
    }
}

/// Reads the expected-failures file: `"check id" = "why it may fail"`.
pub(crate) fn parse_expected(text: &str) -> Result<BTreeMap<String, String>, String> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(rename = "expected-failures", default)]
        expected: BTreeMap<String, String>,
    }
    let file: File = toml::from_str(text).map_err(|e| format!("expected-failures file: {e}"))?;
    for (id, reason) in &file.expected {
        if reason.trim().is_empty() {
            return Err(format!("expected-failures file: `{id}` has no reason"));
        }
    }
    Ok(file.expected)
}

/// The judged report.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) rows: Vec<(Row, Verdict, Option<String>)>,
}

impl Report {
    /// Judges `rows` against `expected`. Entries of `expected` under a prefix
    /// in `ran` that match no row are stale too (the check is gone).
    pub(crate) fn judge(rows: Vec<Row>, expected: &BTreeMap<String, String>, ran: &[&str]) -> Self {
        let mut judged = Vec::new();
        for row in &rows {
            let reason = expected.get(&row.id).cloned();
            let verdict = match (&row.outcome, &reason) {
                (Outcome::Pass, None) => Verdict::Pass,
                (Outcome::Pass, Some(_)) => Verdict::Stale,
                (Outcome::Fail, None) => Verdict::Fail,
                (Outcome::Fail, Some(_)) => Verdict::ExpectedFailure,
                (Outcome::Pending, _) => Verdict::Pending,
            };
            judged.push((row.clone(), verdict, reason));
        }
        for (id, reason) in expected {
            let covered = ran.iter().any(|p| id.starts_with(p));
            if covered && !rows.iter().any(|r| &r.id == id) {
                judged.push((
                    Row::fail(
                        id.clone(),
                        "listed in the expected failures, but no such check ran",
                    ),
                    Verdict::Stale,
                    Some(reason.clone()),
                ));
            }
        }
        Report { rows: judged }
    }

    fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|(_, x, _)| *x == v).count()
    }

    /// The run failed: a new failure or a stale entry.
    pub(crate) fn failed(&self) -> bool {
        self.count(Verdict::Fail) > 0 || self.count(Verdict::Stale) > 0
    }

    /// The totals line.
    pub(crate) fn totals(&self) -> String {
        format!(
            "{} checks: {} passed, {} failed, {} expected failures, {} stale, {} pending",
            self.rows.len(),
            self.count(Verdict::Pass),
            self.count(Verdict::Fail),
            self.count(Verdict::ExpectedFailure),
            self.count(Verdict::Stale),
            self.count(Verdict::Pending),
        )
    }

    /// Counts by group (`suite/auth`, `suite`, `draft/auth`, …; a check's
    /// first name segment, with its authorization scenarios apart), in the
    /// order passed, failed, expected failures, stale, pending.
    pub(crate) fn groups(&self) -> BTreeMap<String, [usize; 5]> {
        let mut groups: BTreeMap<String, [usize; 5]> = BTreeMap::new();
        for (row, verdict, _) in &self.rows {
            let mut parts = row.id.split('/');
            let first = parts.next().unwrap_or_default();
            let group = match parts.next() {
                Some("auth") => format!("{first}/auth"),
                _ => first.to_owned(),
            };
            let slot = match verdict {
                Verdict::Pass => 0,
                Verdict::Fail => 1,
                Verdict::ExpectedFailure => 2,
                Verdict::Stale => 3,
                Verdict::Pending => 4,
            };
            if let Some(n) = groups.entry(group).or_default().get_mut(slot) {
                *n += 1;
            }
        }
        groups
    }

    /// The closing line CI reads: expected failures and pending checks count
    /// as skipped; new failures and stale entries as failed.
    pub(crate) fn closing_line(&self) -> String {
        format!(
            "conformance: {} passed, {} failed, {} skipped",
            self.count(Verdict::Pass),
            self.count(Verdict::Fail) + self.count(Verdict::Stale),
            self.count(Verdict::ExpectedFailure) + self.count(Verdict::Pending),
        )
    }

    /// The report as Markdown: a header, the table, the totals.
    pub(crate) fn markdown(&self, header: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Conformance report\n\n{header}\n");
        let _ = writeln!(out, "| check | result | detail |");
        let _ = writeln!(out, "|---|---|---|");
        for (row, verdict, reason) in &self.rows {
            let mut detail = row.detail.clone();
            if let Some(r) = reason {
                detail = format!("{detail} — expected: {r}");
            }
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                cell(&row.id),
                verdict.label(),
                cell(&detail)
            );
        }
        let _ = writeln!(out, "\n**Totals:** {}", self.totals());
        let _ = writeln!(
            out,
            "\n| group | passed | failed | expected failures | stale | pending |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for (group, counts) in self.groups() {
            let [p, f, e, s, n] = counts;
            let _ = writeln!(out, "| {group} | {p} | {f} | {e} | {s} | {n} |");
        }
        let with_checks: Vec<_> = self
            .rows
            .iter()
            .filter(|(row, verdict, _)| {
                !row.checks.is_empty() && matches!(verdict, Verdict::Fail | Verdict::Stale)
            })
            .collect();
        if !with_checks.is_empty() {
            let _ = writeln!(
                out,
                "\n## Checks that failed or warned\n\nThe suite's own checks, for each new failure.\n"
            );
            for (row, verdict, _) in with_checks {
                let _ = writeln!(out, "- `{}` ({})", row.id, verdict.label());
                for c in &row.checks {
                    let _ = writeln!(out, "  - {}", c.replace('\n', " "));
                }
            }
        }
        out
    }
}

/// A table cell: one line, no pipes, not too long.
fn cell(s: &str) -> String {
    let one_line: String = s
        .replace('|', "\\|")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if one_line.chars().count() > 300 {
        let cut: String = one_line.chars().take(300).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_failures_new_failures_and_stale_entries() {
        let expected = parse_expected(
            r#"
            [expected-failures]
            "suite/auth/a" = "no OAuth yet"
            "suite/auth/b" = "no OAuth yet"
            "suite/gone" = "removed upstream"
            "servers/x" = "not run this time"
            "#,
        )
        .unwrap();
        let rows = vec![
            Row::pass("suite/initialize", "ok"),
            Row::fail("suite/auth/a", "401"),
            Row::pass("suite/auth/b", "ok"),
            Row::fail("suite/tools_call", "boom"),
            Row::pending("suite/http", "no HTTP"),
        ];
        let report = Report::judge(rows, &expected, &["suite/"]);
        let verdicts: Vec<_> = report
            .rows
            .iter()
            .map(|(r, v, _)| (r.id.as_str(), *v))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("suite/initialize", Verdict::Pass),
                ("suite/auth/a", Verdict::ExpectedFailure),
                ("suite/auth/b", Verdict::Stale),
                ("suite/tools_call", Verdict::Fail),
                ("suite/http", Verdict::Pending),
                ("suite/gone", Verdict::Stale),
            ]
        );
        assert!(report.failed());
        assert_eq!(
            report.closing_line(),
            "conformance: 1 passed, 3 failed, 2 skipped"
        );
        assert_eq!(
            report.totals(),
            "6 checks: 1 passed, 1 failed, 1 expected failures, 2 stale, 1 pending"
        );
        let md = report.markdown("x");
        assert!(
            md.contains("| suite/auth/a | expected failure | 401 — expected: no OAuth yet |"),
            "{md}"
        );
    }

    #[test]
    fn failing_checks_of_new_failures_are_listed() {
        let expected = parse_expected("[expected-failures]\n\"a\" = \"why\"\n").unwrap();
        let rows = vec![
            Row::fail("a", "x").with_checks(vec!["FAILURE old (Old): known".into()]),
            Row::fail("b", "y").with_checks(vec!["WARNING new (New): retry".into()]),
        ];
        let md = Report::judge(rows, &expected, &[""]).markdown("h");
        assert!(
            md.contains("- `b` (**FAIL**)\n  - WARNING new (New): retry\n"),
            "{md}"
        );
        assert!(!md.contains("known"), "{md}");
    }

    #[test]
    fn all_passing_or_expected_is_success() {
        let expected = parse_expected("[expected-failures]\n\"a\" = \"why\"\n").unwrap();
        let report = Report::judge(
            vec![Row::pass("b", ""), Row::fail("a", "")],
            &expected,
            &[""],
        );
        assert!(!report.failed());
    }

    #[test]
    fn an_entry_needs_a_reason() {
        assert!(parse_expected("[expected-failures]\n\"a\" = \" \"\n").is_err());
        assert!(parse_expected("[expected-failures]\n\"a\" = 3\n").is_err());
        assert!(parse_expected("").unwrap().is_empty());
    }

    #[test]
    fn cells_stay_on_one_line() {
        assert_eq!(cell("a |\n b"), "a \\| b");
    }
}
