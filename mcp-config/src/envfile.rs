//! `envFile`: a dotenv file's variables (VS Code, Cursor).

use std::collections::BTreeMap;

/// Reads dotenv text: `KEY=value` lines, `export KEY=value`, `#` comments,
/// values in single quotes (as written) or double quotes (`\n`, `\"`,
/// `\\` escapes), a ` #` after an unquoted value starting a comment.
/// Lines that are not assignments are skipped, as editors do; their
/// numbers are returned so a program can say so.
pub(crate) fn parse(text: &str) -> (BTreeMap<String, String>, Vec<usize>) {
    let mut vars = BTreeMap::new();
    let mut skipped = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            skipped.push(i + 1);
            continue;
        };
        let key = key.trim();
        if !crate::validate::is_var_name(key) {
            skipped.push(i + 1);
            continue;
        }
        let value = value.trim();
        let value = if let Some(inner) = value.strip_prefix('\'') {
            inner.split_once('\'').map_or(inner, |(v, _)| v).to_owned()
        } else if let Some(inner) = value.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('n') => out.push('\n'),
                        Some(other) => out.push(other),
                        None => {}
                    },
                    c => out.push(c),
                }
            }
            out
        } else {
            value
                .split_once(" #")
                .map_or(value, |(v, _)| v)
                .trim_end()
                .to_owned()
        };
        vars.insert(key.to_owned(), value);
    }
    (vars, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_lines() {
        let (vars, skipped) = parse(
            "# comment\nA=1\nexport B = two words # note\nC='single # kept'\nD=\"x\\ny\\\"z\"\nnot a line\n1BAD=x\n\nE=\n",
        );
        assert_eq!(vars["A"], "1");
        assert_eq!(vars["B"], "two words");
        assert_eq!(vars["C"], "single # kept");
        assert_eq!(vars["D"], "x\ny\"z");
        assert_eq!(vars["E"], "");
        assert_eq!(skipped, [6, 7]);
    }
}
