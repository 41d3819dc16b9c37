//! The DiskSim model-file parsers: `.parv`, `.diskspecs`, seek tables and
//! the block syntax. First byte picks the parser; the text is split at the
//! first NUL into the file and what any file it names resolves to.
#![no_main]
use eraid_sim::diskspec::{parse_diskspecs, parse_parv, parse_seek_table, syntax};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (main, named) = text.split_once('\0').unwrap_or((&text, ""));
    let named = named.to_string();
    let mut resolve = |_: &str| -> Result<String, String> { Ok(named.clone()) };
    match pick % 5 {
        0 => drop(parse_parv("fuzz.parv", main, &mut resolve)),
        1 => drop(parse_diskspecs("fuzz.diskspecs", main, &mut resolve)),
        2 => drop(parse_seek_table("fuzz.seek", main)),
        3 => drop(syntax::parse_blocks("fuzz.diskspecs", main)),
        _ => drop(syntax::parse_top_level("fuzz.parv", main)),
    }
});
