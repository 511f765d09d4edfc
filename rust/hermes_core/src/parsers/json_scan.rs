//! Incremental JSON scanning: [`JsonScanner`] follows one JSON value through any number of
//! chunks, validating the grammar byte by byte, and [`ObjectWalker`] walks the members of a JSON
//! object, handing out each member's raw value text as it arrives.
//!
//! Neither ever re-reads a consumed byte, and neither recurses: nesting is an explicit stack of
//! one byte per level, so 100k-level documents cost 100 KB, not the call stack. Strings are
//! skipped with `memchr` (validation of control characters is a separate vectorisable pass).
//! Errors are plain data: a [`JsonErrorKind`] and the byte offset where scanning stopped.

use super::json_bytes::{is_ws, json_string_pass};
use super::lane::Lane;

/// What broke the JSON grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonErrorKind {
    ExpectedValue,
    ExpectedKey,
    ExpectedColon,
    ExpectedCommaOrEnd,
    TrailingComma,
    ControlCharacterInString,
    InvalidEscape,
    InvalidUnicodeEscape,
    InvalidNumber,
    InvalidLiteral,
    /// The input ended before the value was complete.
    UnexpectedEnd,
}

impl JsonErrorKind {
    pub fn description(self) -> &'static str {
        match self {
            JsonErrorKind::ExpectedValue => "expected a JSON value",
            JsonErrorKind::ExpectedKey => "expected a double-quoted object key",
            JsonErrorKind::ExpectedColon => "expected ':' after an object key",
            JsonErrorKind::ExpectedCommaOrEnd => "expected ',' or a closing bracket",
            JsonErrorKind::TrailingComma => "trailing comma before a closing bracket",
            JsonErrorKind::ControlCharacterInString => "raw control character inside a string (must be escaped)",
            JsonErrorKind::InvalidEscape => "invalid escape sequence in a string",
            JsonErrorKind::InvalidUnicodeEscape => "invalid \\u escape (needs 4 hex digits)",
            JsonErrorKind::InvalidNumber => "invalid number",
            JsonErrorKind::InvalidLiteral => "invalid literal (only true, false and null are JSON)",
            JsonErrorKind::UnexpectedEnd => "the JSON ends early",
        }
    }
}

/// A grammar error at byte `offset` (relative to where the scanner or walker started).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonError {
    pub kind: JsonErrorKind,
    pub offset: usize,
}

