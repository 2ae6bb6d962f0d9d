//! Resources, prompts and completion: `resources/list`,
//! `resources/templates/list`, `resources/read`, `resources/subscribe` and
//! `resources/unsubscribe` (before 2026-07-28), `prompts/list`,
//! `prompts/get` and `completion/complete`. Lists page like `tools/list`;
//! a 2026-07-28 answer says it is complete and, where the spec asks, how
//! long it may be cached.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_stack_jsonrpc::RawJson;
use mcp_stack_protocol::codes;
use mcp_stack_protocol::request::{self, Request as _};
use mcp_stack_protocol::results::{CacheHints, ResultType};
use mcp_stack_protocol::types::{
    CompleteParams, CompleteResult, CompletionReference, EmptyResult, Extra, GetPromptParams,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedParams, ReadResourceResult, ResourceParams,
};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::Server;
use super::params::{Presence, expect, typed};
use super::tools_list::{LIST_CACHE, page, parse_list};
use crate::outbox::{ProtocolError, raw};
use crate::{prompts, resources};

/// How long a modern client may keep a resource list or a read: not at
/// all, since `touch_resource` and `add_resource` change them.
const CHANGING: CacheHints = CacheHints {
    ttl: Duration::ZERO,
    private: false,
};

/// A 2026-07-28 result says it is complete; `cache` adds its hints.
fn finish<T: Serialize>(
    mut result: T,
    extra: impl FnOnce(&mut T) -> &mut Extra,
    discover: bool,
    cache: Option<CacheHints>,
) -> Result<RawJson, ProtocolError> {
    if discover {
        let fields = extra(&mut result);
        ResultType::Complete.write(fields);
        if let Some(cache) = cache {
            cache.write(fields);
        }
    }
    raw(&result)
}

/// `resources/read`'s (and subscribe's) params: a `uri` string.
fn parse_resource(params: Map<String, Value>) -> Result<ResourceParams, ProtocolError> {
    typed(params, |p| {
        expect(p, "uri", Presence::Required, Value::is_string, "a string")
    })
}

/// `prompts/get`'s params: a `name`, and `arguments` of string values.
fn parse_get_prompt(params: Map<String, Value>) -> Result<GetPromptParams, ProtocolError> {
    typed(params, |p| {
        expect(p, "name", Presence::Required, Value::is_string, "a string").or_else(|| {
            let Some(Value::Object(args)) = p.get("arguments") else {
                return expect(
                    p,
                    "arguments",
                    Presence::Optional,
                    Value::is_object,
                    "an object",
                );
            };
            args.iter().find(|(_, v)| !v.is_string()).map(|(k, _)| {
                ProtocolError::invalid_field(format!("arguments.{k}"), "expected a string")
            })
        })
    })
}

/// `completion/complete`'s params: `ref` (a prompt or a resource
/// template), `argument` (`name` and `value`), and `context`.
fn parse_complete(params: Map<String, Value>) -> Result<CompleteParams, ProtocolError> {
    typed(params, |p| {
        let reference = p.get("ref").and_then(Value::as_object);
        let argument = p.get("argument").and_then(Value::as_object);
        let object = |field| expect(p, field, Presence::Required, Value::is_object, "an object");
        let string = |map: &Map<String, Value>, at: &str, field: &str| {
            expect(map, field, Presence::Required, Value::is_string, "a string").map(|_| {
                ProtocolError::invalid_field(format!("{at}.{field}"), "required: a string")
            })
        };
        object("ref")
            .or_else(|| {
                let reference = reference?;
                match reference.get("type").and_then(Value::as_str) {
                    Some("ref/prompt") => string(reference, "ref", "name"),
                    Some("ref/resource") => string(reference, "ref", "uri"),
                    _ => Some(ProtocolError::invalid_field(
                        "ref.type",
                        "expected \"ref/prompt\" or \"ref/resource\"",
                    )),
                }
            })
            .or_else(|| object("argument"))
            .or_else(|| {
                let argument = argument?;
                string(argument, "argument", "name")
                    .or_else(|| string(argument, "argument", "value"))
            })
            .or_else(|| {
                expect(
                    p,
                    "context",
                    Presence::Optional,
                    Value::is_object,
                    "an object",
                )
            })
    })
}

