//! Every 2026-07-28 example message a client sends or reads round-trips
//! through our types. The examples are read from `../shared/spec` when it is
//! there; without it the test says that it skipped.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcp_stack_protocol::discover::{DiscoverResult, UnsupportedVersionData};
use mcp_stack_protocol::results::{InputRequest, InputRequiredResult};
use mcp_stack_protocol::subscriptions::SubscriptionParams;
use mcp_stack_protocol::types::{
    CallToolParams, CallToolResult, CancelledParams, ClientCapabilities, Content,
    ElicitRequestParams, ElicitResult, ListToolsResult, LoggingMessageParams, PaginatedParams,
    ProgressParams, ServerCapabilities, Tool,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn examples_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/spec/schema/2026-07-28/examples");
    dir.is_dir().then_some(dir)
}

fn files(dir: &Path, kind: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir.join(kind)) else {
        return out;
    };
    for e in entries.flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        out.push((
            e.file_name().to_string_lossy().into_owned(),
            serde_json::from_str(&text).unwrap(),
        ));
    }
    assert!(!out.is_empty(), "no examples of {kind}");
    out
}

/// Parses into `T` and back; the JSON must be the same.
fn round_trip<T: DeserializeOwned + Serialize>(dir: &Path, kind: &str) -> usize {
    let examples = files(dir, kind);
    for (name, value) in &examples {
        let typed: T = serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("{kind}/{name} does not parse: {e}"));
        let back = serde_json::to_value(&typed).unwrap();
        assert_eq!(&back, value, "{kind}/{name} changed in a round trip");
    }
    examples.len()
}

/// The `params` of whole messages into `T` and back; the JSON must be the same.
fn params_round_trip<T: DeserializeOwned + Serialize>(dir: &Path, kind: &str) -> usize {
    let examples = files(dir, kind);
    for (name, value) in &examples {
        let params = &value["params"];
        let typed: T = serde_json::from_value(params.clone())
            .unwrap_or_else(|e| panic!("{kind}/{name}'s params do not parse: {e}"));
        let back = serde_json::to_value(&typed).unwrap();
        assert_eq!(
            &back, params,
            "{kind}/{name}'s params changed in a round trip"
        );
    }
    examples.len()
}

/// A whole JSON-RPC message: through the envelope and back, and its payload
/// through `T` when given.
fn envelope(dir: &Path, kind: &str) -> usize {
    let examples = files(dir, kind);
    for (name, value) in &examples {
        let text = serde_json::to_vec(value).unwrap();
        let m = mcp_stack_jsonrpc::Message::from_slice(&text)
            .unwrap_or_else(|e| panic!("{kind}/{name} is not a JSON-RPC message: {e}"));
        let back: Value = serde_json::from_slice(&m.to_vec().unwrap()).unwrap();
        assert_eq!(&back, value, "{kind}/{name} changed in a round trip");
    }
    examples.len()
}

#[test]
fn spec_examples_round_trip() {
    let Some(dir) = examples_dir() else {
        eprintln!(
            "SKIPPED: ../shared/spec is not here, so the 2026-07-28 examples were not checked"
        );
        return;
    };
    let mut n = 0;
    n += round_trip::<DiscoverResult>(&dir, "DiscoverResult");
    n += round_trip::<CallToolResult>(&dir, "CallToolResult");
    n += round_trip::<ListToolsResult>(&dir, "ListToolsResult");
    n += round_trip::<Tool>(&dir, "Tool");
    for kind in [
        "TextContent",
        "ImageContent",
        "AudioContent",
        "ResourceLink",
        "EmbeddedResource",
    ] {
        n += round_trip::<Content>(&dir, kind);
    }
    n += round_trip::<ProgressParams>(&dir, "ProgressNotificationParams");
    n += round_trip::<LoggingMessageParams>(&dir, "LoggingMessageNotificationParams");
    n += round_trip::<CancelledParams>(&dir, "CancelledNotificationParams");
    n += round_trip::<InputRequiredResult>(&dir, "InputRequiredResult");
    n += round_trip::<BTreeMap<String, InputRequest>>(&dir, "InputRequests");
    n += round_trip::<BTreeMap<String, Value>>(&dir, "InputResponses");
    n += round_trip::<InputRequest>(&dir, "ElicitRequest");
    n += round_trip::<ElicitRequestParams>(&dir, "ElicitRequestFormParams");
    n += round_trip::<ElicitRequestParams>(&dir, "ElicitRequestURLParams");
    n += round_trip::<ElicitResult>(&dir, "ElicitResult");
    n += round_trip::<CallToolParams>(&dir, "CallToolRequestParams");
    n += round_trip::<PaginatedParams>(&dir, "PaginatedRequestParams");
    n += round_trip::<ClientCapabilities>(&dir, "ClientCapabilities");
    n += round_trip::<ServerCapabilities>(&dir, "ServerCapabilities");
    for kind in [
        "SubscriptionsListenRequest",
        "SubscriptionsAcknowledgedNotification",
    ] {
        n += params_round_trip::<SubscriptionParams>(&dir, kind);
    }
    for kind in [
        "DiscoverRequest",
        "DiscoverResultResponse",
        "CallToolRequest",
        "CallToolResultResponse",
        "ListToolsRequest",
        "ListToolsResultResponse",
        "ProgressNotification",
        "LoggingMessageNotification",
        "CancelledNotification",
        "ToolListChangedNotification",
        "SubscriptionsListenRequest",
        "SubscriptionsListenResultResponse",
        "UnsupportedProtocolVersionError",
        "MissingRequiredClientCapabilityError",
        "HeaderMismatchError",
    ] {
        n += envelope(&dir, kind);
    }
    for (name, value) in files(&dir, "UnsupportedProtocolVersionError") {
        let data = &value["error"]["data"];
        let typed: UnsupportedVersionData = serde_json::from_value(data.clone())
            .unwrap_or_else(|e| panic!("{name}'s data does not parse: {e}"));
        assert_eq!(&serde_json::to_value(&typed).unwrap(), data, "{name}");
        n += 1;
    }
    for kind in [
        "InvalidParamsError",
        "MethodNotFoundError",
        "InternalError",
        "ParseError",
    ] {
        n += round_trip::<mcp_stack_jsonrpc::ErrorObject>(&dir, kind);
    }
    eprintln!("checked {n} example messages");
    assert!(n > 50);
}
