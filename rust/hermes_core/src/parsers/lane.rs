//! Lanes: text the [`Stream`](super::Stream) driver passes on by itself, without calling the
//! format, while the format sits in a state where that text can only do one simple thing.
//!
//! A long output spends almost all its bytes inside argument strings (code, file contents), and
//! a streaming client feeds it a few bytes at a time. Calling the format's state machine for each
//! piece costs a dynamic call, an [`Emitter`](super::Emitter) and the format's own dispatch per
//! feed, several times the work of scanning the bytes. So a format, at the end of a feed, may
//! open a lane ([`Emitter::set_lane`](super::Emitter::set_lane)); each following chunk the lane's
//! rule accepts (`Stream::pass_lane`, the one dispatcher of the rules below) is handled by the driver, and the first chunk it refuses goes to the
//! format as usual. The driver closes the lane before every format call, so a format only says,
//! after each feed, whether its current state allows one.
//!
//! Two kinds of lane, with different contracts:
//! - Passing lanes ([`Lane::JsonString`], [`Lane::RawString`], [`Lane::Content`]): the driver
//!   emits the chunk (to the open call's arguments, or to content) exactly as the format would
//!   have. The format opens one only when it holds no text, and an accepted chunk leaves the
//!   format's state as it was, except for the little state the lane carries (after a backslash,
//!   a held newline), which the format takes over from
//!   [`Emitter::resumed_lane`](super::Emitter::resumed_lane) at its next feed.
//! - Collecting: [`Lane::Defer`] (and the whitespace a [`Lane::Content`] holds back) is for
//!   states where the format would emit nothing: the driver keeps the text and hands it to the
//!   format in one piece with the chunk it refuses (or at the end). Split invariance makes that
//!   the same as feeding the pieces one by one, and no event comes later than it would have.
//!
//! `tests/lanes.rs` checks that every format opens a lane on a long argument and that streaming
//! through lanes gives the events and result of `parse` at every chunk size.

use super::json_bytes::{has_string_stop, is_ws, word_has_string_stop};
use super::json_escape::{escape_json_into, ESCAPE};

/// The kind of text that passes, with the little state it carries across chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lane {
    /// The format sees every chunk.
    #[default]
    Off,
    /// Inside a JSON string in the open call's raw JSON arguments (`escaped`: right after a
    /// backslash): text passes verbatim while the string neither ends nor breaks in it: no
    /// unescaped quote, no control byte, only simple escapes (`\"`, `\\`, `\/`, `\b`, `\f`,
    /// `\n`, `\r`, `\t`; a `\u` escape goes to the format). A chunk may end after a backslash;
    /// the format takes that state over from [`Emitter::resumed_lane`](super::Emitter::resumed_lane).
    JsonString { escaped: bool },
    /// Inside a raw-text value streamed as a JSON-string fragment (the XML-parameter formats'
    /// string parameters): text passes, JSON-escaped, while it cannot hold the start of a
    /// marker that may end the value: `stop` is a first byte and two possible second bytes
    /// (`<` then `/` or `p`: `</parameter>`, or a `<parameter=` that says the end marker is
    /// missing); a chunk holding such a pair, or ending in the first byte, goes to the format.
    /// With `framed`, a value's last newline is framing: a chunk's final `\n` is held
    /// (`newline_held`) and written before the next text; the format takes that state over
    /// from [`Emitter::resumed_lane`](super::Emitter::resumed_lane).
    RawString {
        stop: [u8; 3],
        framed: bool,
        newline_held: bool,
    },
    /// The format emits nothing before one of the bytes `until` (pythonic inside a string of a
    /// call it releases whole: its quote, a line end): the driver collects the text and hands it
    /// to the format together with the first chunk that holds such a byte (or at the end) as one
    /// piece. Split invariance makes that the same as feeding it piece by piece, and no event is
    /// delayed. The format may hold text when it opens this lane, and scans the collected text
    /// itself. (An escaped quote stops the lane too: tracking escapes here cost more per chunk
    /// than the format's run it would save.)
    Defer { until: [u8; 3] },
    /// Plain text outside calls: a chunk passes to content while it holds no `stop` byte (the
    /// first byte of every marker the format looks for there). With `hold_trailing_ws` the
    /// format holds whitespace back until it knows whether markup follows: the driver then
    /// keeps a chunk's trailing ASCII whitespace the same way (collected as for
    /// [`Lane::Defer`]: released before the next text, or handed to the format with the chunk
    /// it refuses), and refuses chunks where that whitespace may continue a run the format
    /// counts differently (after a non-ASCII character, `\x0b` or `\x0c`).
    Content { stop: u8, hold_trailing_ws: bool },
}

