//! Python literal grammar for the pythonic formats: one call `name(key=value, ...)` whose values
//! are Python literals, turned into JSON text. Nothing is evaluated.
//!
//! Accepted, as vLLM 0.33.0 accepts them through Python's `ast` (`get_parameter_value`):
//! - strings: `'...'`, `"..."`, triple-quoted, with the prefixes `r`, `u`, `f` (only without
//!   `{placeholders}`; `{{`/`}}` are braces) and `rf`/`fr` in any case; adjacent literals are
//!   concatenated; every escape of Python source (`\n`, `\t`, `\\`, `\'`, `\"`, `\a`, `\b`,
//!   `\f`, `\v`, `\r`, octal `\o`..`\ooo`, `\xhh`, `\uXXXX` with surrogate pairs combined,
//!   `\UXXXXXXXX`, backslash-newline); unknown escapes keep their backslash. Not accepted:
//!   bytes (`b'..'`: no JSON form), `\N{NAME}` escapes (no Unicode name table here);
//! - numbers: decimal, `0x`/`0o`/`0b` integers of any size, floats with `.`/exponent, `_`
//!   separators, unary `-`/`+` (repeated) on numbers; complex numbers and non-finite floats are
//!   refused (no JSON form);
//! - `True`/`False`/`None` and `true`/`false`/`null`;
//! - lists, tuples (become lists), sets (become lists, in source order), dicts whose keys are
//!   constants (strings, numbers, booleans, `None`: non-string keys become their JSON text);
//! - whitespace, newlines and `#` comments between tokens.
//!
//! Anything else (a name, a nested call, an operator, `*args`, a positional argument, a repeated
//! keyword) is an error with a byte offset and a message. Nesting deeper than [`MAX_DEPTH`] is an
//! error, not a stack overflow.

use super::schema_values::clean_digits;
use crate::parsers::json_escape::escape_json_into;

/// Deepest nesting of brackets accepted in one value (CPython's parser stops near 200 too).
pub const MAX_DEPTH: usize = 200;

/// Why a call's text is not a literal call. `at` is a byte offset into the parsed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LitError {
    pub at: usize,
    pub msg: String,
}

fn err<T>(at: usize, msg: impl Into<String>) -> Result<T, LitError> {
    Err(LitError { at, msg: msg.into() })
}

/// What a parsed value was (for unary minus and dict keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
    Str,
    Bool,
    Null,
    Container,
}

/// A Python identifier (ASCII letters, digits, `_`; not starting with a digit).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Python keywords (not usable as keyword-argument names).
pub fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "False"
            | "None"
            | "True"
            | "and"
            | "as"
            | "assert"
            | "async"
            | "await"
            | "break"
            | "class"
            | "continue"
            | "def"
            | "del"
            | "elif"
            | "else"
            | "except"
            | "finally"
            | "for"
            | "from"
            | "global"
            | "if"
            | "import"
            | "in"
            | "is"
            | "lambda"
            | "nonlocal"
            | "not"
            | "or"
            | "pass"
            | "raise"
            | "return"
            | "try"
            | "while"
            | "with"
            | "yield"
    )
}

/// A parsed call: its name, its arguments as JSON object text, and notes about accepted but
/// lossy input (a set literal, whose order Python does not keep, became a list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LitCall {
    pub name: String,
    pub args: String,
    pub notes: Vec<LitError>,
}

/// Parse `name(key=value, ...)` (the whole of `src`, surrounding whitespace allowed) into the call's
/// name and its arguments as a JSON object text.
pub fn parse_call(src: &str) -> Result<LitCall, LitError> {
    let mut p = Parser::new(src);
    p.ws();
    let name = p.dotted_name()?;
    p.ws();
    if p.peek() != Some(b'(') {
        return err(p.i, format!("expected '(' after the tool name {name:?}"));
    }
    let args = p.call_args()?;
    p.ws();
    if p.i < p.s.len() {
        return err(p.i, "unexpected text after the call's ')'");
    }
    Ok(LitCall {
        name,
        args,
        notes: p.notes,
    })
}

/// Parse the argument list `(key=value, ...)` at the start of `src`, which may go on after its
/// `)`: the arguments as JSON object text, notes, and the offset just past the `)`. An error
/// also when `src` ends before the `)` (the caller may retry with more text).
pub fn parse_args_prefix(src: &str) -> Result<(String, Vec<LitError>, usize), LitError> {
    let mut p = Parser::new(src);
    let args = p.call_args()?;
    Ok((args, p.notes, p.i))
}

struct Parser<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
    depth: usize,
    notes: Vec<LitError>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Parser<'a> {
        Parser {
            s: src.as_bytes(),
            src,
            i: 0,
            depth: 0,
            notes: Vec::new(),
        }
    }
}

