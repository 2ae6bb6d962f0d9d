//! `${VAR}` templates: `${VAR}`, `${VAR:-default}`, `${env:VAR}`, and `$${` for a literal `${`.

use crate::Format;

/// What a `${…}` refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ref<'a> {
    /// `${NAME}`, `${NAME:-default}`, `${env:NAME}` (Gemini CLI: `$NAME`;
    /// OpenCode: `{env:NAME}`).
    Env {
        name: &'a str,
        default: Option<&'a str>,
    },
    /// VS Code's `${input:ID}`: a value the user gives.
    Input(&'a str),
    /// `${workspaceFolder}`: the project folder (the one holding `.vscode/`).
    WorkspaceFolder,
    /// `${userHome}`.
    UserHome,
    /// `${pathSeparator}` or `${/}`.
    PathSeparator,
}

/// One piece of a parsed template.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Literal(String),
    Ref(Ref<'a>),
}

/// Which references a format's own client expands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Dialect {
    /// `${workspaceFolder}`, `${userHome}`, `${pathSeparator}` (VS Code, Cursor, Windsurf).
    editor: bool,
    /// `${input:ID}` (VS Code).
    inputs: bool,
    /// `$NAME` without braces (Gemini CLI).
    bare_dollar: bool,
    /// `{env:NAME}` (OpenCode).
    brace_env: bool,
}

impl Dialect {
    /// `${VAR}`, `${VAR:-default}`, `${env:VAR}` only.
    pub(crate) const PLAIN: Dialect = Dialect {
        editor: false,
        inputs: false,
        bare_dollar: false,
        brace_env: false,
    };

    /// Every `${…}` form (what [`has_vars`] looks for).
    const BRACES: Dialect = Dialect {
        editor: true,
        inputs: true,
        bare_dollar: false,
        brace_env: false,
    };

    pub(crate) fn of(format: Format) -> Dialect {
        let mut d = Dialect::PLAIN;
        match format {
            Format::VsCode => {
                d.editor = true;
                d.inputs = true;
            }
            Format::Cursor | Format::Windsurf => d.editor = true,
            Format::GeminiCli => d.bare_dollar = true,
            Format::OpenCode => d.brace_env = true,
            _ => {}
        }
        d
    }
}

/// A template that cannot be parsed. Messages never quote the template
/// (it may hold a secret); they give a character position instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError(pub(crate) String);

/// A reference that has no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Missing {
    Env(String),
    Input(String),
    WorkspaceFolder,
    UserHome,
}

/// Why a template could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    Syntax(SyntaxError),
    /// These have no value (each named once, in order of appearance).
    Missing(Vec<Missing>),
}

/// Where the values of references come from.
pub(crate) trait Values {
    fn env(&self, name: &str) -> Option<String>;
    fn input(&self, _id: &str) -> Option<String> {
        None
    }
    fn workspace_folder(&self) -> Option<String> {
        None
    }
    fn user_home(&self) -> Option<String> {
        self.env("HOME").or_else(|| self.env("USERPROFILE"))
    }
}

impl<F: Fn(&str) -> Option<String> + ?Sized> Values for F {
    fn env(&self, name: &str) -> Option<String> {
        self(name)
    }
}

fn char_pos(template: &str, rest: &str) -> usize {
    let at = template.len() - rest.len();
    template.get(..at).map_or(0, |s| s.chars().count()) + 1
}

