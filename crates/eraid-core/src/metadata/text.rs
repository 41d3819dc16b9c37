//! The superblock's free text (path hints, failure and pause reasons) and
//! UUIDs, bounded by the bytes of their JSON form so that a superblock of
//! the most members always fits its slot.

/// The longest failure reason a superblock keeps per member, in bytes of
/// its JSON form (longer ones are cut at a character boundary), so the
/// record stays bounded.
pub const MEMBER_FAILURE_BYTES_MAX: usize = 200;
/// The longest path hint a superblock keeps, in bytes of its JSON form:
/// longer ones keep their end (the file name), after an ellipsis.
pub const PATH_HINT_BYTES_MAX: usize = 256;
/// The longest growth pause reason kept, in bytes of its JSON form.
pub const PAUSE_REASON_BYTES_MAX: usize = 512;
/// Array and member UUIDs: at most this many printable ASCII characters.
pub const UUID_BYTES_MAX: usize = 64;

/// Bytes `c` takes inside a JSON string (serde_json escapes `"`, `\` and
/// control characters, the latter as `\uXXXX` at worst).
fn json_escaped_bytes(c: char) -> usize {
    match c {
        '"' | '\\' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// `text`'s longest prefix whose JSON form fits `bytes_max`.
pub fn bounded_text_head(text: &str, bytes_max: usize) -> String {
    let mut used = 0;
    let mut end = 0;
    for (at, c) in text.char_indices() {
        used += json_escaped_bytes(c);
        if used > bytes_max {
            break;
        }
        end = at + c.len_utf8();
    }
    text[..end].to_string()
}

/// `text`, or if its JSON form exceeds `bytes_max`, "…" and its longest
/// suffix that fits with it.
pub fn bounded_text_tail(text: &str, bytes_max: usize) -> String {
    const ELLIPSIS: &str = "\u{2026}";
    if text.chars().map(json_escaped_bytes).sum::<usize>() <= bytes_max {
        return text.to_string();
    }
    let mut used = ELLIPSIS.len();
    let mut start = text.len();
    for (at, c) in text.char_indices().rev() {
        used += json_escaped_bytes(c);
        if used > bytes_max {
            break;
        }
        start = at;
    }
    format!("{ELLIPSIS}{}", &text[start..])
}

/// Cuts `reason` to at most `MEMBER_FAILURE_BYTES_MAX` bytes (of JSON).
pub fn bounded_failure_reason(reason: &str) -> String {
    bounded_text_head(reason, MEMBER_FAILURE_BYTES_MAX)
}

/// Shortens a member path for the superblock (see `PATH_HINT_BYTES_MAX`).
pub fn bounded_path_hint(path: &str) -> String {
    bounded_text_tail(path, PATH_HINT_BYTES_MAX)
}

/// Whether `uuid` is a UUID this format can hold: 1 to `UUID_BYTES_MAX`
/// printable ASCII characters, no quote or backslash.
pub fn is_valid_uuid(uuid: &str) -> bool {
    (1..=UUID_BYTES_MAX).contains(&uuid.len())
        && uuid
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
}
