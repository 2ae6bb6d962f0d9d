//! Namespaced names: `SERVER__TOOL`, sanitized, at most 64 characters,
//! unique. No IO; the same inputs always give the same names.
//!
//! Tools, resources, resource templates and prompts are named by the same
//! rules, each kind on its own ([`assign_kind`]): a tool and a prompt may
//! share a namespaced name, two prompts may not.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

/// The longest namespaced name (the limit most model APIs put on tool names).
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Between the server's name and the tool's.
pub const SEPARATOR: &str = "__";

/// Hex digits of the hash suffix that keeps long or clashing names unique.
const SUFFIX_HEX: usize = 8;

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A short, stable hash of the (server, tool) pair.
fn suffix(server: &str, tool: &str) -> String {
    let mut h = Sha256::new();
    h.update(server.as_bytes());
    h.update([0u8]);
    h.update(tool.as_bytes());
    let digest = h.finalize();
    base16ct::lower::encode_string(digest.get(..SUFFIX_HEX / 2).unwrap_or_default())
}

/// `name` cut to leave room for `_` and the hash suffix, then the suffix.
/// `name` is ASCII (sanitized), so cutting at any byte is safe.
fn with_suffix(name: &str, server: &str, tool: &str) -> String {
    let keep = MAX_TOOL_NAME_LEN - SUFFIX_HEX - 1;
    let mut out: String = name.chars().take(keep).collect();
    out.push('_');
    out.push_str(&suffix(server, tool));
    out
}

/// The name a tool gets when nothing clashes with it: `SERVER__TOOL`,
/// sanitized; a name over 64 characters is cut and gets a hash suffix.
pub fn candidate(server: &str, tool: &str) -> String {
    let plain = format!("{}{SEPARATOR}{}", sanitize(server), sanitize(tool));
    if plain.len() > MAX_TOOL_NAME_LEN {
        with_suffix(&plain, server, tool)
    } else {
        plain
    }
}

/// Names every (server, tool) pair, uniquely and deterministically.
///
/// * Each pair gets its [`candidate`].
/// * When several pairs want the same name, the first pair whose raw
///   `server__tool` *is* that name (no character replaced, nothing cut) keeps
///   it; every other one gets a hash suffix of its raw names.
/// * Should a name still clash (a tool literally named like another's
///   suffixed name), the first pair in (server, tool) order keeps it and the
///   others are left out, with a note.
///
/// Returns the names by pair and notes on pairs that were left out.
pub fn assign(
    pairs: &BTreeSet<(String, String)>,
) -> (BTreeMap<(String, String), String>, Vec<String>) {
    assign_kind(pairs, "tool")
}

/// [`assign`] for one kind of entry (`"resource"`, `"prompt"` …): the same
/// names; `kind` only words the notes.
pub fn assign_kind(
    pairs: &BTreeSet<(String, String)>,
    kind: &str,
) -> (BTreeMap<(String, String), String>, Vec<String>) {
    let mut wanted: BTreeMap<String, Vec<&(String, String)>> = BTreeMap::new();
    for pair in pairs {
        wanted
            .entry(candidate(&pair.0, &pair.1))
            .or_default()
            .push(pair);
    }
    let mut named: Vec<(&(String, String), String)> = Vec::with_capacity(pairs.len());
    for (name, claimants) in wanted {
        if let [only] = claimants.as_slice() {
            named.push((only, name));
            continue;
        }
        // Claimants come in (server, tool) order: the first exact one wins.
        let mut kept = false;
        for pair in claimants {
            let exact = format!("{}{SEPARATOR}{}", pair.0, pair.1) == name;
            if exact && !kept {
                kept = true;
                named.push((pair, name.clone()));
            } else {
                named.push((pair, with_suffix(&name, &pair.0, &pair.1)));
            }
        }
    }
    named.sort_by(|a, b| a.0.cmp(b.0));
    let mut taken = BTreeSet::new();
    let mut out = BTreeMap::new();
    let mut notes = Vec::new();
    for (pair, name) in named {
        if taken.insert(name.clone()) {
            out.insert(pair.clone(), name);
        } else {
            notes.push(format!(
                "{kind} `{}` of server `{}` is left out: its namespaced name `{name}` is taken by another {kind}",
                pair.1, pair.0
            ));
        }
    }
    (out, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> BTreeSet<(String, String)> {
        pairs
            .iter()
            .map(|(s, t)| ((*s).to_owned(), (*t).to_owned()))
            .collect()
    }

    fn valid(name: &str) -> bool {
        name.len() <= MAX_TOOL_NAME_LEN
            && !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names() {
        assert_eq!(candidate("files", "read_file"), "files__read_file");
        assert_eq!(candidate("my.server", "do it/now"), "my_server__do_it_now");
        assert_eq!(candidate("über", "ß"), "_ber___");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_suffix() {
        let long = "t".repeat(100);
        let a = candidate("srv", &long);
        assert_eq!(a.len(), MAX_TOOL_NAME_LEN);
        assert!(valid(&a));
        assert_eq!(a, candidate("srv", &long), "deterministic");
        let mut other = long.clone();
        other.push('x');
        assert_ne!(a, candidate("srv", &other), "the suffix keeps them apart");
        assert!(a.starts_with("srv__ttt"));
        // The suffix: the first 8 hex digits of SHA-256("srv" NUL tool), so
        // names an agent has seen stay the same across versions.
        assert_eq!(suffix("a", "b.c"), "ad8a94ab");
    }

    #[test]
    fn clashes_keep_the_exact_name_and_suffix_the_rest() {
        let pairs = set(&[("a", "b.c"), ("a", "b_c"), ("a", "b c")]);
        let (names, notes) = assign(&pairs);
        assert!(notes.is_empty());
        assert_eq!(names[&("a".into(), "b_c".into())], "a__b_c");
        let n1 = &names[&("a".into(), "b.c".into())];
        let n2 = &names[&("a".into(), "b c".into())];
        assert_ne!(n1, n2);
        assert!(n1.starts_with("a__b_c_") && valid(n1), "{n1}");
        // Same input, same names, whatever the insertion order was.
        let again = assign(&set(&[("a", "b c"), ("a", "b_c"), ("a", "b.c")])).0;
        assert_eq!(names, again);
    }

    #[test]
    fn double_underscore_ambiguity_is_resolved() {
        // Both would be `a__b__c`; both are exact, so the first keeps it.
        let (names, notes) = assign(&set(&[("a", "b__c"), ("a__b", "c")]));
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(names[&("a".into(), "b__c".into())], "a__b__c");
        let other = &names[&("a__b".into(), "c".into())];
        assert!(other.starts_with("a__b__c_") && valid(other), "{other}");
    }

    #[test]
    fn every_name_is_valid_and_unique() {
        let mut pairs = BTreeSet::new();
        for s in [
            "x",
            "x y",
            "x.y",
            "a-very-long-server-name-that-goes-on-and-on-and-on",
        ] {
            for t in ["t", "t t", "t.t", &"long".repeat(20), &"long".repeat(21)] {
                pairs.insert((s.to_owned(), t.to_owned()));
            }
        }
        let (names, notes) = assign(&pairs);
        assert!(notes.is_empty(), "{notes:?}");
        let distinct: BTreeSet<_> = names.values().collect();
        assert_eq!(distinct.len(), pairs.len());
        assert!(names.values().all(|n| valid(n)), "{names:?}");
    }
}
