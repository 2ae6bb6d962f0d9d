//! `command` as each client writes it: a string (most), a list of the
//! program and its arguments (OpenCode), or `{path, args, env}` (Zed's
//! older form).

use serde_json::{Map, Value};

use super::{Ck, join, sorted};
use crate::Secret;
use crate::model::ServerConfig;

pub(super) fn command(
    ck: &mut Ck,
    s: &mut ServerConfig,
    path: &str,
    v: &Value,
    record: &Map<String, Value>,
) {
    match v {
        Value::Array(_) => {
            if record.contains_key("args") {
                ck.error(
                    path,
                    "is a list (the program, then its arguments) and `args` is set too; keep one",
                );
                return;
            }
            let Some(list) = ck.string_list(path.to_owned(), v, true) else {
                return;
            };
            match list.split_first() {
                Some((program, args)) if !program.trim().is_empty() => {
                    s.command = Some(program.clone());
                    s.args = args.to_vec();
                }
                _ => ck.error(path, "must start with the program to run"),
            }
        }
        Value::Object(m) => {
            for other in ["args", "env"] {
                if record.contains_key(other) {
                    ck.error(
                        join(path, other),
                        format!("`{other}` is set both here and beside `command`; keep one"),
                    );
                }
            }
            for (key, val) in sorted(m) {
                let p = join(path, key);
                match key.as_str() {
                    "path" => s.command = ck.template(p, val),
                    "args" => s.args = ck.string_list(p, val, true).unwrap_or_default(),
                    "env" => {
                        let Some(env) =
                            ck.object(&p, val, "an object of variable names to string values")
                        else {
                            continue;
                        };
                        for (name, value) in sorted(env) {
                            if let Some(value) = ck.template(join(&p, name), value) {
                                s.env.insert(name.clone(), Secret::new(value));
                            }
                        }
                    }
                    _ => ck.warn(
                        p,
                        format!("unknown key `{}` is ignored", key.escape_debug()),
                    ),
                }
            }
            if s.command.as_deref().is_none_or(|c| c.trim().is_empty()) {
                ck.error(path, "needs a `path`: the program to run");
            }
        }
        Value::String(_) => {
            if let Some(c) = ck.template(path.to_owned(), v) {
                if c.trim().is_empty() {
                    ck.error(path, "must not be empty");
                } else {
                    s.command = Some(c);
                }
            }
        }
        other => ck.wrong_type(path.to_owned(), "a string", other),
    }
}