impl Parser<'_> {
    /// `(key=value, ...)` at `self.i` (the `(`), through its `)`, as a JSON object text.
    fn call_args(&mut self) -> Result<String, LitError> {
        let rest = self.s.len() - self.i;
        let mut args = String::with_capacity(rest.min(1 << 20) + rest.min(1 << 20) / 8 + 16);
        args.push('{');
        self.i += 1;
        let mut keys: Vec<String> = Vec::new();
        loop {
            self.ws();
            match self.peek() {
                Some(b')') => {
                    self.i += 1;
                    break;
                }
                None => return err(self.i, "the call is not closed by ')'"),
                _ => {}
            }
            let key_at = self.i;
            if matches!(self.peek(), Some(b'*')) {
                return err(key_at, "*args / **kwargs are not literal arguments");
            }
            let key = self.identifier();
            self.ws();
            if key.is_empty() || self.peek() != Some(b'=') || self.s.get(self.i + 1) == Some(&b'=') {
                return err(
                    key_at,
                    "positional argument: tool arguments must be written as key=value",
                );
            }
            self.i += 1;
            if keys.iter().any(|k| k == &key) {
                return err(key_at, format!("keyword argument {key:?} is repeated"));
            }
            if !keys.is_empty() {
                args.push_str(", ");
            }
            args.push('"');
            escape_json_into(&mut args, &key);
            args.push_str("\": ");
            keys.push(key);
            self.value(&mut args)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b')') => {}
                _ => {
                    return err(
                        self.i,
                        "expected ',' or ')' after an argument value (values must be plain literals)",
                    )
                }
            }
        }
        args.push('}');
        Ok(args)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Whitespace, newlines, `#` comments and backslash line continuations.
    fn ws(&mut self) {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => self.i += 1,
                b'#' => {
                    while let Some(c) = self.peek() {
                        if c == b'\n' {
                            break;
                        }
                        self.i += 1;
                    }
                }
                b'\\' if matches!(self.s.get(self.i + 1), Some(b'\n')) => self.i += 2,
                b'\\' if self.s.get(self.i + 1) == Some(&b'\r') && self.s.get(self.i + 2) == Some(&b'\n') => {
                    self.i += 3
                }
                _ => break,
            }
        }
    }

    fn identifier(&mut self) -> String {
        let start = self.i;
        if matches!(self.peek(), Some(b) if b.is_ascii_alphabetic() || b == b'_') {
            while matches!(self.peek(), Some(b) if b.is_ascii_alphanumeric() || b == b'_') {
                self.i += 1;
            }
        }
        self.src.get(start..self.i).unwrap_or_default().to_owned()
    }

    fn dotted_name(&mut self) -> Result<String, LitError> {
        let start = self.i;
        let mut name = self.identifier();
        if name.is_empty() {
            return err(start, "expected a tool name");
        }
        loop {
            let save = self.i;
            self.ws();
            if self.peek() != Some(b'.') {
                self.i = save;
                return Ok(name);
            }
            self.i += 1;
            self.ws();
            let part = self.identifier();
            if part.is_empty() {
                return err(self.i, "expected a name after '.' in the tool name");
            }
            name.push('.');
            name.push_str(&part);
        }
    }

    /// One literal, appended to `out` as JSON.
    fn value(&mut self, out: &mut String) -> Result<Kind, LitError> {
        self.ws();
        let at = self.i;
        let Some(b) = self.peek() else {
            return err(at, "expected a value");
        };
        match b {
            b'[' | b'(' | b'{' => {
                if self.depth >= MAX_DEPTH {
                    return err(at, format!("values nested deeper than {MAX_DEPTH} levels"));
                }
                self.depth += 1;
                let r = match b {
                    b'[' => self.sequence(out, b']').map(|_| Kind::Container),
                    b'(' => self.paren(out),
                    _ => self.brace(out).map(|_| Kind::Container),
                };
                self.depth -= 1;
                r
            }
            b'\'' | b'"' => self.strings(out),
            b'-' | b'+' => {
                self.i += 1;
                let mut operand = String::new();
                let kind = self.value(&mut operand)?;
                if !matches!(kind, Kind::Int | Kind::Float) {
                    return err(at, "unary '-'/'+' applies only to numbers here");
                }
                if b == b'-' {
                    match operand.strip_prefix('-') {
                        Some(pos) => out.push_str(pos),
                        None => {
                            out.push('-');
                            out.push_str(&operand);
                        }
                    }
                } else {
                    out.push_str(&operand);
                }
                Ok(kind)
            }
            b'0'..=b'9' => self.number(out),
            b'.' if matches!(self.s.get(self.i + 1), Some(b'0'..=b'9')) => self.number(out),
            _ if b.is_ascii_alphabetic() || b == b'_' => {
                let word_at = self.i;
                let word = self.identifier();
                if matches!(self.peek(), Some(b'\'' | b'"')) && is_string_prefix(&word) {
                    self.i = word_at;
                    return self.strings(out);
                }
                let (json, kind) = match word.as_str() {
                    "True" | "true" => ("true", Kind::Bool),
                    "False" | "false" => ("false", Kind::Bool),
                    "None" | "null" => ("null", Kind::Null),
                    _ => {
                        self.ws();
                        let what = if self.peek() == Some(b'(') {
                            "a nested call"
                        } else {
                            "a variable"
                        };
                        return err(word_at, format!("{word:?} is {what}, not a literal value"));
                    }
                };
                out.push_str(json);
                Ok(kind)
            }
            _ => err(
                at,
                format!("unexpected {:?}: expected a literal value", char_at(self.src, at)),
            ),
        }
    }

    /// `[a, b]` (list) or the items of a set; the opening bracket is at `self.i`.
    fn sequence(&mut self, out: &mut String, close: u8) -> Result<(), LitError> {
        self.i += 1;
        out.push('[');
        let mut n = 0;
        loop {
            self.ws();
            if self.peek() == Some(close) {
                self.i += 1;
                out.push(']');
                return Ok(());
            }
            if n > 0 {
                out.push_str(", ");
            }
            self.value(out)?;
            n += 1;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(c) if c == close => {}
                _ => return err(self.i, format!("expected ',' or {:?} in a list", close as char)),
            }
        }
    }

    /// `(x)` is `x`; `()`, `(x,)` and `(x, y)` are tuples (lists in JSON).
    fn paren(&mut self, out: &mut String) -> Result<Kind, LitError> {
        let open = self.i;
        self.i += 1;
        self.ws();
        if self.peek() == Some(b')') {
            self.i += 1;
            out.push_str("[]");
            return Ok(Kind::Container);
        }
        let mut first = String::new();
        let kind = self.value(&mut first)?;
        self.ws();
        match self.peek() {
            Some(b')') => {
                self.i += 1;
                out.push_str(&first);
                Ok(kind)
            }
            Some(b',') => {
                // A tuple: rewind to the '(' and read it as a sequence.
                self.i = open;
                self.sequence(out, b')')?;
                Ok(Kind::Container)
            }
            _ => err(self.i, "expected ',' or ')' in parentheses"),
        }
    }

    /// `{}` / `{k: v, ...}` (dict) or `{a, b}` (set, a list in JSON).
    fn brace(&mut self, out: &mut String) -> Result<(), LitError> {
        let open = self.i;
        self.i += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            out.push_str("{}");
            return Ok(());
        }
        if self.peek() == Some(b'*') {
            return err(self.i, "'**' unpacking is not a literal");
        }
        let mut key = String::new();
        let key_at = self.i;
        let key_kind = self.value(&mut key)?;
        self.ws();
        if self.peek() != Some(b':') {
            // A set: read it again as a sequence.
            self.notes.push(LitError {
                at: open,
                msg: "a set literal was turned into a list (Python sets have no order)".into(),
            });
            self.i = open;
            return self.sequence(out, b'}');
        }
        out.push('{');
        let mut first = true;
        let mut pending = Some((key, key_kind, key_at));
        loop {
            let (k, kind, at) = match pending.take() {
                Some(k) => k,
                None => {
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        out.push('}');
                        return Ok(());
                    }
                    let at = self.i;
                    let mut k = String::new();
                    let kind = self.value(&mut k)?;
                    self.ws();
                    if self.peek() != Some(b':') {
                        return err(self.i, "expected ':' after a dict key");
                    }
                    (k, kind, at)
                }
            };
            // vLLM accepts only constants as keys: no containers, no signed numbers.
            if kind == Kind::Container || matches!(self.s.get(at), Some(b'-' | b'+')) {
                return err(at, "dict keys must be constants (strings, numbers, True/False/None)");
            }
            self.i += 1; // ':'
            if !first {
                out.push_str(", ");
            }
            first = false;
            if kind == Kind::Str {
                out.push_str(&k);
            } else {
                // json.dumps turns number / bool / None keys into their JSON text.
                out.push('"');
                out.push_str(&k);
                out.push('"');
            }
            out.push_str(": ");
            self.value(out)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    out.push('}');
                    return Ok(());
                }
                _ => return err(self.i, "expected ',' or '}' in a dict"),
            }
        }
    }

    /// One or more adjacent string literals (Python concatenates them).
    fn strings(&mut self, out: &mut String) -> Result<Kind, LitError> {
        out.push('"');
        loop {
            self.string(out)?;
            let save = self.i;
            self.ws();
            let word_at = self.i;
            let word = self.identifier();
            if matches!(self.peek(), Some(b'\'' | b'"')) && (word.is_empty() || is_string_prefix(&word)) {
                self.i = word_at;
                continue;
            }
            self.i = save;
            break;
        }
        out.push('"');
        Ok(Kind::Str)
    }

    /// One string literal (with its prefix) at `self.i`, appended to `out` as JSON string text
    /// (without quotes): decoded and escaped in one pass.
    fn string(&mut self, out: &mut String) -> Result<(), LitError> {
        let start = self.i;
        let prefix = self.identifier().to_ascii_lowercase();
        if prefix.contains('b') {
            return err(start, "bytes literals have no JSON form");
        }
        let raw = prefix.contains('r');
        let fstring = prefix.contains('f');
        let Some(q) = self.peek() else {
            return err(self.i, "expected a string");
        };
        let triple = self.s.get(self.i + 1) == Some(&q) && self.s.get(self.i + 2) == Some(&q);
        self.i += if triple { 3 } else { 1 };
        let mut seg_start = self.i;
        let mut pending_high: Option<u32> = None;
        loop {
            // Bytes that mean themselves in Python and in JSON are copied as one slice.
            self.i += json_plain_len(self.s.get(self.i..).unwrap_or_default(), q, fstring);
            let Some(b) = self.peek() else {
                return err(start, "unterminated string literal");
            };
            push_plain(out, self.src, seg_start, self.i, &mut pending_high);
            if b == q {
                if !triple {
                    self.i += 1;
                    break;
                }
                if self.s.get(self.i + 1) == Some(&q) && self.s.get(self.i + 2) == Some(&q) {
                    self.i += 3;
                    break;
                }
                push_json_char(out, q as char);
                self.i += 1;
            } else if b == b'\n' || b == b'\r' {
                // Python reads \r\n and a lone \r in source as a newline.
                if !triple {
                    return err(self.i, "newline inside a single-quoted string");
                }
                out.push_str("\\n");
                self.i += if b == b'\r' && self.s.get(self.i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
            } else if fstring && (b == b'{' || b == b'}') {
                if self.s.get(self.i + 1) == Some(&b) {
                    out.push(b as char);
                    self.i += 2;
                } else {
                    return err(self.i, "f-string with a {placeholder} is an expression, not a literal");
                }
            } else if b != b'\\' {
                // '"' or a control character: plain text in Python that JSON escapes.
                flush_high(out, &mut pending_high);
                push_json_char(out, b as char);
                self.i += 1;
            } else if raw {
                // In raw strings a backslash stays, and it keeps the next character (even a quote).
                out.push_str("\\\\");
                self.i += 1;
                match char_at(self.src, self.i) {
                    Some('\r' | '\n') => {
                        // A backslash-newline in a raw string keeps both (as "\\\n").
                        if self.s.get(self.i) == Some(&b'\r') && self.s.get(self.i + 1) == Some(&b'\n') {
                            self.i += 1;
                        }
                        out.push_str("\\n");
                        self.i += 1;
                    }
                    Some(c) => {
                        push_json_char(out, c);
                        self.i += c.len_utf8();
                    }
                    None => {}
                }
            } else {
                self.escape(out, &mut pending_high)?;
            }
            seg_start = self.i;
        }
        flush_high(out, &mut pending_high);
        Ok(())
    }

    /// A backslash escape at `self.i` in a non-raw string.
    fn escape(&mut self, out: &mut String, pending_high: &mut Option<u32>) -> Result<(), LitError> {
        let at = self.i;
        self.i += 1;
        let Some(c) = char_at(self.src, self.i) else {
            return err(at, "unterminated string literal");
        };
        self.i += c.len_utf8();
        let simple = match c {
            '\n' => Some(None),
            '\r' => {
                if self.peek() == Some(b'\n') {
                    self.i += 1;
                }
                Some(None)
            }
            '\\' => Some(Some('\\')),
            '\'' => Some(Some('\'')),
            '"' => Some(Some('"')),
            'a' => Some(Some('\x07')),
            'b' => Some(Some('\x08')),
            'f' => Some(Some('\x0c')),
            'n' => Some(Some('\n')),
            'r' => Some(Some('\r')),
            't' => Some(Some('\t')),
            'v' => Some(Some('\x0b')),
            _ => None,
        };
        if let Some(ch) = simple {
            flush_high(out, pending_high);
            if let Some(ch) = ch {
                push_json_char(out, ch);
            }
            return Ok(());
        }
        let code = match c {
            '0'..='7' => {
                let mut v = c as u32 - '0' as u32;
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + (d - b'0') as u32;
                            self.i += 1;
                        }
                        _ => break,
                    }
                }
                v
            }
            'x' => self.hex(2, at)?,
            'u' => self.hex(4, at)?,
            'U' => self.hex(8, at)?,
            'N' => return err(at, "\\N{...} escapes are not supported; write the character itself"),
            other => {
                // Unknown escapes keep their backslash (Python warns but keeps it).
                flush_high(out, pending_high);
                out.push_str("\\\\");
                push_json_char(out, other);
                return Ok(());
            }
        };
        push_code(out, code, pending_high, at)
    }

    fn hex(&mut self, n: usize, at: usize) -> Result<u32, LitError> {
        let digits = self.src.get(self.i..self.i + n).unwrap_or_default();
        if digits.len() != n || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return err(at, format!("truncated escape: expected {n} hex digits"));
        }
        self.i += n;
        u32::from_str_radix(digits, 16).or_else(|_| err(at, "bad hex escape"))
    }

    /// A number at `self.i` (no sign), appended as JSON.
    fn number(&mut self, out: &mut String) -> Result<Kind, LitError> {
        let start = self.i;
        while matches!(self.peek(), Some(b) if b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
            || (matches!(self.peek(), Some(b'+' | b'-'))
                && matches!(self.s.get(self.i.wrapping_sub(1)), Some(b'e' | b'E'))
                && !is_radix_prefixed(self.s.get(start..self.i).unwrap_or_default()))
        {
            self.i += 1;
        }
        let tok = self.src.get(start..self.i).unwrap_or_default();
        let lower = tok.to_ascii_lowercase();
        if lower.ends_with('j') {
            return err(start, "complex numbers have no JSON form");
        }
        let radix = match lower.get(..2) {
            Some("0x") => 16,
            Some("0o") => 8,
            Some("0b") => 2,
            _ => 10,
        };
        if radix != 10 {
            let digits = lower.get(2..).unwrap_or_default();
            let digits = digits.strip_prefix('_').unwrap_or(digits);
            return match clean_digits(digits, radix) {
                Some(d) => {
                    out.push_str(&to_decimal(&d, radix));
                    Ok(Kind::Int)
                }
                None => err(start, format!("invalid number {tok:?}")),
            };
        }
        if !lower.contains(['.', 'e']) {
            let Some(d) = clean_digits(&lower, 10) else {
                return err(start, format!("invalid number {tok:?}"));
            };
            if d.len() > 1 && d.starts_with('0') && d.bytes().any(|b| b != b'0') {
                return err(
                    start,
                    format!("leading zeros in a decimal integer are not allowed ({tok:?})"),
                );
            }
            let t = d.trim_start_matches('0');
            out.push_str(if t.is_empty() { "0" } else { t });
            return Ok(Kind::Int);
        }
        if !valid_float(&lower) {
            return err(start, format!("invalid number {tok:?}"));
        }
        let v: f64 = match lower.replace('_', "").parse() {
            Ok(v) => v,
            Err(_) => return err(start, format!("invalid number {tok:?}")),
        };
        match serde_json::Number::from_f64(v) {
            Some(n) if v.is_finite() => {
                let s = n.to_string();
                out.push_str(&s);
                if !s.contains(['.', 'e', 'E']) {
                    out.push_str(".0");
                }
                Ok(Kind::Float)
            }
            _ => err(start, format!("{tok} is not a finite number (no JSON form)")),
        }
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// The 8 bytes at `text[i..]`, if there are 8.
#[inline(always)]
fn word_at(text: &[u8], i: usize) -> Option<u64> {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(text.get(i..i + 8)?);
    Some(u64::from_le_bytes(buf))
}

/// Non-zero when some byte of `w` is `b` (SWAR: exact as a yes/no test).
#[inline(always)]
fn has_byte(w: u64, b: u8) -> u64 {
    let x = w ^ (LO * b as u64);
    x.wrapping_sub(LO) & !x & HI
}

/// Bytes at the start of string text that need no attention from [`CallScanner`]: not the quote
/// `q`, a newline / CR, nor a backslash that ends the text; an escape pair (a backslash and the
/// byte after it) is taken whole, as the scanner would (escapes are frequent in code, and
/// stopping at each cost more than the plain bytes). Eight bytes per step while they are clean.
fn scan_plain_len(text: &[u8], q: u8) -> usize {
    let mut i = 0;
    loop {
        while let Some(w) = word_at(text, i) {
            if has_byte(w, q) | has_byte(w, b'\\') | has_byte(w, b'\n') | has_byte(w, b'\r') != 0 {
                break;
            }
            i += 8;
        }
        while let Some(&b) = text.get(i) {
            if b == q || b == b'\\' || b == b'\n' || b == b'\r' {
                break;
            }
            i += 1;
        }
        match text.get(i..i + 2) {
            Some([b'\\', _]) => i += 2,
            _ => return i,
        }
    }
}

/// Bytes at the start of string text that mean themselves both in a Python literal and in a JSON
/// string: not the quote `q`, a backslash, `"`, a control character (newlines included), nor
/// `{`/`}` in an f-string. Eight bytes per step while they are clean.
fn json_plain_len(text: &[u8], q: u8, fstring: bool) -> usize {
    let special = |b: u8| b == q || b == b'\\' || b == b'"' || b < 0x20 || (fstring && (b == b'{' || b == b'}'));
    let mut i = 0;
    if !fstring {
        while let Some(w) = word_at(text, i) {
            // Some byte < 0x20 (ASCII only: `!w & HI`), the quote, '"' or '\\'?
            let ctrl = w.wrapping_sub(LO * 0x20) & !w & HI;
            if ctrl | has_byte(w, q) | has_byte(w, b'"') | has_byte(w, b'\\') != 0 {
                break;
            }
            i += 8;
        }
    }
    while let Some(&b) = text.get(i) {
        if special(b) {
            break;
        }
        i += 1;
    }
    i
}

/// `c` written into a JSON string (escaped as [`escape_json_into`] escapes it).
#[inline]
fn push_json_char(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 => escape_json_into(out, c.encode_utf8(&mut [0; 4])),
        c => out.push(c),
    }
}

fn is_radix_prefixed(tok: &[u8]) -> bool {
    tok.len() >= 2 && tok[0] == b'0' && matches!(tok[1], b'x' | b'X' | b'o' | b'O' | b'b' | b'B')
}

fn is_string_prefix(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "r" | "u" | "f" | "b" | "rb" | "br" | "fr" | "rf"
    )
}