fn is_input_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn braced<'a>(inner: &'a str, d: Dialect, at_char: usize) -> Result<Ref<'a>, SyntaxError> {
    if d.inputs
        && let Some(id) = inner.strip_prefix("input:")
    {
        if is_input_id(id) {
            return Ok(Ref::Input(id));
        }
        return Err(SyntaxError(format!(
            "`${{input:…}}` at character {at_char} does not name an input (letters, digits, `_`, `-` and `.`)"
        )));
    }
    if d.editor {
        match inner {
            "workspaceFolder" => return Ok(Ref::WorkspaceFolder),
            "userHome" => return Ok(Ref::UserHome),
            "pathSeparator" | "/" => return Ok(Ref::PathSeparator),
            _ => {}
        }
    }
    let (name, default) = match inner.split_once(":-") {
        Some((n, d)) => (n, Some(d)),
        None => (inner, None),
    };
    let name = name.strip_prefix("env:").unwrap_or(name);
    if is_var_name(name) {
        Ok(Ref::Env { name, default })
    } else {
        Err(SyntaxError(format!(
            "`${{…}}` at character {at_char} does not hold a variable name (letters, digits \
             and `_`, not starting with a digit; `${{NAME:-default}}` for a default)"
        )))
    }
}

fn parse<'a>(template: &'a str, d: Dialect) -> Result<Vec<Piece<'a>>, SyntaxError> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = template;
    let starts: &[char] = if d.brace_env { &['$', '{'] } else { &['$'] };
    while let Some(pos) = rest.find(starts) {
        let (before, after) = rest.split_at(pos);
        literal.push_str(before);
        let mut found = |r: Ref<'a>, literal: &mut String| {
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(literal)));
            }
            pieces.push(Piece::Ref(r));
        };
        if let Some(r) = after.strip_prefix("$${") {
            literal.push_str("${");
            rest = r;
        } else if let Some(r) = after.strip_prefix("${") {
            let at_char = char_pos(template, after);
            let Some((inner, r2)) = r.split_once('}') else {
                return Err(SyntaxError(format!(
                    "`${{` at character {at_char} is not closed by `}}` (write `$${{` for a literal `${{`)"
                )));
            };
            let found_ref = braced(inner, d, at_char)?;
            found(found_ref, &mut literal);
            rest = r2;
        } else if let Some(r) = after.strip_prefix("{env:")
            && let Some((name, r2)) = r.split_once('}')
            && is_var_name(name)
        {
            found(
                Ref::Env {
                    name,
                    default: None,
                },
                &mut literal,
            );
            rest = r2;
        } else if d.bare_dollar
            && let Some(r) = after.strip_prefix('$')
            && r.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        {
            let end = r
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(r.len());
            let (name, r2) = r.split_at(end);
            found(
                Ref::Env {
                    name,
                    default: None,
                },
                &mut literal,
            );
            rest = r2;
        } else {
            let mut chars = after.chars();
            if let Some(c) = chars.next() {
                literal.push(c);
            }
            rest = chars.as_str();
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
pub(crate) fn check(template: &str, d: Dialect) -> Result<(), SyntaxError> {
    parse(template, d).map(|_| ())
}

/// The references of a template (none when it does not parse).
pub(crate) fn refs(template: &str, d: Dialect) -> Vec<Ref<'_>> {
    parse(template, d)
        .map(|p| {
            p.into_iter()
                .filter_map(|p| match p {
                    Piece::Ref(r) => Some(r),
                    Piece::Literal(_) => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a config value, as written, refers to something expanded:
/// `${VAR}`, `${VAR:-default}`, `${env:VAR}`, and the editors' `${input:ID}`,
/// `${workspaceFolder}`, `${userHome}` (`$${` is a literal `${`; a value that
/// does not parse refers to none). [`has_vars_in`] knows each format's own
/// forms too (Gemini CLI's `$VAR`, OpenCode's `{env:VAR}`).
///
/// What a variable holds may be a secret, so a program that shows a config
/// (`mcp config show`) shows such values as written rather than expanded.
///
/// ```
/// assert!(mcp_stack_config::has_vars("https://h/mcp?key=${API_KEY}"));
/// assert!(mcp_stack_config::has_vars("Bearer ${input:api-key}"));
/// assert!(!mcp_stack_config::has_vars("costs $5, written $${NOT_A_VAR}"));
/// ```
pub fn has_vars(template: &str) -> bool {
    !refs(template, Dialect::BRACES).is_empty()
}

/// [`has_vars`], as the client of `format` reads its values.
///
/// ```
/// use mcp_stack_config::{Format, has_vars_in};
/// assert!(has_vars_in(Format::GeminiCli, "$API_TOKEN"));
/// assert!(!has_vars_in(Format::ClaudeCode, "$API_TOKEN"));
/// assert!(has_vars_in(Format::OpenCode, "Bearer {env:TOKEN}"));
/// ```
pub fn has_vars_in(format: Format, template: &str) -> bool {
    !refs(template, Dialect::of(format)).is_empty()
}

/// Expands a template. `${VAR:-default}` uses the default when `VAR` is unset
/// or empty; plain `${VAR}` fails when unset (never expands to "").
pub(crate) fn expand(
    template: &str,
    d: Dialect,
    values: &dyn Values,
) -> Result<String, ExpandError> {
    let pieces = parse(template, d).map_err(ExpandError::Syntax)?;
    let mut out = String::new();
    let mut missing: Vec<Missing> = Vec::new();
    let mut miss = |m: Missing| {
        if !missing.contains(&m) {
            missing.push(m);
        }
    };
    for piece in pieces {
        match piece {
            Piece::Literal(s) => out.push_str(&s),
            Piece::Ref(Ref::Env { name, default }) => match (values.env(name), default) {
                (Some(v), Some(d)) if v.is_empty() => out.push_str(d),
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => miss(Missing::Env(name.to_owned())),
            },
            Piece::Ref(Ref::Input(id)) => match values.input(id) {
                Some(v) => out.push_str(&v),
                None => miss(Missing::Input(id.to_owned())),
            },
            Piece::Ref(Ref::WorkspaceFolder) => match values.workspace_folder() {
                Some(v) => out.push_str(&v),
                None => miss(Missing::WorkspaceFolder),
            },
            Piece::Ref(Ref::UserHome) => match values.user_home() {
                Some(v) => out.push_str(&v),
                None => miss(Missing::UserHome),
            },
            Piece::Ref(Ref::PathSeparator) => out.push(std::path::MAIN_SEPARATOR),
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

    fn expand_plain(t: &str, e: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
        expand(t, Dialect::PLAIN, &e)
    }

    #[test]
    fn expands_variables_defaults_and_literals() {
        assert_eq!(expand_plain("${HOME}/x", &env).unwrap(), "/home/u/x");
        assert_eq!(
            expand_plain("Bearer ${env:TOKEN}", &env).unwrap(),
            "Bearer t0k"
        );
        assert_eq!(expand_plain("${NOPE:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand_plain("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand_plain("${EMPTY}", &env).unwrap(), "");
        assert_eq!(
            expand_plain("$${HOME} costs $5 $", &env).unwrap(),
            "${HOME} costs $5 $"
        );
        assert_eq!(expand_plain("${NOPE:-}", &env).unwrap(), "");
    }

    #[test]
    fn missing_variables_are_errors_named_once() {
        assert_eq!(
            expand_plain("${A}${B}${A}", &env),
            Err(ExpandError::Missing(vec![
                Missing::Env("A".into()),
                Missing::Env("B".into())
            ]))
        );
    }

    #[test]
    fn syntax_errors_give_a_position_not_the_text() {
        let Err(ExpandError::Syntax(SyntaxError(m))) = expand_plain("ab${SECRET", &env) else {
            panic!()
        };
        assert!(m.contains("character 3") && !m.contains("SECRET"), "{m}");
        assert!(check("${1X}", Dialect::PLAIN).is_err());
        assert!(check("${}", Dialect::PLAIN).is_err());
        assert!(check("${A B}", Dialect::PLAIN).is_err());
        assert!(check("${A_1}", Dialect::PLAIN).is_ok());
    }

    #[test]
    fn has_vars_sees_only_real_references() {
        assert!(has_vars("x${A}"));
        assert!(!has_vars("$${A}"));
        assert!(!has_vars("plain $"));
    }
}
