//! A skill's SKILL.md (server-supplied): the strict frontmatter reader
//! never panics, and what it accepts compares with itself as equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_stack_protocol::skills::frontmatter;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok((fields, _body)) = frontmatter::parse(text) {
        assert!(
            frontmatter::differences(&fields, &fields).is_empty(),
            "a frontmatter differs from itself"
        );
    }
});
