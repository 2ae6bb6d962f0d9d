//! The prompts (`prompts/list`, `prompts/get`) and the completion of their
//! arguments (`completion/complete` with `ref/prompt`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use mcp_stack_protocol::types::{
    Completion, Content, Extra, GetPromptResult, Prompt, PromptArgument, PromptMessage,
};

use crate::outbox::ProtocolError;
use crate::resources::{NAMES, complete};

/// The names of the prompts, in `prompts/list` order.
pub const PROMPT_NAMES: &[&str] = &["greeting", "review", "scaffold"];

/// The styles completion offers for `review`'s `style`.
pub(crate) const STYLES: &[&str] = &["concise", "detailed", "friendly"];

/// The frameworks completion offers for `scaffold`'s `framework`, and the
/// languages each is written in (what `language` offers once the
/// framework is in `context.arguments`).
const FRAMEWORKS: &[(&str, &[&str])] = &[
    ("django", &["python"]),
    ("express", &["javascript", "typescript"]),
    ("fastapi", &["python"]),
    ("flask", &["python"]),
    ("nextjs", &["javascript", "typescript"]),
    ("rails", &["ruby"]),
    ("spring", &["java", "kotlin"]),
];

/// Every language of [`FRAMEWORKS`], what `language` offers without a framework.
const LANGUAGES: &[&str] = &[
    "java",
    "javascript",
    "kotlin",
    "python",
    "ruby",
    "typescript",
];

fn argument(name: &str, description: &str, required: bool) -> PromptArgument {
    PromptArgument {
        description: Some(description.to_owned()),
        ..PromptArgument::new(name, required)
    }
}

/// The prompts, in order ([`PROMPT_NAMES`]).
pub(crate) static DEFINITIONS: LazyLock<Vec<Prompt>> = LazyLock::new(|| {
    vec![
        Prompt {
            title: Some("Greeting".to_owned()),
            description: Some("Greets someone by name.".to_owned()),
            arguments: Some(vec![argument("name", "Who to greet.", true)]),
            ..Prompt::new("greeting")
        },
        Prompt {
            title: Some("Code review".to_owned()),
            description: Some("Asks for a review of some code.".to_owned()),
            arguments: Some(vec![
                argument("code", "The code to review.", true),
                argument("style", "concise, detailed or friendly.", false),
            ]),
            ..Prompt::new("review")
        },
        Prompt {
            title: Some("Scaffold a project".to_owned()),
            description: Some(
                "Asks for a new project; the languages offered for `language` depend on \
                 the `framework` chosen."
                    .to_owned(),
            ),
            arguments: Some(vec![
                argument("framework", "The framework (django, flask, rails …).", true),
                argument(
                    "language",
                    "The language, one the framework is written in.",
                    true,
                ),
            ]),
            ..Prompt::new("scaffold")
        },
    ]
});

fn message(role: &str, text: String) -> PromptMessage {
    PromptMessage {
        role: role.to_owned(),
        content: Content::text(text),
        extra: Extra::new(),
    }
}

/// `prompts/get`: the prompt's messages; `-32602` naming an unknown prompt
/// or the first required argument missing.
pub(crate) fn get(
    name: &str,
    arguments: &BTreeMap<String, String>,
) -> Result<GetPromptResult, ProtocolError> {
    let Some(prompt) = DEFINITIONS.iter().find(|p| p.name == name) else {
        return Err(ProtocolError::invalid_field(
            "name",
            format!("unknown prompt {name:?}; prompts/list shows the prompts"),
        ));
    };
    for arg in prompt.arguments.as_deref().unwrap_or_default() {
        if arg.required == Some(true) && !arguments.contains_key(&arg.name) {
            return Err(ProtocolError::invalid_field(
                format!("arguments.{}", arg.name),
                format!("required: prompt {name:?} needs argument {:?}", arg.name),
            ));
        }
    }
    let value = |key: &str| arguments.get(key).map(String::as_str).unwrap_or_default();
    let messages = match name {
        "greeting" => vec![message("user", format!("Hello, {}!", value("name")))],
        "review" => {
            let style = arguments.get("style").map_or("", |s| s.as_str());
            let how = if style.is_empty() {
                String::new()
            } else {
                format!(" in a {style} style")
            };
            vec![
                message(
                    "user",
                    format!("Please review this code{how}:\n\n{}", value("code")),
                ),
                message(
                    "assistant",
                    "Sure. I will look at correctness first, then readability.".to_owned(),
                ),
            ]
        }
        _ => vec![message(
            "user",
            format!(
                "Scaffold a new {} project in {}.",
                value("framework"),
                value("language")
            ),
        )],
    };
    Ok(GetPromptResult {
        description: prompt.description.clone(),
        messages,
        extra: Extra::new(),
    })
}

