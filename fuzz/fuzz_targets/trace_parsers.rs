//! Every trace parser, and autodetection, over arbitrary text. First byte
//! picks the format (past the last one: autodetect).
#![no_main]
use eraid_trace::{TraceFormat, TraceReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let formats = TraceFormat::ALL;
    let reader = match formats.get(pick as usize % (formats.len() + 1)) {
        Some(&format) => TraceReader::new(text, "fuzz", format),
        None => match TraceReader::autodetect(text, "fuzz") {
            Ok(reader) => reader,
            Err(_) => return,
        },
    };
    // Bounded: a parser must not turn a short input into endless requests.
    for request in reader.take(100_000) {
        let _ = request;
    }
});