/// The error for a URI this server has no resource at: `-32002` before
/// 2026-07-28, `-32602` in it (the spec's change), `data.uri` either way.
fn not_found(uri: &str, discover: bool) -> ProtocolError {
    let code = if discover {
        mcp_stack_jsonrpc::codes::INVALID_PARAMS
    } else {
        codes::RESOURCE_NOT_FOUND
    };
    ProtocolError::with_data(code, "Resource not found", json!({"uri": uri}))
}

impl Server {
    /// Answers one of the methods of this module; `None` for any other.
    pub(super) async fn feature(
        &self,
        method: &str,
        params: Result<Map<String, Value>, ProtocolError>,
        discover: bool,
    ) -> Option<Result<RawJson, ProtocolError>> {
        Some(match method {
            request::ResourcesList::METHOD => params
                .and_then(parse_list)
                .and_then(|p| self.list_resources(&p, discover)),
            request::ResourcesTemplatesList::METHOD => params
                .and_then(parse_list)
                .and_then(|p| self.list_templates(&p, discover)),
            request::ResourcesRead::METHOD => params
                .and_then(parse_resource)
                .and_then(|p| self.read_resource(&p.uri, discover)),
            request::ResourcesSubscribe::METHOD | request::ResourcesUnsubscribe::METHOD
                if discover =>
            {
                Err(ProtocolError::method_not_found(
                    method,
                    " (2026-07-28 replaced it with subscriptions/listen and resourceSubscriptions)",
                ))
            }
            request::ResourcesSubscribe::METHOD | request::ResourcesUnsubscribe::METHOD => {
                params.and_then(parse_resource).and_then(|p| {
                    let on = method == request::ResourcesSubscribe::METHOD;
                    if on && !self.world.exists(&p.uri) {
                        return Err(not_found(&p.uri, false));
                    }
                    self.world.subscribe(self.conn, &self.outbox, &p.uri, on);
                    raw(&EmptyResult::default())
                })
            }
            request::PromptsList::METHOD => params
                .and_then(parse_list)
                .and_then(|p| self.list_prompts(&p, discover)),
            request::PromptsGet::METHOD => params.and_then(parse_get_prompt).and_then(|p| {
                let arguments = p.arguments.unwrap_or_default();
                let result: GetPromptResult = prompts::get(&p.name, &arguments)?;
                finish(result, |r| &mut r.extra, discover, None)
            }),
            request::CompletionComplete::METHOD => params
                .and_then(parse_complete)
                .and_then(|p| self.complete(p, discover)),
            _ => return None,
        })
    }

    fn list_resources(
        &self,
        params: &PaginatedParams,
        discover: bool,
    ) -> Result<RawJson, ProtocolError> {
        let (range, next_cursor) = page(
            params.cursor.as_deref(),
            self.world.len(),
            self.options().page_size,
        )?;
        let result = ListResourcesResult {
            resources: range.filter_map(|i| self.world.resource_at(i)).collect(),
            next_cursor,
            extra: Extra::new(),
        };
        finish(result, |r| &mut r.extra, discover, Some(CHANGING))
    }

    fn list_templates(
        &self,
        params: &PaginatedParams,
        discover: bool,
    ) -> Result<RawJson, ProtocolError> {
        let all = resources::templates();
        let (range, next_cursor) = page(
            params.cursor.as_deref(),
            all.len(),
            self.options().page_size,
        )?;
        let result = ListResourceTemplatesResult {
            resource_templates: all.get(range).unwrap_or_default().to_vec(),
            next_cursor,
            extra: Extra::new(),
        };
        finish(result, |r| &mut r.extra, discover, Some(LIST_CACHE))
    }

    fn read_resource(&self, uri: &str, discover: bool) -> Result<RawJson, ProtocolError> {
        let contents = self
            .world
            .read(uri)
            .ok_or_else(|| not_found(uri, discover))?;
        let result = ReadResourceResult {
            contents: vec![contents],
            extra: Extra::new(),
        };
        finish(result, |r| &mut r.extra, discover, Some(CHANGING))
    }

