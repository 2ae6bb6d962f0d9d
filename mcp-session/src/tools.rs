//! The tool catalog and JSON Schema checks of arguments and structured output.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::error::SchemaProblem;
use crate::intern::Interner;
#[cfg(feature = "validation")]
use crate::simple_schema::SimpleSchema;

/// The tools of every catalog of the process, each kept once.
static TOOLS: Interner<CatalogTool> = Interner::new();
use mcp_stack_protocol::types::Tool;
use mcp_stack_protocol::x_mcp_header::{self as headers, HeaderParam};

/// How many problems a validation report keeps; the rest are counted.
#[cfg(feature = "validation")]
const MAX_PROBLEMS: usize = 16;

/// A compiled schema, or why it could not be compiled.
type Compiled = Result<Validator, String>;

#[cfg(feature = "validation")]
type Validator = jsonschema::Validator;

/// Built without the `validation` feature: no schema ever compiles.
#[cfg(not(feature = "validation"))]
#[derive(Debug)]
enum Validator {}

/// The tools a server offers, as of the last `tools/list`.
///
/// Validators for each tool's input and output schemas are compiled on first
/// use and kept with the tool, so a tool's schema is compiled once however
/// often it is called. Identical tools are shared by every catalog of the
/// process that lists them (many agent sessions connect the same servers):
/// one copy of the tool and one compiled schema, however many connections.
#[derive(Debug, Default)]
pub struct ToolCatalog {
    tools: Vec<Arc<CatalogTool>>,
    /// Indexes of `tools`, sorted by name (a binary search finds a tool; no
    /// second copy of the names).
    by_name: Box<[u32]>,
    diagnostics: Vec<String>,
}

/// One tool, with its compiled validators.
pub struct CatalogTool {
    tool: Arc<Tool>,
    input: SchemaCheck,
    output: SchemaCheck,
    header_params: OnceLock<Vec<HeaderParam>>,
}

impl fmt::Debug for CatalogTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogTool")
            .field("name", &self.tool.name)
            .finish_non_exhaustive()
    }
}

/// What checking a value against a schema found.
#[derive(Debug, PartialEq, Eq)]
// Which variants a build constructs depends on the `validation` feature.
#[cfg_attr(not(feature = "validation"), allow(dead_code))]
pub(crate) enum Checked {
    Valid,
    Invalid(Vec<SchemaProblem>),
    /// The schema itself could not be compiled (a remote `$ref`, say): the
    /// value was not checked.
    Unchecked(String),
    /// This build checks no schemas (the `validation` feature is off): the
    /// application validates elsewhere.
    #[cfg_attr(feature = "validation", allow(dead_code))]
    Disabled,
}

/// Why nothing is checked in a build without the `validation` feature.
#[cfg(not(feature = "validation"))]
const DISABLED: &str = "built without the `validation` feature";

#[cfg(not(feature = "validation"))]
fn compile(_schema: &Value) -> Compiled {
    Err(DISABLED.to_string())
}

#[cfg(feature = "validation")]
fn compile(schema: &Value) -> Compiled {
    // No `$schema`: JSON Schema 2020-12 (the library's default). A named draft
    // (draft-07, say) is honoured. The crate is built without its HTTP and
    // file resolvers, so a remote `$ref` is never fetched: it fails to compile.
    jsonschema::options()
        .build(schema)
        .map_err(|e| format!("the schema cannot be used: {e}"))
}

/// `arguments` without its top-level `null` members that the schema does
/// not list as `required`; `None` when there are none.
pub(crate) fn without_optional_nulls(schema: &Value, arguments: &Value) -> Option<Value> {
    let Value::Object(args) = arguments else {
        return None;
    };
    let required = |key: &str| {
        schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key)))
    };
    let optional_null = |(k, v): (&String, &Value)| v.is_null() && !required(k);
    if !args.iter().any(optional_null) {
        return None;
    }
    let kept = args
        .iter()
        .filter(|entry| !optional_null(*entry))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some(Value::Object(kept))
}

#[cfg(not(feature = "validation"))]
fn check(compiled: &Compiled, _value: &Value) -> Checked {
    match compiled {
        Ok(never) => match *never {},
        Err(_) => Checked::Disabled,
    }
}

