//! The `oauth` / `auth` object of a server record (Claude Code, Gemini
//! CLI, this client; Cursor's `auth`), in every spelling the formats use.

use serde_json::Value;

use super::{Ck, join, sorted};
use crate::Secret;
use crate::model::OAuthSettings;

/// The keys of an `oauth` / `auth` object, in every spelling the formats use.
#[derive(Clone, Copy)]
enum OAuthKey {
    Enabled,
    ClientId,
    ClientSecret,
    Scopes,
    CallbackPort,
    ClientMetadataUrl,
    TokenStore,
    Discovered,
}

const OAUTH_KEYS: &[(&str, OAuthKey)] = &[
    ("enabled", OAuthKey::Enabled),
    ("clientId", OAuthKey::ClientId),
    ("client_id", OAuthKey::ClientId),
    ("CLIENT_ID", OAuthKey::ClientId),
    ("clientSecret", OAuthKey::ClientSecret),
    ("client_secret", OAuthKey::ClientSecret),
    ("CLIENT_SECRET", OAuthKey::ClientSecret),
    ("scopes", OAuthKey::Scopes),
    ("scope", OAuthKey::Scopes),
    ("callbackPort", OAuthKey::CallbackPort),
    ("callback_port", OAuthKey::CallbackPort),
    ("clientMetadataUrl", OAuthKey::ClientMetadataUrl),
    ("client_metadata_url", OAuthKey::ClientMetadataUrl),
    ("tokenStore", OAuthKey::TokenStore),
    ("token_store", OAuthKey::TokenStore),
    // Gemini CLI's explicit endpoints: this client discovers them.
    ("authorizationUrl", OAuthKey::Discovered),
    ("tokenUrl", OAuthKey::Discovered),
    ("issuer", OAuthKey::Discovered),
];

pub(super) fn oauth_settings(ck: &mut Ck, path: &str, v: &Value) -> Option<OAuthSettings> {
    let map = ck.object(path, v, "an object of OAuth settings")?;
    let mut o = OAuthSettings::default();
    for (key, v) in sorted(map) {
        let p = join(path, key);
        let Some(&(_, field)) = OAUTH_KEYS.iter().find(|(k, _)| k == key) else {
            let hint = crate::suggest::did_you_mean(key, OAUTH_KEYS.iter().map(|(k, _)| *k));
            ck.warn(
                p,
                format!("unknown key `{}` is ignored{hint}", key.escape_debug()),
            );
            continue;
        };
        match field {
            OAuthKey::Enabled => o.enabled = ck.boolean(p, v),
            OAuthKey::ClientId => o.client_id = ck.template(p, v),
            OAuthKey::ClientSecret => o.client_secret = ck.template(p, v).map(Secret::new),
            OAuthKey::Scopes => {
                o.scopes = match v {
                    Value::String(text) => {
                        Some(text.split_whitespace().map(str::to_owned).collect())
                    }
                    _ => ck.string_list(p, v, false),
                }
            }
            OAuthKey::CallbackPort => match v.as_u64().map(u16::try_from) {
                Some(Ok(port)) => o.callback_port = Some(port),
                _ => ck.wrong_type(p, "a port number (0 to 65535)", v),
            },
            OAuthKey::ClientMetadataUrl => {
                if let Some(u) = ck.template(p.clone(), v) {
                    if !u.starts_with("https://") && !u.contains("${") {
                        ck.error(
                            p,
                            "must be an https:// URL (the client id metadata document)",
                        );
                    } else {
                        o.client_metadata_url = Some(u);
                    }
                }
            }
            OAuthKey::TokenStore => match v.as_str().map(str::parse) {
                Some(Ok(kind)) => o.token_store = Some(kind),
                Some(Err(message)) => ck.error(p, message),
                None => ck.wrong_type(p, "`keyring` or `file`", v),
            },
            OAuthKey::Discovered => ck.warn(
                p,
                "is not used: this client discovers the endpoints from the server's metadata",
            ),
        }
    }
    Some(o)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::record;
    use serde_json::json;

    #[test]
    fn oauth_settings_in_every_spelling() {
        let (s, problems) = record(
            &json!({"url": "https://x.example/mcp", "oauth": {
                "clientId": "${ID}", "clientSecret": "s3cret", "scopes": ["a", "b"],
                "callbackPort": 8123, "clientMetadataUrl": "https://app.example/client.json"
            }}),
            "s",
            None,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let o = s.unwrap().oauth.unwrap();
        assert_eq!(o.client_id.as_deref(), Some("${ID}"));
        assert_eq!(o.client_secret.as_ref().unwrap().expose(), "s3cret");
        assert!(o.is_enabled());
        assert_eq!(o.callback_port, Some(8123));
        assert_eq!(o.scopes.unwrap(), ["a", "b"]);
        assert_eq!(o.token_store, None);
        let (s, problems) = record(
            &json!({"url": "https://x.example/mcp", "oauth": {"tokenStore": "keyring"}}),
            "s",
            None,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            s.unwrap().oauth.unwrap().token_store,
            Some(crate::model::TokenStoreKind::Keyring)
        );
        let (_, problems) = record(
            &json!({"url": "https://x.example/mcp", "oauth": {"tokenStore": "vault"}}),
            "s",
            None,
        );
        let text = format!("{problems:?}");
        assert!(text.contains("`keyring` or `file`"), "{text}");
        // Cursor's `auth` object, a scope string.
        let (s, problems) = record(
            &json!({"url": "https://x.example/mcp", "auth": {
                "CLIENT_ID": "c", "CLIENT_SECRET": "s", "scopes": "read write"
            }}),
            "s",
            None,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(s.unwrap().oauth.unwrap().scopes.unwrap(), ["read", "write"]);
        // Off, and mistakes named.
        let (s, _) = record(
            &json!({"url": "https://x.example/mcp", "oauth": {"enabled": false}}),
            "s",
            None,
        );
        assert!(!s.unwrap().oauth.unwrap().is_enabled());
        let (_, problems) = record(
            &json!({"url": "https://x.example/mcp", "oauth": {"callbackPort": 70000, "clientMetadataUrl": "http://a/b", "tokenUrl": "https://t"}}),
            "s",
            None,
        );
        let text = format!("{problems:?}");
        assert!(
            text.contains("port number") && text.contains("https://") && text.contains("discovers"),
            "{text}"
        );
        // Only HTTP servers use it.
        let (_, problems) = record(&json!({"command": "x", "oauth": {}}), "s", None);
        assert!(format!("{problems:?}").contains("only HTTP servers"));
    }
}
