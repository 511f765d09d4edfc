//! Byte classes of JSON text that the scanner, the lanes and the formats test: whitespace (and
//! skipping it), and the bytes that end, escape or break a string (with the rule for a chunk that
//! continues a string).

/// JSON whitespace: space, tab, newline, carriage return.
#[inline]
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Index of the first non-whitespace byte of `s` (`None`: all whitespace).
#[inline]
pub(crate) fn skip_ws(s: &str) -> Option<usize> {
    s.bytes().position(|b| !is_ws(b))
}

/// [`skip_ws`] for markup being collected: the leading whitespace of `s` is appended to `raw`
/// (all of `s` when it is all whitespace).
#[inline]
pub(crate) fn skip_ws_into(raw: &mut String, s: &str) -> Option<usize> {
    let j = skip_ws(s);
    raw.push_str(s.get(..j.unwrap_or(s.len())).unwrap_or_default());
    j
}

/// Whether any of the 8 bytes of `w` is a quote, a backslash or a control byte (exact: the
/// classic has-zero-byte / has-byte-less-than word tricks, which can err only in which byte, not
/// whether).
#[inline]
pub(crate) fn word_has_string_stop(w: u64) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let has_zero = |x: u64| x.wrapping_sub(LO) & !x & HI;
    (has_zero(w ^ (LO * u64::from(b'"')))
        | has_zero(w ^ (LO * u64::from(b'\\')))
        | (w.wrapping_sub(LO * 0x20) & !w & HI))
        != 0
}

/// Whether `s` holds a byte that ends, escapes or breaks a JSON string. Word-at-a-time, with
/// overlapping words for the tail, so a streamed chunk of a few bytes costs a few instructions.
#[inline]
pub(crate) fn has_string_stop(s: &[u8]) -> bool {
    let n = s.len();
    if n < 4 {
        return s.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
    }
    if n <= 8 {
        let (Some(a), Some(b)) = (s.first_chunk::<4>(), s.last_chunk::<4>()) else {
            return true;
        };
        let w = u64::from(u32::from_le_bytes(*a)) | (u64::from(u32::from_le_bytes(*b)) << 32);
        return word_has_string_stop(w);
    }
    let words = s.chunks_exact(8);
    let tail = words.remainder().len();
    for w in words {
        if let Some(w) = w.first_chunk::<8>() {
            if word_has_string_stop(u64::from_le_bytes(*w)) {
                return true;
            }
        }
    }
    tail > 0
        && s.last_chunk::<8>()
            .is_none_or(|w| word_has_string_stop(u64::from_le_bytes(*w)))
}

/// [`Lane::JsonString`](super::Lane::JsonString)'s rule: from `escaped`, whether the string goes on through `chunk`
/// without ending or breaking, and if so whether it ends right after a backslash.
#[inline]
pub(crate) fn json_string_pass(mut escaped: bool, chunk: &[u8]) -> Option<bool> {
    if !escaped && !has_string_stop(chunk) {
        return Some(false);
    }
    for &b in chunk {
        if escaped {
            if !matches!(b, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') {
                return None;
            }
            escaped = false;
        } else if b == b'\\' {
            escaped = true;
        } else if b == b'"' || b < 0x20 {
            return None;
        }
    }
    Some(escaped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_string_stop_matches_bytewise() {
        let bytes: Vec<u8> = (0u8..=255)
            .chain(b"abc\"def\\gh\x1f\x7f\xc3\xa9".iter().copied())
            .collect();
        for start in 0..bytes.len() {
            for end in start..bytes.len().min(start + 40) {
                let s = &bytes[start..end];
                let expected = s.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
                assert_eq!(has_string_stop(s), expected, "{s:?}");
            }
        }
        for b in 0u8..=255 {
            for at in 0..20 {
                let mut s = [b'a'; 20];
                s[at] = b;
                let expected = b < 0x20 || b == b'"' || b == b'\\';
                for len in at + 1..=20 {
                    assert_eq!(has_string_stop(&s[..len]), expected, "byte {b} at {at} len {len}");
                }
            }
        }
    }
}
