//! `${VAR}` templates: `${VAR}`, `${VAR:-default}`, `${env:VAR}`, and `$${` for a literal `${`.

/// One piece of a parsed template.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Literal(String),
    Var {
        name: &'a str,
        default: Option<&'a str>,
    },
}

/// A template that cannot be parsed. Messages never quote the template
/// (it may hold a secret); they give a character position instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError(pub(crate) String);

/// Why a template could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    Syntax(SyntaxError),
    /// These variables are unset (each named once, in order of appearance).
    Missing(Vec<String>),
}

fn parse(template: &str) -> Result<Vec<Piece<'_>>, SyntaxError> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = template;
    while let Some(pos) = rest.find('$') {
        let (before, after) = rest.split_at(pos);
        literal.push_str(before);
        if let Some(r) = after.strip_prefix("$${") {
            literal.push_str("${");
            rest = r;
        } else if let Some(r) = after.strip_prefix("${") {
            let at = template.len() - after.len();
            let at_char = template.get(..at).map_or(0, |s| s.chars().count()) + 1;
            let Some((inner, r2)) = r.split_once('}') else {
                return Err(SyntaxError(format!(
                    "`${{` at character {at_char} is not closed by `}}` (write `$${{` for a literal `${{`)"
                )));
            };
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            let name = name.strip_prefix("env:").unwrap_or(name);
            if !is_var_name(name) {
                return Err(SyntaxError(format!(
                    "`${{…}}` at character {at_char} does not hold a variable name (letters, digits \
                     and `_`, not starting with a digit; `${{NAME:-default}}` for a default)"
                )));
            }
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(Piece::Var { name, default });
            rest = r2;
        } else {
            literal.push('$');
            rest = after.strip_prefix('$').unwrap_or(after);
        }
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks the syntax only.
pub(crate) fn check(template: &str) -> Result<(), SyntaxError> {
    parse(template).map(|_| ())
}

/// Whether a config value, as written, refers to an environment variable:
/// `${VAR}`, `${VAR:-default}` or `${env:VAR}` (`$${` is a literal `${`; a
/// value that does not parse refers to none).
///
/// What a variable holds may be a secret, so a program that shows a config
/// (`mcp config show`) shows such values as written rather than expanded.
///
/// ```
/// assert!(mcp_config::has_vars("https://h/mcp?key=${API_KEY}"));
/// assert!(!mcp_config::has_vars("costs $5, written $${NOT_A_VAR}"));
/// ```
pub fn has_vars(template: &str) -> bool {
    parse(template).is_ok_and(|p| p.iter().any(|p| matches!(p, Piece::Var { .. })))
}

/// Expands a template. `${VAR:-default}` uses the default when `VAR` is unset
/// or empty; plain `${VAR}` fails when unset (never expands to "").
pub(crate) fn expand(
    template: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    let pieces = parse(template).map_err(ExpandError::Syntax)?;
    let mut out = String::new();
    let mut missing: Vec<String> = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Literal(s) => out.push_str(&s),
            Piece::Var { name, default } => match (lookup(name), default) {
                (Some(v), Some(d)) if v.is_empty() => out.push_str(d),
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    if !missing.iter().any(|m| m == name) {
                        missing.push(name.to_owned());
                    }
                }
            },
        }
    }
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(ExpandError::Missing(missing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            "TOKEN" => Some("t0k".into()),
            _ => None,
        }
    }

    #[test]
    fn expands_variables_defaults_and_literals() {
        assert_eq!(expand("${HOME}/x", &env).unwrap(), "/home/u/x");
        assert_eq!(expand("Bearer ${env:TOKEN}", &env).unwrap(), "Bearer t0k");
        assert_eq!(expand("${NOPE:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
        assert_eq!(
            expand("$${HOME} costs $5 $", &env).unwrap(),
            "${HOME} costs $5 $"
        );
        assert_eq!(expand("${NOPE:-}", &env).unwrap(), "");
    }

    #[test]
    fn missing_variables_are_errors_named_once() {
        assert_eq!(
            expand("${A}${B}${A}", &env),
            Err(ExpandError::Missing(vec!["A".into(), "B".into()]))
        );
    }

    #[test]
    fn syntax_errors_give_a_position_not_the_text() {
        let Err(ExpandError::Syntax(SyntaxError(m))) = expand("ab${SECRET", &env) else {
            panic!()
        };
        assert!(m.contains("character 3") && !m.contains("SECRET"), "{m}");
        assert!(check("${1X}").is_err());
        assert!(check("${}").is_err());
        assert!(check("${A B}").is_err());
        assert!(check("${A_1}").is_ok());
    }

    #[test]
    fn has_vars_sees_only_real_references() {
        assert!(has_vars("x${A}"));
        assert!(!has_vars("$${A}"));
        assert!(!has_vars("plain $"));
    }
}
