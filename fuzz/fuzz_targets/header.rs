//! Server-supplied header text: `WWW-Authenticate` challenges and the
//! `x-mcp-header` value decoding never panic; a decoded value decodes from
//! its encoding again.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let values: Vec<&str> = text.split('\n').collect();
    let challenges = mcp_stack_auth::challenge::parse(&values);
    for c in &challenges {
        let _ = c.param("scope");
    }
    let _ = mcp_stack_auth::challenge::BearerChallenge::from_headers(&values);
    if let Some(decoded) = mcp_stack_protocol::x_mcp_header::decode_value(text) {
        let again = mcp_stack_protocol::x_mcp_header::encode_value(&decoded);
        assert_eq!(
            mcp_stack_protocol::x_mcp_header::decode_value(&again).as_deref(),
            Some(&*decoded),
            "an encoded value does not decode back"
        );
    }
});
