//! VS Code's `inputs`: the values `${input:ID}` stands for.

use serde_json::Value;

use super::{Ck, join, kind, sorted};
use crate::model::{InputKind, InputSpec};

/// Reads the `inputs` list at `path`.
pub(super) fn inputs(ck: &mut Ck, path: &str, v: &Value) -> Vec<InputSpec> {
    let Value::Array(items) = v else {
        ck.wrong_type(path.to_owned(), "a list of inputs", v);
        return Vec::new();
    };
    let mut out: Vec<InputSpec> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let Some(m) = ck.object(&p, item, "an input (`type`, `id`, `description`)") else {
            continue;
        };
        let mut spec = InputSpec {
            id: String::new(),
            kind: InputKind::PromptString,
            description: None,
            password: false,
            options: Vec::new(),
            default: None,
        };
        let mut supported = true;
        for (key, val) in sorted(m) {
            let kp = join(&p, key);
            match key.as_str() {
                "id" => spec.id = ck.string(kp, val).unwrap_or_default().to_owned(),
                "type" => match ck.string(kp.clone(), val) {
                    Some("promptString") => spec.kind = InputKind::PromptString,
                    Some("pickString") => spec.kind = InputKind::PickString,
                    Some(other) => {
                        supported = false;
                        ck.warn(
                            kp,
                            format!(
                                "input type `{}` is not supported (only promptString and pickString); a server using it cannot be resolved",
                                other.escape_debug()
                            ),
                        );
                    }
                    None => {}
                },
                "description" => spec.description = ck.string(kp, val).map(str::to_owned),
                "password" => spec.password = ck.boolean(kp, val).unwrap_or(false),
                "default" => spec.default = ck.string(kp, val).map(str::to_owned),
                "options" => spec.options = options(ck, &kp, val),
                _ => ck.warn(
                    kp,
                    format!("unknown key `{}` is ignored", key.escape_debug()),
                ),
            }
        }
        if spec.id.is_empty() {
            ck.error(&p, "needs an `id` (what `${input:ID}` names)");
            continue;
        }
        if out.iter().any(|o| o.id == spec.id) {
            ck.error(
                join(&p, "id"),
                format!("repeats the input id `{}`", spec.id),
            );
            continue;
        }
        if spec.kind == InputKind::PickString {
            if spec.options.is_empty() {
                ck.error(&p, "a pickString input needs `options` to pick from");
            }
            if let Some(d) = &spec.default
                && !spec.options.contains(d)
            {
                ck.error(join(&p, "default"), "is not one of the `options`");
            }
        }
        if supported {
            out.push(spec);
        }
    }
    out
}

/// `options`: strings, or `{label, value}` objects (the value is what is used).
fn options(ck: &mut Ck, path: &str, v: &Value) -> Vec<String> {
    let Value::Array(items) = v else {
        ck.wrong_type(path.to_owned(), "a list of options", v);
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        match item {
            Value::String(s) => out.push(s.clone()),
            Value::Object(m) => match m.get("value") {
                Some(Value::String(s)) => out.push(s.clone()),
                _ => ck.error(p, "an option object needs a string `value`"),
            },
            other => ck.error(
                p,
                format!(
                    "must be a string or {{label, value}}, found {}",
                    kind(other)
                ),
            ),
        }
    }
    out
}
