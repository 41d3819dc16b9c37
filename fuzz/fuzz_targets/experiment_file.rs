//! Experiment files (TOML): parsing and planning never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Relative paths in the file resolve into a folder that does not exist.
    let base = std::path::Path::new("/nonexistent/eraid-fuzz");
    let _ = eraid_sim::experiment::parse("fuzz.toml", text, base);
});
