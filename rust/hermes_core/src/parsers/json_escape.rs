//! JSON text escaping: what every format needs to write a name or a raw value into JSON
//! arguments, and what the lane driver applies to streamed string fragments.

/// `s` as a quoted JSON string.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    escape_json_into(&mut out, s);
    out.push('"');
    out
}

/// What each byte needs in a JSON string: 0 nothing, `u` a `\u00XX` escape, else the letter after
/// the backslash.
pub(crate) static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t[0x08] = b'b';
    t[0x0c] = b'f';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// Append `s` JSON-escaped (no quotes): `"`, `\` and control characters; everything else raw.
/// Clean 8-byte words are skipped with a SWAR test, so long code values cost little.
pub fn escape_json_into(out: &mut String, s: &str) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    /// Non-zero when some byte of `w` is zero.
    fn has_zero(w: u64) -> u64 {
        w.wrapping_sub(LO) & !w & HI
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + bytes.len() / 16 + 2);
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            let mut buf = [0u8; 8];
            buf.copy_from_slice(word);
            let w = u64::from_le_bytes(buf);
            // Some byte < 0x20 (ASCII only: `!w & HI`), '"' or '\\'?
            let ctrl = w.wrapping_sub(LO * 0x20) & !w & HI;
            if ctrl | has_zero(w ^ (LO * b'"' as u64)) | has_zero(w ^ (LO * b'\\' as u64)) == 0 {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let e = ESCAPE[b as usize];
        if e == 0 {
            i += 1;
            continue;
        }
        out.push_str(&s[start..i]);
        if e == b'u' {
            let u = [b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]];
            out.push_str(std::str::from_utf8(&u).unwrap_or_default());
        } else {
            out.push('\\');
            out.push(e as char);
        }
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(json_string("a\"b\\c\nd\u{1}é"), "\"a\\\"b\\\\c\\nd\\u0001é\"");
        // The same text serde_json writes, for every byte class.
        let all: String = (0u8..0x80).map(char::from).chain("é€😀".chars()).collect();
        assert_eq!(
            json_string(&all),
            serde_json::to_string(&all).expect("a string serialises")
        );
    }
}
