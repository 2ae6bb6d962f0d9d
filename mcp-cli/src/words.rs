//! Splitting a `--stdio` command line into words, like a POSIX shell but
//! without one: no variables, globs or pipes, only quotes, backslashes and
//! comments (the `shlex` crate's rules).

/// Why a command line could not be split.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SplitError(pub(crate) &'static str);

/// Splits `line` into words. Single quotes keep everything literal; double
/// quotes allow `\"`, `\\`, `\$` and `` \` ``; a backslash outside quotes
/// escapes the next character; a word starting with `#` starts a comment.
pub(crate) fn split(line: &str) -> Result<Vec<String>, SplitError> {
    shlex::split(line).ok_or(SplitError("an unterminated quote or a trailing backslash"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(split("npx -y  pkg").unwrap(), ["npx", "-y", "pkg"]);
        assert_eq!(
            split(r#"python -c 'print("hi")'"#).unwrap(),
            ["python", "-c", "print(\"hi\")"]
        );
        assert_eq!(
            split(r#"a "b c" d\ e ''"#).unwrap(),
            ["a", "b c", "d e", ""]
        );
        assert_eq!(split(r#""x\"y""#).unwrap(), ["x\"y"]);
        assert_eq!(split(r#"'a\b' "a\b""#).unwrap(), [r"a\b", r"a\b"]);
        assert_eq!(split("$HOME").unwrap(), ["$HOME"], "no expansion");
        assert_eq!(split("node s.js # note").unwrap(), ["node", "s.js"]);
        assert_eq!(split("a#b").unwrap(), ["a#b"]);
        assert!(split("   ").unwrap().is_empty());
    }

    #[test]
    fn unterminated_quotes_and_trailing_backslashes_are_errors() {
        assert!(split("'open").is_err());
        assert!(split(r#"say "open"#).is_err());
        assert!(split(r#""x\"#).is_err());
        assert!(split("x\\").is_err());
    }
}
