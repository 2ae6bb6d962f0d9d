//! Elicitation on a terminal: when a server asks the user something during
//! `mcp call`, the user is asked, field by field (form mode), or shown the
//! URL to open (URL mode). Without a terminal (or with `--json`) every
//! request is declined: nobody is there to answer.

use std::io::{BufRead as _, IsTerminal as _};

use mcp_stack_session::Elicitor;
use mcp_stack_session::types::{ElicitRequestParams, ElicitResult};
use mcp_stack_transport::BoxFuture;
use serde_json::{Map, Value, json};

use crate::output::printable;
use crate::term::{self, errln};

/// Asks on the terminal, or declines when there is none.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TerminalElicitor {
    interactive: bool,
}

impl TerminalElicitor {
    /// Interactive when stdin and stderr are terminals and `--json` is off.
    pub(crate) fn new(json: bool) -> Self {
        TerminalElicitor {
            interactive: !json && std::io::stdin().is_terminal() && term::stderr_is_terminal(),
        }
    }
}

fn answer(action: &str, content: Option<Map<String, Value>>) -> ElicitResult {
    let mut v = json!({ "action": action });
    if let (Some(c), Some(map)) = (content, v.as_object_mut()) {
        map.insert("content".into(), Value::Object(c));
    }
    serde_json::from_value(v).unwrap_or_else(|_| ElicitResult {
        action: action.to_owned(),
        content: None,
        extra: Map::new(),
    })
}

/// Reads one line from the terminal (`None` at end of input).
fn read_line(prompt: &str) -> Option<String> {
    term::prompt(prompt);
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

/// One field's value from what was typed, by the property's schema; an
/// empty answer takes the default (or leaves the field out).
pub(crate) fn parse_field(property: &Value, typed: &str) -> Result<Option<Value>, String> {
    let typed = typed.trim();
    if typed.is_empty() {
        return Ok(property.get("default").cloned());
    }
    if let Some(options) = property.get("enum").and_then(Value::as_array) {
        return match options.iter().find(|o| o.as_str() == Some(typed)) {
            Some(o) => Ok(Some(o.clone())),
            None => Err(format!(
                "choose one of: {}",
                options
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
    }
    match property.get("type").and_then(Value::as_str) {
        Some("boolean") => match typed.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Some(Value::Bool(true))),
            "n" | "no" | "false" => Ok(Some(Value::Bool(false))),
            _ => Err("answer yes or no".into()),
        },
        Some("integer") => typed
            .parse::<i64>()
            .map(|n| Some(json!(n)))
            .map_err(|_| "a whole number, please".into()),
        Some("number") => typed
            .parse::<f64>()
            .ok()
            .and_then(|n| serde_json::Number::from_f64(n).map(|n| Some(Value::Number(n))))
            .ok_or_else(|| "a number, please".into()),
        _ => Ok(Some(Value::String(typed.to_owned()))),
    }
}

fn ask_form(request: &ElicitRequestParams) -> ElicitResult {
    errln!("\nThe server asks: {}", printable(&request.message));
    let schema = request.requested_schema.clone().unwrap_or(Value::Null);
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    errln!("(an empty answer keeps the default; type !decline or !cancel to refuse)");
    let mut content = Map::new();
    for (name, property) in properties {
        let title = property
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(name);
        let mut prompt = printable(title);
        if let Some(d) = property.get("description").and_then(Value::as_str) {
            prompt.push_str(&format!(" ({})", printable(d)));
        }
        if let Some(d) = property.get("default") {
            prompt.push_str(&format!(" [{}]", printable(&d.to_string())));
        }
        if required.contains(&name.as_str()) {
            prompt.push('*');
        }
        prompt.push_str(": ");
        loop {
            let Some(typed) = read_line(&prompt) else {
                return answer("cancel", None);
            };
            match typed.trim() {
                "!decline" => return answer("decline", None),
                "!cancel" => return answer("cancel", None),
                _ => {}
            }
            match parse_field(property, &typed) {
                Ok(Some(v)) => {
                    content.insert(name.clone(), v);
                    break;
                }
                Ok(None) if !required.contains(&name.as_str()) => break,
                Ok(None) => errln!("  this field is required"),
                Err(why) => errln!("  {}", printable(&why)),
            }
        }
    }
    match read_line("Send these answers? [Y/n] ") {
        Some(a) if a.trim().is_empty() || a.trim().eq_ignore_ascii_case("y") => {
            answer("accept", Some(content))
        }
        Some(_) => answer("decline", None),
        None => answer("cancel", None),
    }
}

fn ask_url(request: &ElicitRequestParams) -> ElicitResult {
    let url = request.url.as_deref().unwrap_or_default();
    let host = url
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(rest))
        .unwrap_or(url);
    errln!(
        "\nThe server asks you to visit {}: {}",
        printable(host),
        printable(&request.message)
    );
    errln!("  {}", printable(url));
    match read_line("Open it and continue? [y/N] ") {
        Some(a) if a.trim().eq_ignore_ascii_case("y") => answer("accept", None),
        Some(_) => answer("decline", None),
        None => answer("cancel", None),
    }
}

impl Elicitor for TerminalElicitor {
    fn handles_urls(&self) -> bool {
        true
    }

    fn elicit<'a>(&'a self, request: &'a ElicitRequestParams) -> BoxFuture<'a, ElicitResult> {
        let interactive = self.interactive;
        let request = request.clone();
        Box::pin(async move {
            if !interactive {
                return answer("decline", None);
            }
            let url_mode = request.mode.as_deref() == Some("url");
            tokio::task::spawn_blocking(move || {
                if url_mode {
                    ask_url(&request)
                } else {
                    ask_form(&request)
                }
            })
            .await
            .unwrap_or_else(|_| answer("cancel", None))
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn typed_answers_follow_the_schema() {
        let b = json!({"type": "boolean"});
        assert_eq!(parse_field(&b, "yes").unwrap(), Some(json!(true)));
        assert!(parse_field(&b, "maybe").is_err());
        let i = json!({"type": "integer", "default": 3});
        assert_eq!(parse_field(&i, "").unwrap(), Some(json!(3)));
        assert_eq!(parse_field(&i, "42").unwrap(), Some(json!(42)));
        assert!(parse_field(&i, "4.5").is_err());
        let e = json!({"type": "string", "enum": ["a", "b"]});
        assert_eq!(parse_field(&e, "b").unwrap(), Some(json!("b")));
        assert!(parse_field(&e, "c").unwrap_err().contains("a, b"));
        let s = json!({"type": "string"});
        assert_eq!(parse_field(&s, "").unwrap(), None);
        assert_eq!(parse_field(&s, " Ada ").unwrap(), Some(json!("Ada")));
    }

    #[tokio::test]
    async fn without_a_terminal_every_request_is_declined() {
        let e = TerminalElicitor { interactive: false };
        let r = ElicitRequestParams::form("who?", json!({"type": "object"}));
        assert_eq!(e.elicit(&r).await.action, "decline");
    }
}