/// [`Lane::RawString`]'s rule: whether `chunk` passes, and if so whether a newline is held after
/// it and whether the chunk holds a byte JSON must escape (for [`write_raw_string`]).
#[inline]
pub(crate) fn raw_string_pass(stop: [u8; 3], framed: bool, newline_held: bool, chunk: &[u8]) -> Option<(bool, bool)> {
    let (marker, escapes) = raw_string_scan(stop, chunk);
    if marker {
        return None;
    }
    let held = match chunk.last() {
        Some(&last) => framed && last == b'\n',
        None => newline_held,
    };
    Some((held, escapes))
}

/// What `chunk` holds, for a [`Lane::RawString`]: a possible start of a marker (see `stop`),
/// and a byte a JSON string must escape. A chunk of 4..=8 bytes is read once, as one word, for
/// both; only a chunk holding `stop[0]` is looked at byte by byte.
#[inline]
fn raw_string_scan(stop: [u8; 3], chunk: &[u8]) -> (bool, bool) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let (first, escapes) = match (chunk.len(), chunk.first_chunk::<4>(), chunk.last_chunk::<4>()) {
        (4..=8, Some(x), Some(y)) => {
            let w = u64::from(u32::from_le_bytes(*x)) | (u64::from(u32::from_le_bytes(*y)) << 32);
            let v = w ^ (LO * u64::from(stop[0]));
            (v.wrapping_sub(LO) & !v & HI != 0, word_has_string_stop(w))
        }
        _ => (contains_byte(chunk, stop[0]), has_string_stop(chunk)),
    };
    let marker = first
        && (chunk.last() == Some(&stop[0])
            || chunk
                .windows(2)
                .any(|pair| pair[0] == stop[0] && (pair[1] == stop[1] || pair[1] == stop[2])));
    (marker, escapes)
}

/// [`Lane::Defer`]'s rule.
#[inline]
pub(crate) fn defer_pass([a, b, c]: [u8; 3], chunk: &[u8]) -> bool {
    !chunk.iter().any(|&x| x == a || x == b || x == c)
}

/// [`Lane::Content`]'s rule.
#[inline]
pub(crate) fn content_pass(stop: u8, hold_trailing_ws: bool, chunk: &[u8]) -> bool {
    let unclear = hold_trailing_ws && trailing_ws_start(chunk).is_none();
    !unclear && !contains_byte(chunk, stop)
}

/// What the driver appends for a [`Lane::RawString`] chunk: the held newline first, then the chunk escaped
/// (`escapes`: whether the chunk holds a byte to escape; false lets it be copied as it is).
#[inline]
pub(crate) fn write_raw_string<'a>(
    framed: bool,
    newline_held: bool,
    escapes: bool,
    chunk: &'a str,
    args: &'a mut String,
) -> &'a str {
    let start = args.len();
    let mut body = chunk;
    if framed {
        if newline_held && !chunk.is_empty() {
            args.push_str("\\n");
        }
        // A final newline is a control byte, so only a chunk with `escapes` can end in one.
        if escapes {
            body = chunk.strip_suffix('\n').unwrap_or(chunk);
        }
    }
    if args.len() == start && !escapes {
        // Nothing to escape: the text as is, without the escaping loop.
        push_short(args, body);
        return body;
    }
    escape_short(args, body);
    args.get(start..).unwrap_or_default()
}

/// [`escape_json_into`] for a streamed chunk's few bytes: the plain runs between escapes are
/// copied with [`push_short`].
#[inline]
fn escape_short(out: &mut String, s: &str) {
    if s.len() > 16 {
        escape_json_into(out, s);
        return;
    }
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let e = ESCAPE[usize::from(b)];
        if e == 0 {
            continue;
        }
        // Bytes that need escaping are ASCII, so `start` and `i` are char boundaries.
        push_short(out, s.get(start..i).unwrap_or_default());
        if e == b'u' {
            escape_json_into(out, s.get(i..=i).unwrap_or_default());
        } else {
            out.push('\\');
            out.push(char::from(e));
        }
        start = i + 1;
    }
    push_short(out, s.get(start..).unwrap_or_default());
}

