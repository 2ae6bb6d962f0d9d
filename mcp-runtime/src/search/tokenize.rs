//! Text to index terms: words split at non-alphanumerics and at case changes
//! (`snake_case`, `camelCase`, `kebab-case`, `HTTPServer`), lowercased, a
//! few stopwords dropped, plurals folded (an "S" stemmer), each text cut at
//! a bound.

/// The longest term kept, in bytes; longer words (hashes, base64 blobs)
/// are skipped: nobody searches for them.
pub(crate) const MAX_TERM_BYTES: usize = 48;

/// Words too common in tool descriptions to tell tools apart (their idf
/// would be near zero anyway; dropping them keeps postings short).
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "if", "in", "into", "is", "it",
    "its", "of", "on", "or", "that", "the", "this", "to", "with",
];

/// Calls `emit` with each term of `text`, at most `limit` of them (so a
/// megabyte of description costs no more than its first `limit` words).
pub(crate) fn for_each_term(text: &str, limit: usize, mut emit: impl FnMut(&str)) {
    let mut word = String::new();
    let mut emitted = 0usize;
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if emitted >= limit {
            return;
        }
        if !c.is_alphanumeric() {
            emitted += flush(&mut word, &mut emit);
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let next = chars.peek().copied();
            // `getUser`, `base64Encode`: a capital after a small letter or
            // a digit starts a word; `HTTPServer`: so does the last capital
            // of a run when a small letter follows it.
            let case_step = c.is_uppercase() && (p.is_lowercase() || p.is_numeric());
            let acronym_end =
                c.is_uppercase() && p.is_uppercase() && next.is_some_and(char::is_lowercase);
            if case_step || acronym_end {
                emitted += flush(&mut word, &mut emit);
                if emitted >= limit {
                    return;
                }
            }
        }
        word.extend(c.to_lowercase());
        prev = Some(c);
    }
    if emitted < limit {
        flush(&mut word, &mut emit);
    }
}

/// Emits the word gathered so far as a term, if it is one; how many (0 or 1).
fn flush(word: &mut String, emit: &mut impl FnMut(&str)) -> usize {
    if word.is_empty() {
        return 0;
    }
    let mut n = 0;
    if word.len() <= MAX_TERM_BYTES && !STOPWORDS.contains(&word.as_str()) {
        stem(word);
        emit(word);
        n = 1;
    }
    word.clear();
    n
}

/// Folds an English plural onto its singular, after Harman's "S" stemmer
/// (1991): `-ies` → `-y`, `-es` → `-e`, `-s` → `` (not after `u`, `s`; not
/// `-aes`, `-ees`, `-oes`, `-aies`, `-eies`). Conservative: it never
/// merges words that differ in more than number, which a full stemmer
/// (Porter) does (`general`/`generate`) and which hurts short tool text.
fn stem(word: &mut String) {
    if word.len() <= 3 {
        return;
    }
    // Every suffix tested is ASCII, so the cuts fall on char boundaries.
    let cut = word.len();
    if word.ends_with("ies") && !word.ends_with("eies") && !word.ends_with("aies") {
        word.truncate(cut - 3);
        word.push('y');
    } else if (word.ends_with("es")
        && !word.ends_with("aes")
        && !word.ends_with("ees")
        && !word.ends_with("oes"))
        || (word.ends_with('s') && !word.ends_with("us") && !word.ends_with("ss"))
    {
        // `-es` → `-e` and `-s` → ``: both drop the `s`.
        word.truncate(cut - 1);
    }
}

/// The terms of `text`, collected.
#[cfg(test)]
pub(crate) fn terms(text: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, limit, |t| out.push(t.to_owned()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Vec<String> {
        terms(text, usize::MAX)
    }

    #[test]
    fn splits_snake_camel_kebab_and_acronyms() {
        assert_eq!(t("create_pull_request"), ["create", "pull", "request"]);
        assert_eq!(t("createPullRequest"), ["create", "pull", "request"]);
        assert_eq!(t("create-pull-request"), ["create", "pull", "request"]);
        assert_eq!(t("HTTPServerConfig"), ["http", "server", "config"]);
        assert_eq!(t("base64Encode"), ["base64", "encode"]);
        assert_eq!(t("github__list_issues"), ["github", "list", "issue"]);
        assert_eq!(t("  Read  the FILE. "), ["read", "file"]);
        assert_eq!(t("ÜberGröße"), ["über", "größe"]);
    }

    #[test]
    fn plurals_fold_and_stopwords_go() {
        assert_eq!(t("queries"), ["query"]);
        assert_eq!(
            t("issues files status class"),
            ["issue", "file", "status", "class"]
        );
        assert_eq!(t("the list of a repo"), ["list", "repo"]);
        // Short words are left alone.
        assert_eq!(t("has was"), ["has", "was"]);
    }

    #[test]
    fn bounded_by_the_limit_and_term_length() {
        assert_eq!(terms("one two three four", 2), ["one", "two"]);
        assert_eq!(terms("xY zW", 1), ["x"]);
        assert!(t(&"x".repeat(MAX_TERM_BYTES + 1)).is_empty());
        assert_eq!(t(&"y".repeat(MAX_TERM_BYTES)).len(), 1);
        assert!(t("").is_empty());
        assert!(t("__--..").is_empty());
    }
}
