//! Splitting a command line into words, like a shell but without one: no
//! variables, globs or pipes, only quotes and backslashes.

/// Why a command line could not be split.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SplitError(pub(crate) &'static str);

/// Splits `line` into words. Single quotes keep everything literal; double
/// quotes allow `\"` and `\\`; a backslash outside quotes escapes the next
/// character.
pub(crate) fn split(line: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(SplitError("unterminated single quote")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(SplitError("unterminated double quote")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(SplitError("unterminated double quote")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(SplitError("trailing backslash")),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
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
        assert_eq!(split("$HOME").unwrap(), ["$HOME"], "no expansion");
        assert!(split("'open").is_err());
        assert!(split("x\\").is_err());
        assert!(split("   ").unwrap().is_empty());
    }
}