/// Where the run of trailing whitespace (` `, `\t`, `\n`, `\r`) of `chunk` starts, when the
/// byte before it is plainly not whitespace in any sense (ASCII other than `\x0b`, `\x0c`)
/// or the whole chunk is such whitespace; `None` otherwise.
#[inline]
pub(crate) fn trailing_ws_start(chunk: &[u8]) -> Option<usize> {
    match chunk.iter().rposition(|&b| !is_ws(b)) {
        None => Some(0),
        Some(i) => chunk
            .get(i)
            .filter(|&&b| b < 0x80 && b != 0x0b && b != 0x0c)
            .map(|_| i + 1),
    }
}

/// Whether `s` holds `b`: for a streamed chunk of 4..=8 bytes one word test (two overlapping
/// 4-byte loads; `<[u8]>::contains` calls core's generic memchr, several times the cost), a
/// short loop below, `memchr` beyond.
#[inline]
fn contains_byte(s: &[u8], b: u8) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    if let (4..=8, Some(x), Some(y)) = (s.len(), s.first_chunk::<4>(), s.last_chunk::<4>()) {
        let w = u64::from(u32::from_le_bytes(*x)) | (u64::from(u32::from_le_bytes(*y)) << 32);
        let v = w ^ (LO * u64::from(b));
        return v.wrapping_sub(LO) & !v & HI != 0;
    }
    if s.len() <= 16 {
        s.iter().fold(false, |found, &x| found | (x == b))
    } else {
        memchr::memchr(b, s).is_some()
    }
}

