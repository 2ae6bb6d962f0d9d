//! "Did you mean …?": the closest of some known names to one that is not
//! known (a config key here; a tool, a command, a server, an argument in
//! the CLI), by edit distance.
//!
//! ```
//! use mcp_stack_config::suggest::did_you_mean;
//! assert_eq!(did_you_mean("comand", ["command", "args"]), "; did you mean `command`?");
//! assert_eq!(did_you_mean("zzz", ["command", "args"]), "");
//! ```

/// The edit distance between `a` and `b`, case-insensitively: insertions,
/// deletions, substitutions and swaps of two neighbouring characters
/// (`ecoh` → `echo`), each costing one (the optimal string alignment
/// distance).
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    // Three rows of the table: `cur[j]` is the distance between `a[..i]`
    // and `b[..j]`; `prev` and `before` the two rows above.
    let at = |row: &[usize], j: usize| row.get(j).copied().unwrap_or(usize::MAX / 2);
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let (ca, cb) = (a.get(i - 1), b.get(j - 1));
            let cost = usize::from(ca != cb);
            let mut d = (at(&prev, j) + 1)
                .min(at(&cur, j - 1) + 1)
                .min(at(&prev, j - 1) + cost);
            if i > 1 && j > 1 && ca == b.get(j - 2) && a.get(i - 2) == cb {
                d = d.min(at(&before, j - 2) + 1);
            }
            if let Some(cell) = cur.get_mut(j) {
                *cell = d;
            }
        }
        before = std::mem::replace(&mut prev, cur);
    }
    at(&prev, b.len())
}

/// The known name closest to `unknown`, when one is close enough to be a
/// typo: at most a third of its length away (at least one edit), or a
/// namespaced name whose own part is `unknown` (`fs__read` for `read`).
pub fn closest<'a>(unknown: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let bound = (unknown.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for candidate in known {
        let d = if candidate
            .rsplit_once("__")
            .is_some_and(|(_, own)| own.eq_ignore_ascii_case(unknown))
        {
            0
        } else {
            distance(unknown, candidate)
        };
        if d <= bound && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, name)| name)
}

/// `; did you mean `NAME`?` for a message, or nothing.
pub fn did_you_mean<'a>(unknown: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(unknown, known)
        .map(|name| format!("; did you mean `{name}`?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_edits() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("flaw", "lawn"), 2);
        assert_eq!(distance("echo", "ECHO"), 0);
        assert_eq!(distance("read_file", "read_fiel"), 1);
        assert_eq!(distance("tools", "tool"), 1);
        assert_eq!(distance("ä", "a"), 1);
        assert_eq!(distance("ecoh", "echo"), 1, "a swap is one edit");
        assert_eq!(distance("ca", "abc"), 3);
    }

    #[test]
    fn the_closest_typo_is_suggested_and_far_names_are_not() {
        let known = ["echo", "add", "read_file", "slow"];
        assert_eq!(closest("ecoh", known), Some("echo"));
        assert_eq!(closest("read-file", known), Some("read_file"));
        assert_eq!(closest("ad", known), Some("add"));
        assert_eq!(closest("completely", known), None);
        assert_eq!(closest("x", ["y"]), Some("y"), "one edit is always close");
        assert_eq!(closest("fs", ["kit__fs", "fs__x"]), Some("kit__fs"));
        assert_eq!(
            did_you_mean("tols", ["tools", "call"]),
            "; did you mean `tools`?"
        );
        assert_eq!(did_you_mean("zzzzzz", ["tools"]), "");
    }
}