fn char_at(s: &str, i: usize) -> Option<char> {
    s.get(i..).and_then(|t| t.chars().next())
}

/// Python float literal shape: digits/`_`, optional `.`, optional exponent (already lowercase).
fn valid_float(s: &str) -> bool {
    let (mant, exp) = match s.find('e') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = match mant.find('.') {
        Some(i) => (&mant[..i], Some(&mant[i + 1..])),
        None => (mant, None),
    };
    let ok_part = |p: &str| p.is_empty() || clean_digits(p, 10).is_some();
    let has_digits = !int.is_empty() || frac.is_some_and(|f| !f.is_empty());
    let exp_ok = exp.is_none_or(|e| clean_digits(e.strip_prefix(['+', '-']).unwrap_or(e), 10).is_some());
    has_digits && ok_part(int) && frac.is_none_or(ok_part) && exp_ok
}

/// Digits in `radix` (valid, no `_`) as a decimal string, any size.
fn to_decimal(digits: &str, radix: u32) -> String {
    // Little-endian base-1e9 limbs.
    let mut limbs: Vec<u64> = vec![0];
    for c in digits.chars() {
        let mut carry = c.to_digit(radix).unwrap_or(0) as u64;
        for limb in limbs.iter_mut() {
            let v = *limb * radix as u64 + carry;
            *limb = v % 1_000_000_000;
            carry = v / 1_000_000_000;
        }
        while carry > 0 {
            limbs.push(carry % 1_000_000_000);
            carry /= 1_000_000_000;
        }
    }
    let mut s = String::new();
    for (n, limb) in limbs.iter().rev().enumerate() {
        if n == 0 {
            s.push_str(&limb.to_string());
        } else {
            s.push_str(&format!("{limb:09}"));
        }
    }
    s
}

