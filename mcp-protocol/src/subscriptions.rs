//! `subscriptions/listen` (2026-07-28): the filter of notifications a
//! stream carries, and the params of the request and of its
//! acknowledgment.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use mcp_stack_jsonrpc::{Id, RawValue};

use crate::meta::SUBSCRIPTION_ID;
use crate::types::Extra;

/// Which notifications a `subscriptions/listen` stream carries: what the
/// client opts in to, and (acknowledged) what the server agreed to send.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SubscriptionFilter {
    /// Nothing yet; add with the builder methods.
    ///
    /// ```
    /// use mcp_stack_protocol::subscriptions::SubscriptionFilter;
    /// let filter = SubscriptionFilter::new().tools_list_changed().resource("file:///notes.md");
    /// assert_eq!(
    ///     serde_json::to_value(&filter).unwrap(),
    ///     serde_json::json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///notes.md"]})
    /// );
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for tool list changes.
    #[must_use]
    pub fn tools_list_changed(mut self) -> Self {
        self.tools_list_changed = Some(true);
        self
    }

    /// Asks for prompt list changes.
    #[must_use]
    pub fn prompts_list_changed(mut self) -> Self {
        self.prompts_list_changed = Some(true);
        self
    }

    /// Asks for resource list changes.
    #[must_use]
    pub fn resources_list_changed(mut self) -> Self {
        self.resources_list_changed = Some(true);
        self
    }

    /// Asks for updates of one resource.
    #[must_use]
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.resource_subscriptions
            .get_or_insert_with(Vec::new)
            .push(uri.into());
        self
    }
}

/// The parameters of `subscriptions/listen` and of its acknowledgment,
/// `notifications/subscriptions/acknowledged`: a filter, and `_meta` (the
/// request's metadata; on the acknowledgment, the subscription's id).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionParams {
    /// The notifications asked for, or agreed to.
    #[serde(default)]
    pub notifications: SubscriptionFilter,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SubscriptionParams {
    /// The acknowledgment of subscription `id` (the id of its
    /// `subscriptions/listen` request), agreeing to `granted`.
    pub fn acknowledgment(id: &Id, granted: SubscriptionFilter) -> Self {
        let mut meta = Map::new();
        meta.insert(
            SUBSCRIPTION_ID.into(),
            serde_json::to_value(id).unwrap_or_default(),
        );
        SubscriptionParams {
            notifications: granted,
            meta: Some(meta),
            extra: Extra::new(),
        }
    }
}

/// The subscription a notification belongs to: the
/// [`SUBSCRIPTION_ID`] in its params' `_meta`, read from the raw params
/// without the rest of them (`None` when absent or not an id).
pub fn subscription_of(params: &RawValue) -> Option<Id> {
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
    }
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
        id: Option<Value>,
    }
    let meta = serde_json::from_str::<Params>(params.get()).ok()?.meta?;
    serde_json::from_value(meta.id?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subscription_params_round_trip_and_acknowledge() {
        let listen = json!({
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["file:///a"],
                              "futureListChanged": true}
        });
        let p: SubscriptionParams = serde_json::from_value(listen.clone()).unwrap();
        assert_eq!(p.notifications.tools_list_changed, Some(true));
        assert_eq!(p.notifications.prompts_list_changed, None);
        assert_eq!(p.notifications.extra["futureListChanged"], true);
        assert_eq!(serde_json::to_value(&p).unwrap(), listen);
        let granted = SubscriptionFilter {
            tools_list_changed: Some(true),
            ..SubscriptionFilter::default()
        };
        let ack = SubscriptionParams::acknowledgment(&Id::from("listen-1"), granted);
        assert_eq!(
            serde_json::to_value(&ack).unwrap(),
            json!({"_meta": {SUBSCRIPTION_ID: "listen-1"}, "notifications": {"toolsListChanged": true}})
        );
        let empty: SubscriptionParams = serde_json::from_value(json!({})).unwrap();
        assert_eq!(empty, SubscriptionParams::default());
    }

    #[test]
    fn a_notification_names_its_subscription_in_meta() {
        let raw = |v: Value| RawValue::from_string(v.to_string()).unwrap();
        let tagged = raw(json!({"uri": "u", "_meta": {SUBSCRIPTION_ID: "listen-1", "x": 1}}));
        assert_eq!(subscription_of(&tagged), Some(Id::from("listen-1")));
        let numeric = raw(json!({"_meta": {SUBSCRIPTION_ID: 7}}));
        assert_eq!(subscription_of(&numeric), Some(Id::from(7)));
        for untagged in [
            json!({"uri": "u"}),
            json!({"_meta": {}}),
            json!({"_meta": {SUBSCRIPTION_ID: [1]}}),
            json!([1]),
        ] {
            assert_eq!(subscription_of(&raw(untagged.clone())), None, "{untagged}");
        }
    }
}