    fn list_prompts(
        &self,
        params: &PaginatedParams,
        discover: bool,
    ) -> Result<RawJson, ProtocolError> {
        let all = &*prompts::DEFINITIONS;
        let (range, next_cursor) = page(
            params.cursor.as_deref(),
            all.len(),
            self.options().page_size,
        )?;
        let result = ListPromptsResult {
            prompts: all.get(range).unwrap_or_default().to_vec(),
            next_cursor,
            extra: Extra::new(),
        };
        finish(result, |r| &mut r.extra, discover, Some(LIST_CACHE))
    }

    fn complete(&self, params: CompleteParams, discover: bool) -> Result<RawJson, ProtocolError> {
        let context: BTreeMap<String, String> =
            params.context.and_then(|c| c.arguments).unwrap_or_default();
        let argument = &params.argument;
        let completion = match &params.reference {
            CompletionReference::Prompt { name } => {
                prompts::complete_argument(name, &argument.name, &argument.value, &context)?
            }
            CompletionReference::Resource { uri } => {
                if !resources::World::has_template(uri) {
                    return Err(ProtocolError::invalid_field(
                        "ref.uri",
                        format!(
                            "no resource template {uri:?}; resources/templates/list shows them"
                        ),
                    ));
                }
                self.world
                    .complete_template(uri, &argument.name, &argument.value)
                    .ok_or_else(|| {
                        ProtocolError::invalid_field(
                            "argument.name",
                            format!("the template {uri:?} has no variable {:?}", argument.name),
                        )
                    })?
            }
            _ => {
                return Err(ProtocolError::invalid_field(
                    "ref.type",
                    "expected \"ref/prompt\" or \"ref/resource\"",
                ));
            }
        };
        let result = CompleteResult {
            completion,
            extra: Extra::new(),
        };
        finish(result, |r| &mut r.extra, discover, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    fn field_of(e: &ProtocolError) -> String {
        format!("{e:?}")
    }

    #[test]
    fn misfits_name_the_field() {
        let e = parse_get_prompt(map(json!({"arguments": {}}))).unwrap_err();
        assert!(field_of(&e).contains("name: required"), "{e:?}");
        let e = parse_get_prompt(map(json!({"name": "greeting", "arguments": {"name": 5}})))
            .unwrap_err();
        assert!(
            field_of(&e).contains("arguments.name: expected a string"),
            "{e:?}"
        );
        let e = parse_resource(map(json!({"uri": 1}))).unwrap_err();
        assert!(field_of(&e).contains("uri: expected a string"), "{e:?}");
        let e = parse_complete(map(json!({"argument": {"name": "a", "value": ""}}))).unwrap_err();
        assert!(field_of(&e).contains("ref: required"), "{e:?}");
        let e = parse_complete(map(json!({"ref": {"type": "ref/tool", "name": "x"},
            "argument": {"name": "a", "value": ""}})))
        .unwrap_err();
        assert!(field_of(&e).contains("ref.type"), "{e:?}");
        let e = parse_complete(map(json!({"ref": {"type": "ref/prompt", "name": "x"},
            "argument": {"name": "a"}})))
        .unwrap_err();
        assert!(field_of(&e).contains("argument.value"), "{e:?}");
        let ok = parse_complete(map(json!({"ref": {"type": "ref/resource", "uri": "u"},
            "argument": {"name": "a", "value": "b"}, "context": {"arguments": {"x": "y"}}})))
        .unwrap();
        assert_eq!(ok.argument.value, "b");
    }

    #[test]
    fn not_found_depends_on_the_revision() {
        let legacy = format!("{:?}", not_found("test://x", false));
        assert!(
            legacy.contains("-32002") && legacy.contains("test://x"),
            "{legacy}"
        );
        let discover = format!("{:?}", not_found("test://x", true));
        assert!(discover.contains("-32602"), "{discover}");
    }
}