#[cfg(feature = "validation")]
fn check(compiled: &Compiled, value: &Value) -> Checked {
    match compiled {
        // The common case asks the validator's short-circuit path, which
        // builds no error iterator; only invalid input pays for the report.
        Ok(v) if v.is_valid(value) => Checked::Valid,
        Ok(v) => {
            let mut problems = Vec::new();
            let mut more = 0usize;
            for e in v.iter_errors(value) {
                if problems.len() < MAX_PROBLEMS {
                    problems.push(SchemaProblem {
                        path: e.instance_path().to_string(),
                        message: e.to_string(),
                    });
                } else {
                    more += 1;
                }
            }
            if problems.is_empty() {
                Checked::Valid
            } else {
                if more > 0 {
                    problems.push(SchemaProblem {
                        path: String::new(),
                        message: format!("… and {more} more problems"),
                    });
                }
                Checked::Invalid(problems)
            }
        }
        Err(why) => Checked::Unchecked(why.clone()),
    }
}

/// Checks one value against a schema, compiled for this check alone (an
/// elicitation answer against its requested schema).
pub(crate) fn check_once(schema: &Value, value: &Value) -> Checked {
    check(&compile(schema), value)
}

/// What a value checked against a schema is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checking {
    /// Tool arguments: a top-level `null` the schema does not require
    /// counts as absent.
    Arguments,
    /// Structured content, checked as given.
    Content,
}

/// The checks of one schema, each made on first use: the hand check of
/// the common shape (`simple_schema.rs`), then the compiled validator for
/// whatever that does not accept (it decides, and reports).
#[derive(Default)]
struct SchemaCheck {
    /// The schema as a simple one, when it is (most input schemas are).
    /// Boxed: a catalog keeps two per tool, many never used.
    #[cfg(feature = "validation")]
    simple: OnceLock<Option<Box<SimpleSchema>>>,
    compiled: OnceLock<Compiled>,
}

impl SchemaCheck {
    fn check(&self, schema: &Value, value: &Value, checking: Checking) -> Checked {
        #[cfg(feature = "validation")]
        if let Some(simple) = self
            .simple
            .get_or_init(|| SimpleSchema::of(schema).map(Box::new))
        {
            let accepted = match checking {
                Checking::Arguments => simple.accepts_arguments(value),
                Checking::Content => simple.accepts(value),
            };
            if accepted {
                return Checked::Valid;
            }
        }
        let compiled = self.compiled.get_or_init(|| compile(schema));
        let stripped = match checking {
            Checking::Arguments => without_optional_nulls(schema, value),
            Checking::Content => None,
        };
        check(compiled, stripped.as_ref().unwrap_or(value))
    }
}

impl CatalogTool {
    fn new(tool: Tool) -> Self {
        CatalogTool {
            tool: Arc::new(tool),
            input: SchemaCheck::default(),
            output: SchemaCheck::default(),
            header_params: OnceLock::new(),
        }
    }

    /// The tool as the server described it.
    pub fn tool(&self) -> &Arc<Tool> {
        &self.tool
    }

    /// Checks arguments against the input schema. An optional argument
    /// given as `null` counts as absent for the check (agents send `null`
    /// for "not given", and the 2026-07-28 header rules expect such
    /// arguments); the arguments are sent as given.
    pub(crate) fn check_arguments(&self, arguments: &Value) -> Checked {
        self.input
            .check(&self.tool.input_schema, arguments, Checking::Arguments)
    }

    /// Checks structured content against the output schema, when there is one.
    pub(crate) fn check_output(&self, structured: &Value) -> Checked {
        match &self.tool.output_schema {
            Some(schema) => self.output.check(schema, structured, Checking::Content),
            None => Checked::Valid,
        }
    }

    /// The arguments its input schema marks with `x-mcp-header` (none when
    /// the annotations are invalid; such tools are left out of HTTP catalogs).
    pub fn header_params(&self) -> &[HeaderParam] {
        self.header_params
            .get_or_init(|| headers::annotations(&self.tool.input_schema).unwrap_or_default())
    }

    /// The tool has an output schema.
    pub fn has_output_schema(&self) -> bool {
        self.tool.output_schema.is_some()
    }
}

