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

/// Whether `c` stays as it is in a namespaced name.
fn kept(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    push_sanitized(&mut out, part);
    out
}

fn push_sanitized(out: &mut String, part: &str) {
    if part.chars().all(kept) {
        out.push_str(part);
    } else {
        out.extend(part.chars().map(|c| if kept(c) { c } else { '_' }));
    }
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
    let mut plain = String::with_capacity(server.len() + SEPARATOR.len() + tool.len());
    push_sanitized(&mut plain, server);
    plain.push_str(SEPARATOR);
    push_sanitized(&mut plain, tool);
    if plain.len() > MAX_TOOL_NAME_LEN {
        with_suffix(&plain, server, tool)
    } else {
        plain
    }
}

/// Whether `name` is `server__tool` as it is: no character replaced,
/// nothing cut.
fn is_exact(name: &str, server: &str, tool: &str) -> bool {
    name.strip_prefix(server)
        .and_then(|rest| rest.strip_prefix(SEPARATOR))
        == Some(tool)
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
    let borrowed: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(s, t)| (s.as_str(), t.as_str()))
        .collect();
    let (names, notes) = assign_sorted(&borrowed, kind);
    let out = pairs
        .iter()
        .zip(names)
        .filter_map(|(pair, name)| Some((pair.clone(), name?)))
        .collect();
    (out, notes)
}

/// [`assign_kind`] over `pairs` sorted by (server, tool), without
/// duplicates: each pair's name, in the same order (`None`: left out,
/// with a note).
pub(crate) fn assign_sorted(
    pairs: &[(&str, &str)],
    kind: &str,
) -> (Vec<Option<String>>, Vec<String>) {
    let (named, notes) = assign_by_name(pairs, kind);
    let mut out = vec![None; pairs.len()];
    for (name, i) in named {
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(name);
        }
    }
    (out, notes)
}

/// [`assign_sorted`]'s names, sorted by name, each with its pair's index
/// (the pairs left out are missing): what a catalog kept sorted by name
/// needs, with no second sort.
pub(crate) fn assign_by_name(
    pairs: &[(&str, &str)],
    kind: &str,
) -> (Vec<(String, usize)>, Vec<String>) {
    debug_assert!(pairs.is_sorted_by(|a, b| a < b), "sorted, no duplicates");
    // (name, index): the pairs that want each name come together, in
    // (server, tool) order.
    let mut slots: Vec<(String, usize)> = pairs
        .iter()
        .enumerate()
        .map(|(i, &(server, tool))| (candidate(server, tool), i))
        .collect();
    slots.sort_unstable();
    let mut renamed = false;
    for claimants in slots.chunk_by_mut(|a, b| a.0 == b.0) {
        if claimants.len() < 2 {
            continue;
        }
        // The first exact claimant keeps the name; the others get a suffix.
        let mut kept = false;
        for (name, i) in claimants {
            let Some(&(server, tool)) = pairs.get(*i) else {
                continue;
            };
            if !kept && is_exact(name, server, tool) {
                kept = true;
            } else {
                *name = with_suffix(name, server, tool);
                renamed = true;
            }
        }
    }
    if renamed {
        slots.sort_unstable();
    }
    // A name still taken twice (a tool literally named like another's
    // suffixed name): the first pair keeps it, the others are left out.
    let mut left_out = Vec::new();
    slots.dedup_by(|later, first| {
        let clash = later.0 == first.0;
        if clash {
            left_out.push((later.1, std::mem::take(&mut later.0)));
        }
        clash
    });
    left_out.sort_unstable();
    let notes = left_out
        .into_iter()
        .filter_map(|(i, name)| {
            let (server, tool) = pairs.get(i)?;
            Some(format!(
                "{kind} `{tool}` of server `{server}` is left out: its namespaced name `{name}` is taken by another {kind}"
            ))
        })
        .collect();
    (slots, notes)
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

    /// The first, map-based statement of the rules: the index-based
    /// [`assign_sorted`] must name every set of pairs exactly as it does.
    fn reference(pairs: &BTreeSet<(String, String)>) -> BTreeMap<(String, String), String> {
        let mut wanted: BTreeMap<String, Vec<&(String, String)>> = BTreeMap::new();
        for pair in pairs {
            wanted
                .entry(candidate(&pair.0, &pair.1))
                .or_default()
                .push(pair);
        }
        let mut named = Vec::new();
        for (name, claimants) in wanted {
            let mut kept = claimants.len() == 1;
            if kept {
                named.push((claimants[0], name));
                continue;
            }
            for pair in claimants {
                if !kept && format!("{}{SEPARATOR}{}", pair.0, pair.1) == name {
                    kept = true;
                    named.push((pair, name.clone()));
                } else {
                    named.push((pair, with_suffix(&name, &pair.0, &pair.1)));
                }
            }
        }
        named.sort_by(|a, b| a.0.cmp(b.0));
        let mut taken = BTreeSet::new();
        named
            .into_iter()
            .filter(|(_, name)| taken.insert(name.clone()))
            .map(|(pair, name)| (pair.clone(), name))
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn names_match_the_reference_and_account_for_every_pair(
            pairs in proptest::collection::btree_set(
                ("[ab_. ]{1,4}", "[ab_. ]{1,4}|[ab]{60,64}"),
                0..24,
            )
        ) {
            let (names, notes) = assign(&pairs);
            proptest::prop_assert_eq!(&names, &reference(&pairs));
            proptest::prop_assert_eq!(names.len() + notes.len(), pairs.len());
            let distinct: BTreeSet<_> = names.values().collect();
            proptest::prop_assert_eq!(distinct.len(), names.len());
            proptest::prop_assert!(names.values().all(|n| valid(n)), "{:?}", names);
            // The same names sorted by name, each with its pair.
            let borrowed: Vec<(&str, &str)> =
                pairs.iter().map(|(s, t)| (s.as_str(), t.as_str())).collect();
            let (by_name, notes_by_name) = assign_by_name(&borrowed, "tool");
            proptest::prop_assert!(by_name.is_sorted_by(|a, b| a.0 < b.0));
            proptest::prop_assert_eq!(notes_by_name, notes);
            let from_sorted: BTreeMap<(String, String), String> = by_name
                .into_iter()
                .map(|(name, i)| (pairs.iter().nth(i).cloned().unwrap_or_default(), name))
                .collect();
            proptest::prop_assert_eq!(from_sorted, names);
        }
    }
}
