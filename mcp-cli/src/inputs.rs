//! VS Code's `${input:ID}` values: from `--input ID=VALUE`, else asked on
//! the terminal (once per run, a `password` input masked), else left out so
//! that resolving names the input and its description.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};
use std::sync::Mutex;

use mcp_stack_config::{InputKind, InputSpec, McpConfig, Secret};

use crate::term;

/// Values given on the command line, then those typed: one set per run.
static VALUES: Mutex<BTreeMap<String, Secret>> = Mutex::new(BTreeMap::new());

/// Takes the `--input ID=VALUE` flags; a flag without `=` is a usage error.
pub(crate) fn give(flags: &[String]) -> Result<(), String> {
    let mut values = VALUES.lock().unwrap_or_else(|e| e.into_inner());
    for flag in flags {
        let Some((id, value)) = flag.split_once('=') else {
            return Err(format!("--input {flag:?}: write ID=VALUE"));
        };
        // What is given for an input may be a key: never printed.
        term::keep_secret(value);
        values.insert(id.trim().to_owned(), Secret::new(value));
    }
    Ok(())
}

/// The values for the inputs `config` uses (with `only`, that server's):
/// given ones, then, on a terminal, each missing one asked once.
pub(crate) fn for_config(config: &McpConfig, only: Option<&str>) -> BTreeMap<String, Secret> {
    let interactive = std::io::stdin().is_terminal() && term::stderr_is_terminal();
    let mut values = VALUES.lock().unwrap_or_else(|e| e.into_inner());
    for spec in config.inputs_used(only) {
        if values.contains_key(&spec.id) || !interactive {
            continue;
        }
        if let Some(v) = ask(spec) {
            term::keep_secret(&v);
            values.insert(spec.id.clone(), Secret::new(v));
        }
    }
    values.clone()
}

/// For `mcp config check`: the given values, and a stand-in for each other
/// input (its default, or its first option), so that everything else is
/// checked without asking.
pub(crate) fn for_check(config: &McpConfig) -> BTreeMap<String, Secret> {
    let mut values = VALUES.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for spec in &config.inputs {
        if !values.contains_key(&spec.id) {
            let stand_in = spec
                .default
                .clone()
                .or_else(|| spec.options.first().cloned())
                .unwrap_or_else(|| "input".to_owned());
            values.insert(spec.id.clone(), Secret::new(stand_in));
        }
    }
    values
}

/// The question for one input, as the output stage prints it.
pub(crate) fn question(spec: &InputSpec) -> String {
    let what = spec.description.as_deref().unwrap_or(&spec.id);
    let mut q = format!("{what} (input {})", spec.id);
    if spec.kind == InputKind::PickString {
        q.push_str(&format!(" [{}]", spec.options.join(", ")));
    }
    if let Some(d) = &spec.default {
        q.push_str(&format!(" (default {d})"));
    }
    q.push_str(": ");
    q
}

/// Asks for one input on the terminal; `None` at end of input. An empty
/// answer takes the default; a pick not among the options is asked again.
fn ask(spec: &InputSpec) -> Option<String> {
    loop {
        term::prompt(&question(spec));
        let typed = if spec.password {
            read_masked()
        } else {
            read_line()
        }?;
        let answer = match (typed.is_empty(), &spec.default) {
            (true, Some(d)) => d.clone(),
            _ => typed,
        };
        if spec.kind == InputKind::PickString && !spec.options.contains(&answer) {
            term::errln!("pick one of: {}", spec.options.join(", "));
            continue;
        }
        return Some(answer);
    }
}

fn read_line() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

/// Reads a line with the terminal's echo off (`stty -echo` on the terminal
/// that is stdin), then turns it on again.
fn read_masked() -> Option<String> {
    let stty = |arg: &str| {
        std::process::Command::new("stty")
            .arg(arg)
            .stdin(std::process::Stdio::inherit())
            .status()
            .is_ok_and(|s| s.success())
    };
    let masked = stty("-echo");
    let line = read_line();
    if masked {
        stty("echo");
        term::prompt("\n");
    }
    line
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_question_names_the_input_its_options_and_default() {
        let text = r#"{"inputs": [
            {"type": "pickString", "id": "region", "description": "Region", "options": ["eu", "us"], "default": "eu"},
            {"type": "promptString", "id": "key", "password": true}
        ], "servers": {}}"#;
        let c = mcp_stack_config::parse_str(text, &mcp_stack_config::Options::new())
            .unwrap()
            .config;
        assert_eq!(
            question(&c.inputs[0]),
            "Region (input region) [eu, us] (default eu): "
        );
        assert_eq!(question(&c.inputs[1]), "key (input key): ");
        let stand_ins = for_check(&c);
        assert_eq!(stand_ins["region"].expose(), "eu");
        assert!(give(&["no-equals".to_owned()]).is_err());
    }
}