impl ToolCatalog {
    /// A catalog of these tools. A repeated name keeps the first and adds a
    /// diagnostic.
    pub fn new(tools: Vec<Tool>, mut diagnostics: Vec<String>) -> Self {
        let mut seen = HashSet::with_capacity(tools.len());
        let mut kept = Vec::with_capacity(tools.len());
        for tool in tools {
            if !seen.insert(tool.name.clone()) {
                diagnostics.push(format!(
                    "the server lists tool `{}` more than once; the first is used",
                    tool.name
                ));
                continue;
            }
            kept.push(TOOLS.intern(tool, |c| &*c.tool, CatalogTool::new));
        }
        drop(seen);
        // A catalog of more than 4 billion tools cannot be fetched within
        // any frame limit; the index type only has to hold the real ones.
        let mut by_name: Vec<u32> = (0..kept.len())
            .filter_map(|i| u32::try_from(i).ok())
            .collect();
        by_name.sort_unstable_by(|&a, &b| name_of(&kept, a).cmp(name_of(&kept, b)));
        ToolCatalog {
            tools: kept,
            by_name: by_name.into_boxed_slice(),
            diagnostics,
        }
    }

    /// The tools, in the server's order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.tools.iter().map(|t| &t.tool)
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// There are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<&CatalogTool> {
        let at = self
            .by_name
            .binary_search_by(|&i| name_of(&self.tools, i).cmp(name))
            .ok()?;
        let index = usize::try_from(*self.by_name.get(at)?).ok()?;
        self.tools.get(index).map(|t| &**t)
    }

    /// Things worth telling a person about this catalog (no `tools`
    /// capability, duplicate names …).
    pub fn diagnostics(&self) -> &[String] {
        &self.diagnostics
    }

    /// Some tool names, for error messages.
    pub(crate) fn some_names(&self, n: usize) -> Vec<String> {
        self.tools
            .iter()
            .take(n)
            .map(|t| t.tool.name.clone())
            .collect()
    }
}

/// The name of tool `i` ("" past the end, which the index never points to).
fn name_of(tools: &[Arc<CatalogTool>], i: u32) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| tools.get(i))
        .map_or("", |t| t.tool.name.as_str())
}

#[cfg(test)]
#[cfg(feature = "validation")]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> CatalogTool {
        CatalogTool::new(
            serde_json::from_value(json!({"name": "t", "inputSchema": schema})).unwrap(),
        )
    }

    #[test]
    fn optional_nulls_count_as_absent_required_ones_do_not() {
        let t = tool(json!({
            "type": "object",
            "properties": {"q": {"type": "string"}, "verbose": {"type": "boolean"}},
            "required": ["q"],
            "additionalProperties": false
        }));
        assert_eq!(
            t.check_arguments(&json!({"q": "x", "verbose": null})),
            Checked::Valid
        );
        assert!(matches!(
            t.check_arguments(&json!({"q": null})),
            Checked::Invalid(_)
        ));
        assert!(matches!(
            t.check_arguments(&json!({"q": "x", "verbose": "yes"})),
            Checked::Invalid(_)
        ));
    }

    #[test]
    fn problems_name_the_field() {
        let t = tool(json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["path"]
        }));
        assert_eq!(
            t.check_arguments(&json!({"path": "a", "n": 2})),
            Checked::Valid
        );
        let Checked::Invalid(p) = t.check_arguments(&json!({"n": 1.5})) else {
            panic!()
        };
        assert!(
            p.iter()
                .any(|p| p.path.is_empty() && p.message.contains("\"path\" is a required")),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|p| p.path == "/n" && p.message.contains("integer")),
            "{p:?}"
        );
    }

    #[test]
    fn default_draft_is_2020_12_and_draft_07_is_honoured() {
        // `prefixItems` exists in 2020-12 only.
        let schema = json!({"type": "array", "prefixItems": [{"type": "string"}]});
        assert!(matches!(
            tool(schema.clone()).check_arguments(&json!([1])),
            Checked::Invalid(_)
        ));
        let mut d7 = schema;
        d7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        assert_eq!(tool(d7).check_arguments(&json!([1])), Checked::Valid);
    }

    #[test]
    fn remote_refs_are_not_fetched() {
        let t = tool(json!({"$ref": "https://example.invalid/schema.json"}));
        assert!(matches!(
            t.check_arguments(&json!({})),
            Checked::Unchecked(_)
        ));
    }

    #[test]
    fn duplicate_names_keep_the_first() {
        let a: Tool = serde_json::from_value(json!({"name": "x", "description": "first"})).unwrap();
        let b: Tool =
            serde_json::from_value(json!({"name": "x", "description": "second"})).unwrap();
        let c = ToolCatalog::new(vec![a, b], vec![]);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c.get("x").unwrap().tool().description.as_deref(),
            Some("first")
        );
        assert_eq!(c.diagnostics().len(), 1);
    }
}
