//! Config files (user-supplied text) through every format's parser and
//! validation, then `${VAR}` resolution: never a panic, whatever the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_stack_config::{Format, Options, parse_str, resolve};

const FORMATS: [Format; 6] = [
    Format::OpenClawJson,
    Format::OpenClawToml,
    Format::ClaudeDesktop,
    Format::Cursor,
    Format::VsCode,
    Format::Codex,
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in FORMATS.into_iter().map(Some).chain([None]) {
        let mut options = Options::new();
        options.format = format;
        if let Ok(loaded) = parse_str(text, &options) {
            let env = |name: &str| name.len().is_multiple_of(2).then(|| format!("v-{name}"));
            let _ = resolve(&loaded.config, &env);
        }
    }
});