/// `dst.push_str(s)` with the copy inlined for the few bytes of a streamed chunk: in each arm
/// the length is a constant, so the copy is one or two moves instead of a call to `memcpy`
/// (which cost as much as the rest of a lane's pass).
#[inline(always)]
pub(crate) fn push_short(dst: &mut String, s: &str) {
    match s.len() {
        1 => dst.push_str(s),
        2 => dst.push_str(s),
        3 => dst.push_str(s),
        4 => dst.push_str(s),
        5 => dst.push_str(s),
        6 => dst.push_str(s),
        7 => dst.push_str(s),
        8 => dst.push_str(s),
        _ => dst.push_str(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parsers::json_bytes::json_string_pass;

    /// The rules as one function, to state them in these tests (the driver reads the lane's
    /// fields one by one instead, for speed).
    impl Lane {
        /// The lane after `chunk` when `chunk` passes (it then goes to the open call's arguments
        /// through [`Lane::write`]); `None` when the format must take it.
        pub fn pass(self, chunk: &[u8]) -> Option<Lane> {
            match self {
                Lane::Off => None,
                Lane::JsonString { escaped } => {
                    json_string_pass(escaped, chunk).map(|escaped| Lane::JsonString { escaped })
                }
                Lane::RawString {
                    stop,
                    framed,
                    newline_held,
                } => raw_string_pass(stop, framed, newline_held, chunk).map(|(newline_held, _)| Lane::RawString {
                    stop,
                    framed,
                    newline_held,
                }),
                Lane::Defer { until } => defer_pass(until, chunk).then_some(self),
                Lane::Content { stop, hold_trailing_ws } => content_pass(stop, hold_trailing_ws, chunk).then_some(self),
            }
        }

        /// Append a `chunk` that passed this lane to `args` as the format would have; returns the
        /// text appended.
        pub fn write<'a>(self, chunk: &'a str, args: &'a mut String) -> &'a str {
            match self {
                Lane::Off | Lane::JsonString { .. } | Lane::Defer { .. } | Lane::Content { .. } => {
                    push_short(args, chunk);
                    chunk
                }
                Lane::RawString {
                    framed, newline_held, ..
                } => write_raw_string(framed, newline_held, has_string_stop(chunk.as_bytes()), chunk, args),
            }
        }
    }

    #[test]
    fn json_string_lane_takes_plain_text_and_simple_escapes() {
        let plain = Lane::JsonString { escaped: false };
        let after_backslash = Lane::JsonString { escaped: true };
        for ok in ["abcd", "", "ab\\n", "\\\"x\\\\", "é中\\t", "\\/\\b\\f\\r"] {
            assert_eq!(plain.pass(ok.as_bytes()), Some(plain), "{ok:?}");
        }
        assert_eq!(plain.pass(b"ab\\"), Some(after_backslash));
        assert_eq!(after_backslash.pass(b"nab"), Some(plain));
        assert_eq!(after_backslash.pass(b"\\"), Some(plain));
        for no in ["ab\"", "\\u0041", "a\nb", "\\x", "\u{1}"] {
            assert_eq!(plain.pass(no.as_bytes()), None, "{no:?}");
        }
        assert_eq!(after_backslash.pass(b""), Some(after_backslash));
        assert_eq!(after_backslash.pass(b"\"a"), Some(plain));
        for no in ["u0041", "x"] {
            assert_eq!(after_backslash.pass(no.as_bytes()), None, "{no:?}");
        }
    }

    #[test]
    fn raw_string_lane_stops_at_its_byte_and_holds_a_final_newline() {
        let lane = |newline_held| Lane::RawString {
            stop: *b"<//",
            framed: true,
            newline_held,
        };
        assert_eq!(lane(false).pass(b"a\nb\"c"), Some(lane(false)));
        assert_eq!(lane(false).pass(b"a</b"), None);
        assert_eq!(lane(false).pass(b"ab<"), None);
        assert_eq!(lane(false).pass(b"a<b"), Some(lane(false)));
        assert_eq!(lane(false).pass(b"x<y/z"), Some(lane(false)));
        let two_stops = Lane::RawString {
            stop: *b"</p",
            framed: true,
            newline_held: false,
        };
        assert_eq!(two_stops.pass(b"a<pb"), None);
        assert_eq!(two_stops.pass(b"a</b"), None);
        assert_eq!(two_stops.pass(b"a<qb"), Some(two_stops));
        assert_eq!(lane(false).pass(b"ab\n"), Some(lane(true)));
        assert_eq!(lane(true).pass(b""), Some(lane(true)));
        assert_eq!(lane(true).pass(b"x"), Some(lane(false)));
        let mut args = String::from("{");
        assert_eq!(lane(false).write("a\n\"\\", &mut args), "a\\n\\\"\\\\");
        assert_eq!(lane(false).write("ab\n", &mut args), "ab");
        assert_eq!(lane(true).write("\n", &mut args), "\\n");
        assert_eq!(lane(true).write("c", &mut args), "\\nc");
        assert_eq!(args, "{a\\n\\\"\\\\ab\\n\\nc");
        let unframed = Lane::RawString {
            stop: *b"<//",
            framed: false,
            newline_held: false,
        };
        assert_eq!(unframed.pass(b"ab\n"), Some(unframed));
        let mut args = String::new();
        assert_eq!(unframed.write("ab\n", &mut args), "ab\\n");
        assert_eq!(unframed.write("\u{1}é\t\"", &mut args), "\\u0001é\\t\\\"");
    }

    #[test]
    fn defer_stops_at_any_of_its_bytes() {
        let lane = Lane::Defer { until: *b"'\n\r" };
        assert_eq!(lane.pass(b"ab\"c"), Some(lane));
        assert_eq!(lane.pass(b"it\\"), Some(lane));
        assert_eq!(lane.pass(b"a'b"), None);
        assert_eq!(lane.pass(b"a\nb"), None);
        assert_eq!(lane.pass(b"\r"), None);
    }

    #[test]
    fn content_lane_stops_at_its_byte_and_held_whitespace() {
        let lane = |hold_trailing_ws| Lane::Content {
            stop: b'<',
            hold_trailing_ws,
        };
        assert_eq!(lane(true).pass(b"a b."), Some(lane(true)));
        assert_eq!(lane(true).pass(b"a <"), None);
        assert_eq!(lane(true).pass(b"ab\n "), Some(lane(true)));
        assert_eq!(lane(true).pass(b" \n"), Some(lane(true)));
        assert_eq!(lane(true).pass("a\u{3000}".as_bytes()), None);
        assert_eq!(lane(true).pass("\u{3000} ".as_bytes()), None);
        assert_eq!(lane(true).pass(b"a\x0b "), None);
        assert_eq!(lane(false).pass(b"ab\n"), Some(lane(false)));
        assert_eq!(trailing_ws_start(b"ab \n"), Some(2));
        assert_eq!(trailing_ws_start(b"ab"), Some(2));
        assert_eq!(trailing_ws_start(b""), Some(0));
    }

    #[test]
    fn contains_byte_matches_a_scan_at_every_length() {
        let text = b"ab<cd\xe9<<x\x00yz<0123456789<";
        for start in 0..text.len() {
            for end in start..=text.len() {
                let s = &text[start..end];
                for b in [b'<', b'x', 0, 0xe9, b'q'] {
                    assert_eq!(contains_byte(s, b), s.contains(&b), "{s:?} {b}");
                }
            }
        }
    }

    #[test]
    fn off_takes_nothing() {
        assert_eq!(Lane::Off.pass(b"abc"), None);
    }
}