fn push_plain(out: &mut String, src: &str, a: usize, b: usize, pending_high: &mut Option<u32>) {
    if a < b {
        flush_high(out, pending_high);
        out.push_str(src.get(a..b).unwrap_or_default());
    }
}

/// A lone high surrogate from `\uD83D` that no low surrogate followed: U+FFFD.
fn flush_high(out: &mut String, pending_high: &mut Option<u32>) {
    if pending_high.take().is_some() {
        out.push('\u{FFFD}');
    }
}

/// A code point from an escape; `\uD83D\uDC1B` pairs are combined (JSON cannot hold lone halves,
/// so a lone surrogate becomes U+FFFD).
fn push_code(out: &mut String, code: u32, pending_high: &mut Option<u32>, at: usize) -> Result<(), LitError> {
    match code {
        0xD800..=0xDBFF => {
            flush_high(out, pending_high);
            *pending_high = Some(code);
            Ok(())
        }
        0xDC00..=0xDFFF => {
            match pending_high.take() {
                Some(high) => {
                    let c = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00);
                    push_json_char(out, char::from_u32(c).unwrap_or('\u{FFFD}'));
                }
                None => out.push('\u{FFFD}'),
            }
            Ok(())
        }
        _ => {
            flush_high(out, pending_high);
            match char::from_u32(code) {
                Some(c) => {
                    push_json_char(out, c);
                    Ok(())
                }
                None => err(at, format!("escape \\U{code:08x} is not a Unicode code point")),
            }
        }
    }
}