/// Completion of a prompt's argument: `value` is what was typed,
/// `context` the arguments already chosen. `-32602` for an unknown prompt
/// or argument; an argument without suggestions gets none.
pub(crate) fn complete_argument(
    prompt: &str,
    argument: &str,
    value: &str,
    context: &BTreeMap<String, String>,
) -> Result<Completion, ProtocolError> {
    let Some(definition) = DEFINITIONS.iter().find(|p| p.name == prompt) else {
        return Err(ProtocolError::invalid_field(
            "ref.name",
            format!("unknown prompt {prompt:?}; prompts/list shows the prompts"),
        ));
    };
    let declared = definition
        .arguments
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|a| a.name == argument);
    if !declared {
        return Err(ProtocolError::invalid_field(
            "argument.name",
            format!("prompt {prompt:?} has no argument {argument:?}"),
        ));
    }
    let listed = |list: &'static [&'static str]| list.iter().map(|s| Cow::Borrowed(*s));
    Ok(match (prompt, argument) {
        ("greeting", "name") => complete(listed(NAMES), value),
        ("review", "style") => complete(listed(STYLES), value),
        ("scaffold", "framework") => complete(FRAMEWORKS.iter().map(|(f, _)| (*f).into()), value),
        ("scaffold", "language") => {
            let languages = context
                .get("framework")
                .and_then(|chosen| FRAMEWORKS.iter().find(|(f, _)| f == chosen))
                .map_or(LANGUAGES, |(_, languages)| *languages);
            complete(listed(languages), value)
        }
        _ => complete(std::iter::empty(), value),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn definitions_match_names() {
        let names: Vec<&str> = DEFINITIONS.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, PROMPT_NAMES);
        // Every language a framework offers is offered without one.
        for (_, languages) in FRAMEWORKS {
            for l in *languages {
                assert!(LANGUAGES.contains(l), "{l}");
            }
        }
    }

    #[test]
    fn prompts_fill_in_their_arguments() {
        let r = get("greeting", &args(&[("name", "bob")])).unwrap();
        assert_eq!(r.messages.len(), 1);
        assert_eq!(r.messages[0].role, "user");
        assert_eq!(
            serde_json::to_value(&r.messages[0].content).unwrap()["text"],
            "Hello, bob!"
        );
        let r = get("review", &args(&[("code", "x"), ("style", "concise")])).unwrap();
        assert_eq!(r.messages.len(), 2);
        let text = serde_json::to_value(&r.messages[0].content).unwrap()["text"].clone();
        assert_eq!(text, "Please review this code in a concise style:\n\nx");

        let e = format!("{:?}", get("review", &args(&[("style", "x")])).unwrap_err());
        assert!(e.contains("arguments.code"), "{e}");
        let e = format!("{:?}", get("nope", &args(&[])).unwrap_err());
        assert!(e.contains("unknown prompt"), "{e}");
    }

    #[test]
    fn completion_depends_on_context() {
        let none = args(&[]);
        let c = complete_argument("review", "style", "", &none).unwrap();
        assert_eq!(c.values, STYLES);
        let c = complete_argument("review", "style", "DE", &none).unwrap();
        assert_eq!(c.values, ["detailed"]);
        let c = complete_argument("scaffold", "language", "", &none).unwrap();
        assert_eq!(c.values, LANGUAGES);
        let flask = args(&[("framework", "flask")]);
        let c = complete_argument("scaffold", "language", "", &flask).unwrap();
        assert_eq!(c.values, ["python"]);
        let c = complete_argument("scaffold", "language", "j", &flask).unwrap();
        assert!(c.values.is_empty());
        assert_eq!((c.total, c.has_more), (Some(0), Some(false)));
        let c = complete_argument("review", "code", "f", &none).unwrap();
        assert!(c.values.is_empty());
        assert!(complete_argument("review", "colour", "", &none).is_err());
        assert!(complete_argument("nope", "x", "", &none).is_err());
    }
}