/// Result of feeding a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The whole chunk was consumed and the value is not complete yet.
    NeedMore,
    /// The value ended; bytes after it were not consumed.
    Complete,
    /// Grammar error; the offending byte was not consumed.
    Error(JsonError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

impl Num {
    fn accepting(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::Exp)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Value,
    /// After `,` in an array.
    NextValue,
    /// After `[`.
    FirstValueOrClose,
    /// After `{`.
    FirstKeyOrClose,
    /// After `,` in an object.
    Key,
    Colon,
    AfterValue,
    Str {
        key: bool,
    },
    Esc {
        key: bool,
    },
    Uni {
        key: bool,
        left: u8,
    },
    Num(Num),
    Lit,
    Done,
    Failed(JsonError),
}

/// Follows one JSON value (RFC 8259 grammar) through consecutive chunks.
#[derive(Debug, Clone)]
pub struct JsonScanner {
    stack: Vec<u8>,
    st: St,
    pos: usize,
    lit: &'static [u8],
    lit_i: usize,
}

impl Default for JsonScanner {
    fn default() -> Self {
        JsonScanner::new()
    }
}

impl JsonScanner {
    pub fn new() -> JsonScanner {
        JsonScanner {
            stack: Vec::new(),
            st: St::Value,
            pos: 0,
            lit: b"",
            lit_i: 0,
        }
    }

    /// Start over for a new value (keeps the stack's allocation).
    pub fn reset(&mut self) {
        self.stack.clear();
        self.st = St::Value;
        self.pos = 0;
        self.lit_i = 0;
    }

    /// Bytes consumed since the start.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Current nesting depth (0 outside any container).
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// True inside a string (value or key).
    pub fn in_string(&self) -> bool {
        matches!(self.st, St::Str { .. } | St::Esc { .. } | St::Uni { .. })
    }

    pub fn is_complete(&self) -> bool {
        self.st == St::Done
    }

    /// Inside a string: the [`Lane::JsonString`] that may pass its text on ([`Lane::Off`]
    /// elsewhere). Text the lane passes leaves the scanner as it is, apart from the escape state
    /// ([`JsonScanner::resume_lane`]) and [`JsonScanner::position`].
    pub fn string_lane(&self) -> Lane {
        match self.st {
            St::Str { .. } => Lane::JsonString { escaped: false },
            St::Esc { .. } => Lane::JsonString { escaped: true },
            _ => Lane::Off,
        }
    }

    /// Take over the state a [`Lane::JsonString`] opened from [`JsonScanner::string_lane`]
    /// ended in (other lanes, or outside a string: nothing to do).
    pub fn resume_lane(&mut self, lane: Lane) {
        if let (Lane::JsonString { escaped }, St::Str { key } | St::Esc { key }) = (lane, self.st) {
            self.st = if escaped { St::Esc { key } } else { St::Str { key } };
        }
    }

    fn fail(&mut self, kind: JsonErrorKind, i: usize) -> (usize, Status) {
        let e = JsonError {
            kind,
            offset: self.pos + i,
        };
        self.st = St::Failed(e);
        self.pos += i;
        (i, Status::Error(e))
    }

    /// A value ended at `i` (exclusive). Returns true when it was the top-level value.
    #[inline]
    fn value_done(&mut self) -> bool {
        if self.stack.is_empty() {
            self.st = St::Done;
            true
        } else {
            self.st = St::AfterValue;
            false
        }
    }

    /// Consume as much of `input` as belongs to the value. Returns the bytes consumed and
    /// whether the value is complete, needs more, or is malformed. After `Complete` or `Error`
    /// further feeds consume nothing and repeat the status.
    pub fn feed(&mut self, input: &[u8]) -> (usize, Status) {
        let mut i = 0;
        let n = input.len();
        while i < n {
            match self.st {
                St::Str { key } => {
                    let rest = &input[i..];
                    // Short inputs (streaming): one plain pass beats memchr's setup cost.
                    let stop = if rest.len() < 16 {
                        rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                    } else {
                        let j = memchr::memchr2(b'"', b'\\', rest);
                        let upto = j.unwrap_or(rest.len());
                        match rest[..upto].iter().position(|&b| b < 0x20) {
                            Some(k) => Some(k),
                            None => j,
                        }
                    };
                    let Some(j) = stop else {
                        i = n;
                        continue;
                    };
                    if rest[j] < 0x20 {
                        return self.fail(JsonErrorKind::ControlCharacterInString, i + j);
                    }
                    i += j + 1;
                    if rest[j] == b'\\' {
                        self.st = St::Esc { key };
                    } else if key {
                        self.st = St::Colon;
                    } else if self.value_done() {
                        self.pos += i;
                        return (i, Status::Complete);
                    }
                }
                St::Esc { key } => {
                    match input[i] {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.st = St::Str { key },
                        b'u' => self.st = St::Uni { key, left: 4 },
                        _ => return self.fail(JsonErrorKind::InvalidEscape, i),
                    }
                    i += 1;
                }
                St::Uni { key, left } => {
                    if !input[i].is_ascii_hexdigit() {
                        return self.fail(JsonErrorKind::InvalidUnicodeEscape, i);
                    }
                    self.st = if left == 1 {
                        St::Str { key }
                    } else {
                        St::Uni { key, left: left - 1 }
                    };
                    i += 1;
                }
                St::Value | St::NextValue | St::FirstValueOrClose => {
                    let b = input[i];
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    match b {
                        b'{' => {
                            self.stack.push(b'{');
                            self.st = St::FirstKeyOrClose;
                        }
                        b'[' => {
                            self.stack.push(b'[');
                            self.st = St::FirstValueOrClose;
                        }
                        b'"' => self.st = St::Str { key: false },
                        b'-' => self.st = St::Num(Num::Minus),
                        b'0' => self.st = St::Num(Num::Zero),
                        b'1'..=b'9' => self.st = St::Num(Num::Int),
                        b't' => self.start_lit(b"true"),
                        b'f' => self.start_lit(b"false"),
                        b'n' => self.start_lit(b"null"),
                        b']' if self.st == St::FirstValueOrClose => {
                            self.stack.pop();
                            if self.value_done() {
                                self.pos += i + 1;
                                return (i + 1, Status::Complete);
                            }
                        }
                        b']' if self.st == St::NextValue => return self.fail(JsonErrorKind::TrailingComma, i),
                        _ => return self.fail(JsonErrorKind::ExpectedValue, i),
                    }
                    i += 1;
                }
                St::FirstKeyOrClose | St::Key => {
                    let b = input[i];
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    match b {
                        b'"' => self.st = St::Str { key: true },
                        b'}' if self.st == St::FirstKeyOrClose => {
                            self.stack.pop();
                            if self.value_done() {
                                self.pos += i + 1;
                                return (i + 1, Status::Complete);
                            }
                        }
                        b'}' => return self.fail(JsonErrorKind::TrailingComma, i),
                        _ => return self.fail(JsonErrorKind::ExpectedKey, i),
                    }
                    i += 1;
                }
                St::Colon => {
                    let b = input[i];
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if b != b':' {
                        return self.fail(JsonErrorKind::ExpectedColon, i);
                    }
                    self.st = St::Value;
                    i += 1;
                }
                St::AfterValue => {
                    let b = input[i];
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    let top = self.stack.last().copied();
                    match (b, top) {
                        (b',', Some(b'{')) => self.st = St::Key,
                        (b',', _) => self.st = St::NextValue,
                        (b'}', Some(b'{')) | (b']', Some(b'[')) => {
                            self.stack.pop();
                            if self.value_done() {
                                self.pos += i + 1;
                                return (i + 1, Status::Complete);
                            }
                        }
                        _ => return self.fail(JsonErrorKind::ExpectedCommaOrEnd, i),
                    }
                    i += 1;
                }
                St::Num(s) => {
                    let b = input[i];
                    let next = match (s, b) {
                        (Num::Minus, b'0') => Some(Num::Zero),
                        (Num::Minus, b'1'..=b'9') => Some(Num::Int),
                        (Num::Int, b'0'..=b'9') => Some(Num::Int),
                        (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
                        (Num::Dot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
                        (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::E),
                        (Num::E, b'+' | b'-') => Some(Num::ESign),
                        (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Some(Num::Exp),
                        _ => None,
                    };
                    match next {
                        Some(t) => {
                            self.st = St::Num(t);
                            i += 1;
                        }
                        None if s.accepting() && !b.is_ascii_alphanumeric() && b != b'.' => {
                            // The byte after a number belongs to what follows: not consumed.
                            if self.value_done() {
                                self.pos += i;
                                return (i, Status::Complete);
                            }
                        }
                        None => return self.fail(JsonErrorKind::InvalidNumber, i),
                    }
                }
                St::Lit => {
                    if input[i] != self.lit.get(self.lit_i).copied().unwrap_or(0) {
                        return self.fail(JsonErrorKind::InvalidLiteral, i);
                    }
                    i += 1;
                    self.lit_i += 1;
                    if self.lit_i == self.lit.len() && self.value_done() {
                        self.pos += i;
                        return (i, Status::Complete);
                    }
                }
                St::Done => return (i, Status::Complete),
                St::Failed(e) => return (i, Status::Error(e)),
            }
        }
        self.pos += n;
        match self.st {
            St::Done => (n, Status::Complete),
            St::Failed(e) => (n, Status::Error(e)),
            _ => (n, Status::NeedMore),
        }
    }

    fn start_lit(&mut self, lit: &'static [u8]) {
        self.st = St::Lit;
        self.lit = lit;
        self.lit_i = 1;
    }

    /// Streaming fast path: inside a string, consume `input` whole when the string cannot end or
    /// break in it: no unescaped quote, no control byte, only simple escapes (`\\n`, `\\"`...,
    /// followed across chunk boundaries; a `\\u` escape is left to [`JsonScanner::feed`]).
    /// Returns false, consuming nothing, otherwise; then call [`JsonScanner::feed`].
    #[inline]
    pub fn skip_plain_string(&mut self, input: &[u8]) -> bool {
        let (key, escaped) = match self.st {
            St::Str { key } => (key, false),
            St::Esc { key } => (key, true),
            _ => return false,
        };
        let Some(escaped) = json_string_pass(escaped, input) else {
            return false;
        };
        self.st = if escaped { St::Esc { key } } else { St::Str { key } };
        self.pos += input.len();
        true
    }

    /// The input has ended: completes a top-level number, otherwise reports what is missing.
    pub fn end(&mut self) -> Status {
        match self.st {
            St::Done => Status::Complete,
            St::Num(s) if s.accepting() && self.stack.is_empty() => {
                self.st = St::Done;
                Status::Complete
            }
            St::Failed(e) => Status::Error(e),
            _ => Status::Error(JsonError {
                kind: JsonErrorKind::UnexpectedEnd,
                offset: self.pos,
            }),
        }
    }
}

/// Checks that `text` is exactly one JSON value (surrounding whitespace allowed).
pub fn validate(text: &str) -> Result<(), JsonError> {
    let mut s = JsonScanner::new();
    let bytes = text.as_bytes();
    let (n, status) = s.feed(bytes);
    let status = if status == Status::NeedMore { s.end() } else { status };
    match status {
        Status::Error(e) => Err(e),
        _ => match bytes[n..].iter().position(|&b| !is_ws(b)) {
            Some(j) => Err(JsonError {
                kind: JsonErrorKind::ExpectedCommaOrEnd,
                offset: n + j,
            }),
            None => Ok(()),
        },
    }
}

/// One step of [`ObjectWalker::step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk<'a> {
    /// The whole input was consumed; feed more.
    NeedMore,
    /// A member key is complete: see [`ObjectWalker::key`].
    Key,
    /// The next raw text of the current member's value (exactly the value's text: no
    /// surrounding whitespace).
    Value(&'a str),
    /// The current member's value is complete.
    ValueEnd,
    /// The object's closing `}` was consumed.
    End,
    /// Grammar error (offset relative to the walker's start); the walker stays failed.
    Error(JsonError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum W {
    Open,
    FirstKeyOrClose,
    Key,
    InKey,
    Colon,
    ValueStart,
    InValue,
    AfterValue,
    Done,
    Failed(JsonError),
}

/// Walks one JSON object's members, releasing each value's raw text as it arrives.
#[derive(Debug, Clone)]
pub struct ObjectWalker {
    st: W,
    key_raw: String,
    key: String,
    scanner: JsonScanner,
    pos: usize,
    pending: Option<Walk<'static>>,
}

impl Default for ObjectWalker {
    fn default() -> Self {
        ObjectWalker::new()
    }
}

impl ObjectWalker {
    /// Expects the object's `{` (after optional whitespace).
    pub fn new() -> ObjectWalker {
        ObjectWalker {
            st: W::Open,
            key_raw: String::new(),
            key: String::new(),
            scanner: JsonScanner::new(),
            pos: 0,
            pending: None,
        }
    }

    pub fn reset(&mut self) {
        self.st = W::Open;
        self.key_raw.clear();
        self.key.clear();
        self.scanner.reset();
        self.pos = 0;
        self.pending = None;
    }

    /// The current member's key (decoded).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Bytes consumed since the start.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn is_done(&self) -> bool {
        self.st == W::Done
    }

    /// True while a member value is being scanned.
    pub fn in_value(&self) -> bool {
        self.st == W::InValue
    }

    /// Whether the JSON could still be completed by more text (false after an error or the end).
    pub fn error(&self) -> Option<JsonError> {
        match self.st {
            W::Failed(e) => Some(e),
            _ => None,
        }
    }

    fn fail(&mut self, kind: JsonErrorKind, consumed: usize) -> (usize, Walk<'static>) {
        self.pos += consumed;
        let e = JsonError { kind, offset: self.pos };
        self.st = W::Failed(e);
        (consumed, Walk::Error(e))
    }

    fn finish_key(&mut self) {
        let raw = self.key_raw.as_str();
        let inner = raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default();
        self.key = if inner.contains('\\') {
            serde_json::from_str::<String>(raw).unwrap_or_else(|_| inner.to_owned())
        } else {
            inner.to_owned()
        };
    }

    /// While a member value is inside a string with nothing pending: the lane that may pass its
    /// text on (see [`JsonScanner::string_lane`]).
    pub fn string_lane(&self) -> Lane {
        if self.st == W::InValue && self.pending.is_none() {
            self.scanner.string_lane()
        } else {
            Lane::Off
        }
    }

    /// The current member's value is complete and its `ValueEnd` not yet delivered (it comes
    /// with the next step).
    pub fn value_ended(&self) -> bool {
        matches!(self.pending, Some(Walk::ValueEnd))
    }

    /// See [`JsonScanner::resume_lane`].
    pub fn resume_lane(&mut self, lane: Lane) {
        if self.st == W::InValue && self.pending.is_none() {
            self.scanner.resume_lane(lane);
        }
    }

    /// Streaming fast path: while a member value is inside a string, consume `input` whole
    /// when it cannot end the string (see [`JsonScanner::skip_plain_string`]). The
    /// caller treats `input` as `Walk::Value(input)`.
    #[inline]
    pub fn skip_plain_string(&mut self, input: &[u8]) -> bool {
        if self.st == W::InValue && self.pending.is_none() && self.scanner.skip_plain_string(input) {
            self.pos += input.len();
            true
        } else {
            false
        }
    }

    /// Process `input` up to the next event. Returns the bytes consumed and the event.
    pub fn step<'a>(&mut self, input: &'a str) -> (usize, Walk<'a>) {
        if let Some(p) = self.pending.take() {
            return (0, p);
        }
        let bytes = input.as_bytes();
        let mut i = 0;
        loop {
            match self.st {
                W::Done => {
                    self.pos += i;
                    return (i, Walk::End);
                }
                W::Failed(e) => {
                    self.pos += i;
                    return (i, Walk::Error(e));
                }
                W::InKey => {
                    let (n, status) = self.scanner.feed(&bytes[i..]);
                    self.key_raw.push_str(input.get(i..i + n).unwrap_or_default());
                    i += n;
                    match status {
                        Status::NeedMore => {
                            self.pos += i;
                            return (i, Walk::NeedMore);
                        }
                        Status::Complete => {
                            self.finish_key();
                            self.st = W::Colon;
                            self.pos += i;
                            return (i, Walk::Key);
                        }
                        Status::Error(e) => return self.fail(e.kind, i),
                    }
                }
                W::InValue => {
                    let (n, status) = self.scanner.feed(&bytes[i..]);
                    let text = input.get(i..i + n).unwrap_or_default();
                    i += n;
                    self.pos += i;
                    match status {
                        Status::NeedMore => return (i, if n > 0 { Walk::Value(text) } else { Walk::NeedMore }),
                        Status::Complete => {
                            self.st = W::AfterValue;
                            if n == 0 {
                                return (i, Walk::ValueEnd);
                            }
                            self.pending = Some(Walk::ValueEnd);
                            return (i, Walk::Value(text));
                        }
                        Status::Error(e) => {
                            let e = JsonError {
                                kind: e.kind,
                                offset: self.pos,
                            };
                            self.st = W::Failed(e);
                            if n == 0 {
                                return (i, Walk::Error(e));
                            }
                            self.pending = Some(Walk::Error(e));
                            return (i, Walk::Value(text));
                        }
                    }
                }
                _ => {}
            }
            let Some(&b) = bytes.get(i) else {
                self.pos += i;
                return (i, Walk::NeedMore);
            };
            if is_ws(b) {
                i += 1;
                continue;
            }
            match (self.st, b) {
                (W::Open, b'{') => self.st = W::FirstKeyOrClose,
                (W::Open, _) => return self.fail(JsonErrorKind::ExpectedValue, i),
                (W::FirstKeyOrClose | W::Key, b'"') => {
                    self.key_raw.clear();
                    self.scanner.reset();
                    self.st = W::InKey;
                    continue;
                }
                (W::FirstKeyOrClose, b'}') | (W::AfterValue, b'}') => {
                    self.st = W::Done;
                    i += 1;
                    continue;
                }
                (W::Key, b'}') => return self.fail(JsonErrorKind::TrailingComma, i),
                (W::FirstKeyOrClose | W::Key, _) => return self.fail(JsonErrorKind::ExpectedKey, i),
                (W::Colon, b':') => self.st = W::ValueStart,
                (W::Colon, _) => return self.fail(JsonErrorKind::ExpectedColon, i),
                (W::ValueStart, _) => {
                    self.scanner.reset();
                    self.st = W::InValue;
                    continue;
                }
                (W::AfterValue, b',') => self.st = W::Key,
                (W::AfterValue, _) => return self.fail(JsonErrorKind::ExpectedCommaOrEnd, i),
                _ => return self.fail(JsonErrorKind::ExpectedValue, i),
            }
            i += 1;
        }
    }

    /// The input has ended: completes a trailing top-level number value if that is all that is
    /// missing... which can never complete an object, so this only reports what is missing.
    pub fn end(&mut self) -> JsonError {
        match self.st {
            W::Failed(e) => e,
            _ => JsonError {
                kind: JsonErrorKind::UnexpectedEnd,
                offset: self.pos,
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn scan_all(text: &str) -> Result<usize, JsonError> {
        let mut s = JsonScanner::new();
        let (n, st) = s.feed(text.as_bytes());
        match if st == Status::NeedMore { s.end() } else { st } {
            Status::Complete => Ok(n),
            Status::Error(e) => Err(e),
            Status::NeedMore => unreachable!(),
        }
    }

    const VALID: &[&str] = &[
        r#"{}"#,
        r#"[]"#,
        r#"{"a": [1, -2.5e+3, 0, -0.0, 1E9, true, false, null, "x\"\\\/\b\f\n\r\t\u00e9"], "b": {"c": {}}}"#,
        r#"  {"k" : "v" , "n":12345678901234567890}  "#,
        r#""just a string""#,
        "123",
        "-0.5e-7",
        r#"{"emoji": "😀 \ud83d\ude00", "cjk": "中文"}"#,
    ];

    const INVALID: &[(&str, JsonErrorKind, usize)] = &[
        (r#"{"a": 1,}"#, JsonErrorKind::TrailingComma, 8),
        (r#"[1, 2,]"#, JsonErrorKind::TrailingComma, 6),
        (r#"{'a': 1}"#, JsonErrorKind::ExpectedKey, 1),
        (r#"{a: 1}"#, JsonErrorKind::ExpectedKey, 1),
        (r#"{"a" 1}"#, JsonErrorKind::ExpectedColon, 5),
        (r#"{"a": NaN}"#, JsonErrorKind::ExpectedValue, 6),
        (r#"{"a": True}"#, JsonErrorKind::ExpectedValue, 6),
        (r#"{"a": tru}"#, JsonErrorKind::InvalidLiteral, 9),
        (r#"{"a": "x\q"}"#, JsonErrorKind::InvalidEscape, 9),
        (r#"{"a": "\u12G4"}"#, JsonErrorKind::InvalidUnicodeEscape, 11),
        ("{\"a\": \"line\nbreak\"}", JsonErrorKind::ControlCharacterInString, 11),
        (r#"{"a": 01}"#, JsonErrorKind::InvalidNumber, 7),
        (r#"{"a": 1.}"#, JsonErrorKind::InvalidNumber, 8),
        (r#"{"a": -}"#, JsonErrorKind::InvalidNumber, 7),
        (r#"{"a": 1 2}"#, JsonErrorKind::ExpectedCommaOrEnd, 8),
        (r#"[1}"#, JsonErrorKind::ExpectedCommaOrEnd, 2),
        (r#"{"a": [1, 2"#, JsonErrorKind::UnexpectedEnd, 11),
    ];

    #[test]
    fn valid_and_invalid_table() {
        for text in VALID {
            assert!(scan_all(text).is_ok(), "{text}");
            assert!(validate(text).is_ok(), "{text}");
            assert!(serde_json::from_str::<serde_json::Value>(text).is_ok(), "{text}");
        }
        for (text, kind, offset) in INVALID {
            assert_eq!(
                scan_all(text),
                Err(JsonError {
                    kind: *kind,
                    offset: *offset
                }),
                "{text}"
            );
        }
        assert!(validate("{} x").is_err());
    }

    /// Every split point of every case gives the same answer as the whole text (jiter's
    /// every-prefix pattern, here as every two-chunk partition plus byte-by-byte).
    #[test]
    fn every_split_same_answer() {
        let all: Vec<&str> = VALID
            .iter()
            .copied()
            .chain(INVALID.iter().map(|(t, _, _)| *t))
            .collect();
        for text in all {
            let whole = scan_all(text);
            let bytes = text.as_bytes();
            for cut in 0..=bytes.len() {
                let mut s = JsonScanner::new();
                let (n1, st1) = s.feed(&bytes[..cut]);
                let (total, st) = if st1 == Status::NeedMore {
                    let (n2, st2) = s.feed(&bytes[cut..]);
                    (n1 + n2, st2)
                } else {
                    (n1, st1)
                };
                let st = if st == Status::NeedMore { s.end() } else { st };
                let got = match st {
                    Status::Complete => Ok(total),
                    Status::Error(e) => Err(e),
                    Status::NeedMore => unreachable!(),
                };
                assert_eq!(got, whole, "{text} cut at {cut}");
            }
            let mut s = JsonScanner::new();
            let mut last = Status::NeedMore;
            for i in 0..bytes.len() {
                let (_, st) = s.feed(&bytes[i..i + 1]);
                last = st;
                if st != Status::NeedMore {
                    break;
                }
            }
            if last == Status::NeedMore {
                last = s.end();
            }
            assert_eq!(matches!(last, Status::Complete), whole.is_ok(), "{text} byte by byte");
        }
    }

    #[test]
    fn top_level_number_needs_terminator_or_end() {
        let mut s = JsonScanner::new();
        assert_eq!(s.feed(b"12"), (2, Status::NeedMore));
        assert_eq!(s.feed(b"3,"), (1, Status::Complete));
        let mut s = JsonScanner::new();
        assert_eq!(s.feed(b"12"), (2, Status::NeedMore));
        assert_eq!(s.end(), Status::Complete);
    }

    #[test]
    fn deep_nesting_without_recursion() {
        let depth = 200_000;
        let text = "[".repeat(depth) + &"]".repeat(depth);
        assert_eq!(scan_all(&text), Ok(text.len()));
        let obj = r#"{"a":"#.repeat(depth) + "1" + &"}".repeat(depth);
        assert_eq!(scan_all(&obj), Ok(obj.len()));
        let unclosed = "[".repeat(depth);
        assert_eq!(scan_all(&unclosed).unwrap_err().kind, JsonErrorKind::UnexpectedEnd);
    }

    fn walk_all(text: &str, chunk: usize) -> Vec<String> {
        let mut w = ObjectWalker::new();
        let mut log = Vec::new();
        let mut value = String::new();
        let mut start = 0;
        while start < text.len() {
            let mut end = (start + chunk).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let piece = &text[start..end];
            let mut at = 0;
            loop {
                let (n, ev) = w.step(&piece[at..]);
                at += n;
                match ev {
                    Walk::NeedMore => break,
                    Walk::Key => log.push(format!("key:{}", w.key())),
                    Walk::Value(t) => value.push_str(t),
                    Walk::ValueEnd => log.push(format!("value:{}", std::mem::take(&mut value))),
                    Walk::End => {
                        log.push("end".into());
                        return log;
                    }
                    Walk::Error(e) => {
                        log.push(format!("error:{:?}@{}", e.kind, e.offset));
                        return log;
                    }
                }
            }
            start = end;
        }
        log
    }

    #[test]
    fn walker_members_any_chunking() {
        let text =
            r#" { "name" : "read_file", "arguments": {"path": "a\"}b", "n": [1, {"x": 2}]}, "z\u0041": 12 } tail"#;
        let expect = vec![
            "key:name".to_string(),
            "value:\"read_file\"".into(),
            "key:arguments".into(),
            r#"value:{"path": "a\"}b", "n": [1, {"x": 2}]}"#.into(),
            "key:zA".into(),
            "value:12".into(),
            "end".into(),
        ];
        for chunk in [1, 2, 3, 7, 1000] {
            assert_eq!(walk_all(text, chunk), expect, "chunk {chunk}");
        }
        let bad = r#"{"name": "x", "arguments": {"a": 1,}}"#;
        for chunk in [1, 5, 100] {
            let log = walk_all(bad, chunk);
            assert_eq!(log.last().unwrap(), "error:TrailingComma@35", "chunk {chunk}");
        }
    }

    /// Feeding through the in-string fast path wherever it accepts a chunk must reach the same
    /// status, offsets and errors as plain `feed`, at every chunk size.
    #[test]
    fn skip_plain_string_agrees_with_feed() {
        let texts = [
            r#"{"a": "x\ny\"z\\w\/q", "b": "\u0041\t", "c": "bad \x esc"}"#,
            "{\"a\": \"ctrl\u{1}\"}",
            r#"["ab\"", "\\", "\\\""]"#,
        ];
        for text in texts {
            let mut whole = JsonScanner::new();
            let expected = whole.feed(text.as_bytes());
            for size in 1..9 {
                let mut s = JsonScanner::new();
                let mut last = (0, Status::NeedMore);
                let mut consumed = 0;
                for chunk in text.as_bytes().chunks(size) {
                    if s.skip_plain_string(chunk) {
                        consumed += chunk.len();
                        continue;
                    }
                    last = s.feed(chunk);
                    consumed += last.0;
                    if last.1 != Status::NeedMore {
                        break;
                    }
                }
                assert_eq!((consumed, last.1), expected, "{text} in chunks of {size}");
                assert_eq!(s.position(), whole.position(), "{text} in chunks of {size}");
            }
        }
    }
}