/// Follows a call's text from its `(` to the matching `)`, chunk by chunk, never re-reading a
/// byte: brackets, strings (any quotes, triple, escapes) and comments. Knows nothing of values.
#[derive(Debug, Default)]
pub struct CallScanner {
    /// Open brackets (`(`, `[`, `{`); empty before the call's `(`.
    stack: Vec<u8>,
    /// Inside a string: its quote byte and whether it is triple-quoted.
    quote: Option<(u8, bool)>,
    escape: bool,
    /// Closing quotes seen in a row inside a triple-quoted string.
    run: u8,
    comment: bool,
}

/// What [`CallScanner::scan`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// The call's closing `)` is at this offset of the scanned text.
    End(usize),
    /// A closing bracket that matches nothing, at this offset.
    Mismatch(usize),
    /// This many bytes were scanned; the rest (at most two bytes: a quote that may open a
    /// triple-quoted string) must be scanned again with more text.
    More(usize),
}

impl CallScanner {
    /// Inside a string: its quote byte and whether it is triple-quoted.
    pub fn in_string(&self) -> Option<(u8, bool)> {
        self.quote
    }

    /// Scan `text` (the bytes after those already scanned; the first byte ever is the `(`).
    /// With `eof`, an undecided quote is taken as a single quote.
    pub fn scan(&mut self, text: &[u8], eof: bool) -> Scan {
        let mut i = 0;
        while i < text.len() {
            let b = text[i];
            if let Some((q, triple)) = self.quote {
                if !self.escape && self.run == 0 {
                    // Skip plain string text at memchr speed.
                    let skip = scan_plain_len(text.get(i..).unwrap_or_default(), q);
                    if skip > 0 {
                        i += skip;
                        continue;
                    }
                }
                if self.escape {
                    self.escape = false;
                } else if b == b'\\' {
                    self.escape = true;
                    self.run = 0;
                } else if b == q {
                    self.run += 1;
                    if !triple || self.run == 3 {
                        self.quote = None;
                        self.run = 0;
                    }
                } else {
                    self.run = 0;
                    if (b == b'\n' || b == b'\r') && !triple {
                        // Python refuses this (the parser reports it); end the string here so
                        // the brackets after it keep their meaning.
                        self.quote = None;
                    }
                }
                i += 1;
                continue;
            }
            if self.comment {
                if b == b'\n' {
                    self.comment = false;
                }
                i += 1;
                continue;
            }
            match b {
                b'\'' | b'"' => {
                    let next = text.get(i + 1).copied();
                    let after = text.get(i + 2).copied();
                    if !eof && (next.is_none() || (next == Some(b) && after.is_none())) {
                        return Scan::More(i);
                    }
                    if next == Some(b) && after == Some(b) {
                        self.quote = Some((b, true));
                        i += 3;
                    } else {
                        self.quote = Some((b, false));
                        i += 1;
                    }
                    continue;
                }
                b'#' => self.comment = true,
                b'(' | b'[' | b'{' => self.stack.push(b),
                b')' | b']' | b'}' => {
                    let open = match b {
                        b')' => b'(',
                        b']' => b'[',
                        _ => b'{',
                    };
                    if self.stack.pop() != Some(open) {
                        return Scan::Mismatch(i);
                    }
                    if self.stack.is_empty() {
                        return Scan::End(i);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Scan::More(text.len())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn call(src: &str) -> (String, Value) {
        let c = parse_call(src).unwrap_or_else(|e| panic!("{src:?}: {e:?}"));
        (c.name, serde_json::from_str(&c.args).unwrap())
    }

    fn fails(src: &str) -> String {
        parse_call(src).unwrap_err().msg
    }

    #[test]
    fn literals_become_json() {
        let (name, args) = call(
            "f(a='x', b=\"y\", c=1_000, d=-2.5e3, e=+7, f=--3, g=0x_ff, h=0o17, i=0b101, j=True, k=None, l=null, \
             m=[1, (2,), (3), ()], n={'k': {1: None, 1.5: true, None: 0, True: []}}, o={1, 2}, p=.5, q=5., r=-0.0)",
        );
        assert_eq!(name, "f");
        assert_eq!(
            args,
            json!({"a": "x", "b": "y", "c": 1000, "d": -2500.0, "e": 7, "f": 3, "g": 255, "h": 15, "i": 5,
                   "j": true, "k": null, "l": null, "m": [1, [2], 3, []],
                   "n": {"k": {"1": null, "1.5": true, "null": 0, "true": []}}, "o": [1, 2], "p": 0.5, "q": 5.0, "r": -0.0})
        );
        assert_eq!(
            call("a.b.c(x=12345678901234567890123)").1,
            json!({"x": 12345678901234567890123u128})
        );
        assert_eq!(call("ns . tool ( )").0, "ns.tool");
    }

    #[test]
    fn strings_with_every_escape_form() {
        let (_, a) = call(
            r#"f(a='tab\there\n', b="q\"uote\\", c='\x41\u00e9\U0001F600\101\0', d=r'C:\new\'', e='''tri
ple ''' "cat" 'enated', f='\q keeps', g=f'{{braces}}', h='\ud83d\ude00', i='\ud800', j=u'x', k='a\
b')"#,
        );
        assert_eq!(
            a,
            json!({"a": "tab\there\n", "b": "q\"uote\\", "c": "Aé😀A\u{0}", "d": "C:\\new\\'",
                   "e": "tri\nple catenated", "f": "\\q keeps", "g": "{braces}", "h": "😀", "i": "\u{FFFD}", "j": "x",
                   "k": "ab"})
        );
    }

    #[test]
    fn comments_and_newlines_between_tokens() {
        let (_, a) = call("f(\n  a=1,  # the first\n  b=[\n    2,\n  ],\n)");
        assert_eq!(a, json!({"a": 1, "b": [2]}));
    }

    #[test]
    fn what_is_not_a_literal_call() {
        assert!(fails("f('x')").contains("positional"));
        assert!(fails("f(a=x)").contains("variable"));
        assert!(fails("f(a=str(1))").contains("nested call"));
        assert!(fails("f(a='a' + 'b')").contains("','"));
        assert!(fails("f(a=f'{x}')").contains("placeholder"));
        assert!(fails("f(a=b'x')").contains("bytes"));
        assert!(fails("f(a=1j)").contains("complex"));
        assert!(fails("f(a=1e999)").contains("finite"));
        assert!(fails("f(a=007)").contains("leading zeros"));
        assert!(fails("f(a=1, a=2)").contains("repeated"));
        assert!(fails("f(**kw)").contains("kwargs"));
        assert!(fails("f(a='\\N{BULLET}')").contains("\\N"));
        assert!(fails("f(a={[1]: 2})").contains("constants"));
        assert!(fails("f(a=-True)").contains("numbers"));
        assert!(fails("f(a='x\ny')").contains("newline"));
        let deep = format!("f(a={}{})", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(fails(&deep).contains("nested deeper"));
        let ok = format!("f(a={}{})", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse_call(&ok).is_ok());
    }

    #[test]
    fn set_literals_are_noted() {
        let c = parse_call("f(a={'x', 'y'})").unwrap();
        assert_eq!(c.args, r#"{"a": ["x", "y"]}"#);
        assert_eq!(c.notes.len(), 1);
    }

    #[test]
    fn scanner_finds_the_call_end_in_any_chunking() {
        let text = "(a='x)', b=\"\"\"q''')\"\"\", c=[{'k': (1, ')')}], # ) comment\n d='\\'')] tail";
        let end = text.find("] tail").unwrap() - 1;
        for cut in 0..text.len() {
            let mut sc = CallScanner::default();
            let (a, b) = text.as_bytes().split_at(cut);
            let mut got = None;
            let mut base = 0;
            let mut rest: Vec<u8> = a.to_vec();
            for piece in [None, Some(b)] {
                if let Some(p) = piece {
                    rest.extend_from_slice(p);
                }
                match sc.scan(&rest, false) {
                    Scan::End(i) => {
                        got = Some(base + i);
                        break;
                    }
                    Scan::More(n) => {
                        base += n;
                        rest.drain(..n);
                    }
                    Scan::Mismatch(i) => panic!("mismatch at {i}"),
                }
            }
            assert_eq!(got, Some(end), "cut {cut}");
        }
        assert_eq!(CallScanner::default().scan(b"(a=[1)", false), Scan::Mismatch(5));
    }
}
