//! `qwen3_coder` (alias `qwen3_xml`): Qwen3-Coder's XML tool calls.
//!
//! ```text
//! <tool_call>
//! <function=NAME>
//! <parameter=KEY>
//! VALUE
//! </parameter>
//! </function>
//! </tool_call>
//! ```
//!
//! Values are raw text (the format has no escaping); one leading and one trailing newline of a
//! value are the template's framing and are removed. Each value becomes a JSON value by the tool
//! schema's parameter type, as vLLM 0.33.0 converts it (see [`super::schema_values`]).
//! Text before the first call is content; whitespace around calls is framing.
//!
//! Streaming: `ToolCallStart` comes at the `>` that closes `<function=NAME`; each parameter's
//! `{"KEY": ` (or `, "KEY": `) is released when `<parameter=KEY>` closes. A string-typed value
//! streams as JSON-string fragments while it arrives; only a possible `</parameter>` prefix and
//! one trailing newline (framing if `</parameter>` follows) are held back. A value of any other
//! type is held until it is complete, because its conversion needs the whole text.
//! Where the format forces more hold-back:
//! - `</parameter>` ends a value only when markup follows it (after whitespace); other text means
//!   it was part of the value (`echo '</parameter>'`). So the closing quote (or a typed value)
//!   is released when the next `<parameter=` arrives;
//! - the last value of a call is confirmed by the next call or the end of the output: if
//!   `</parameter>` `</function>` `</tool_call>` is followed by prose and then `</parameter>` again,
//!   all of it was value text. Until then the call's closing `"}` and `ToolCallEnd` wait, and so
//!   does prose after the call;
//! - plain text is held only while it may be the start of `<tool_call>` or `<function=`, plus
//!   whitespace runs (see [`super::xml_content`]).
//!
//! `render` writes string values as they are and other values as compact JSON text; like the
//! model's own output, they come back typed only when the parser's tools give the parameter a
//! non-string type (a parser without tools returns every value as a string).
//!
//! Where this parser departs from vLLM on purpose:
//! - Inside a value only a confirmed `</parameter>` ends it (see above), so `</function>`,
//!   `</tool_call>`, `<parameter=` and most `</parameter>` in a value are kept as text, as the
//!   text means (vLLM cuts the value or the call there). `render` refuses `</parameter>` in a
//!   value all the same: the format has no escaping and some placements are ambiguous.
//! - Calls to tools not in the request are kept, with an `unknown_tool` issue.
//! - Malformed markup never loses text: a `<tool_call>` that is not followed by `<function=NAME>`,
//!   an unclosed or empty name, and a truncated name are returned as content with an issue.
//!   Non-whitespace text between the parameters of a call is dropped, as vLLM drops it, with an
//!   `unexpected_text` issue giving its offset. A truncated call is kept with what arrived and a
//!   `truncated` issue.
//! - Text after the calls is kept as content (vLLM drops it).

use std::sync::Arc;

use super::super::marker::{MarkerHit, MarkerSet};
use super::super::stream::{count_chars, Emitter, Format, FormatStream};
use super::super::tools::Tools;
use super::super::types::{IssueKind, Pos, RenderError, ToolCall};
use super::schema_values::{coerce, ArgsWriter, TypeSet};
use super::xml_content::FramedContent;

const TOOL_CALL: &str = "<tool_call>";
const TOOL_CALL_END: &str = "</tool_call>";
const FUNCTION: &str = "<function=";
const FUNCTION_END: &str = "</function>";
const PARAMETER: &str = "<parameter=";
const PARAMETER_END: &str = "</parameter>";

/// Longest tool or parameter name accepted before the markup is judged broken.
const MAX_NAME: usize = 256;

/// When a name of `have` bytes plus `take` more would pass [`MAX_NAME`], the cut point in
/// `rest`: always the same absolute position, however the text was chunked.
fn cap(rest: &str, have: usize, take: usize) -> Option<usize> {
    if have + take <= MAX_NAME {
        return None;
    }
    let mut cut = MAX_NAME.saturating_sub(have).min(take);
    while !rest.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(cut)
}

/// The `qwen3_coder` format.
pub fn qwen3_coder() -> Arc<dyn Format> {
    Arc::new(Qwen3Coder)
}

struct Qwen3Coder;

impl Format for Qwen3Coder {
    fn stream(&self, tools: &Arc<Tools>) -> Box<dyn FormatStream> {
        Box::new(Qwen3Stream::new(Arc::clone(tools)))
    }

    fn render(&self, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
        render(calls, content)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// Plain text; looking for `<tool_call>` or `<function=`.
    Content,
    /// After `<tool_call>`: whitespace, then `<function=`.
    Preamble,
    /// Inside `<function=...`, up to `>`.
    Name,
    /// Inside a function, between parameters.
    Args,
    /// Inside `<parameter=...`, up to `>`.
    ParamName,
    /// Inside a parameter value, up to `</parameter>`.
    Value,
    /// After `</parameter>`: it ends the value only if the next non-whitespace text is markup.
    ValueEnd,
    /// After a value's end marker and the call's closing markup: the call ends there unless the
    /// value's end marker shows up again before the next call (then all of it was value text).
    Tentative,
    /// After `</function>`: whitespace, then `</tool_call>`.
    AfterFunction,
}

struct Qwen3Stream {
    tools: Arc<Tools>,
    /// Unconsumed text (only ever a bounded tail between feeds).
    buf: String,
    /// Absolute byte offset of `buf[0]`.
    base: usize,
    st: St,
    content: FramedContent,
    content_markers: MarkerSet,
    args_markers: MarkerSet,
    value_end: MarkerSet,
    /// Markup of a call that has not started yet (`<tool_call>\n<function=NA`): content if it fails.
    raw: String,
    /// Where that markup began.
    raw_at: Pos,
    name: String,
    /// The open call's tool name (for parameter types).
    call_name: String,
    /// The open call was opened by `<tool_call>` (so `</tool_call>` is expected after it).
    via_tool_call: bool,
    args: ArgsWriter,
    /// The open value streams as a JSON string (else it is converted when complete).
    streaming: bool,
    types: TypeSet,
    value_started: bool,
    held_newline: bool,
    value: String,
    /// Dropping stray text between parameters (one issue per run).
    in_junk: bool,
    after_call_reported: bool,
    /// The value's end marker and the whitespace after it, while it is not yet known to end it.
    pending_end: String,
    /// Where `pending_end` starts (its value-end marker).
    pending_pos: Pos,
    tentative_markers: MarkerSet,
    /// While held text is replayed: its position and a copy (for exact issue offsets).
    replay: Option<(Pos, String)>,
    /// Parameter names of the open call (duplicates are reported).
    keys: Vec<String>,
}

impl Qwen3Stream {
    fn new(tools: Arc<Tools>) -> Qwen3Stream {
        Qwen3Stream {
            tools,
            buf: String::new(),
            base: 0,
            st: St::Content,
            content: FramedContent::default(),
            content_markers: MarkerSet::new(&[TOOL_CALL, FUNCTION]),
            args_markers: MarkerSet::new(&[PARAMETER, FUNCTION_END, TOOL_CALL_END, FUNCTION, TOOL_CALL]),
            value_end: MarkerSet::new(&[PARAMETER_END]),
            raw: String::new(),
            raw_at: Pos::default(),
            name: String::new(),
            call_name: String::new(),
            via_tool_call: false,
            args: ArgsWriter::default(),
            streaming: true,
            types: TypeSet::STRING,
            value_started: false,
            held_newline: false,
            value: String::new(),
            in_junk: false,
            after_call_reported: false,
            pending_end: String::new(),
            pending_pos: Pos::default(),
            tentative_markers: MarkerSet::new(&[PARAMETER_END, TOOL_CALL, FUNCTION]),
            replay: None,
            keys: Vec::new(),
        }
    }

    /// Run the state machine over `buf`; returns how many bytes were consumed.
    fn run(&mut self, buf: &str, eof: bool, out: &mut Emitter<'_>) -> usize {
        let mut i = 0;
        while i < buf.len() {
            let rest = &buf[i..];
            let step = match self.st {
                St::Content => self.on_content(rest, i, eof, out),
                St::Preamble => self.on_preamble(rest, i, eof, out),
                St::Name => self.on_name(rest, i, out),
                St::Args => self.on_args(rest, i, eof, out),
                St::ParamName => self.on_param_name(rest, i, out),
                St::Value => self.on_value(rest, i, eof, out),
                St::Tentative => self.on_tentative(rest, i, eof, out),
                St::ValueEnd => self.on_value_end(rest, eof, out),
                St::AfterFunction => self.on_after_function(rest, i, eof, out),
            };
            match step {
                Some(n) => i += n,
                None => break,
            }
        }
        i
    }

    fn at(&self, out: &mut Emitter<'_>, i: usize) -> Pos {
        match &self.replay {
            Some((origin, text)) => Pos {
                byte: origin.byte + i,
                char: origin.char + count_chars(text.as_bytes().get(..i).unwrap_or_default()),
            },
            None => out.pos(self.base + i),
        }
    }

    /// Each handler returns `Some(bytes consumed)` (0 is allowed when the state changed) or
    /// `None` when it needs more text.
    fn on_content(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        match self.content_markers.find(rest, eof) {
            MarkerHit::Full { at, end, marker } => {
                self.text_after_calls(out, &rest[..at], i);
                self.content.text(out, &rest[..at]);
                self.raw_at = self.at(out, i + at);
                self.raw.clear();
                self.raw.push_str(&rest[at..end]);
                self.name.clear();
                if marker == 0 {
                    self.st = St::Preamble;
                    self.via_tool_call = true;
                } else {
                    self.name.clear();
                    self.st = St::Name;
                    self.via_tool_call = false;
                    out.issue(
                        IssueKind::MalformedMarkup,
                        self.raw_at,
                        "<function=...> without <tool_call>; read as a call",
                    );
                }
                Some(end)
            }
            MarkerHit::Partial { at } => {
                self.text_after_calls(out, &rest[..at], i);
                self.content.text(out, &rest[..at]);
                if at == 0 {
                    None
                } else {
                    Some(at)
                }
            }
            MarkerHit::None => {
                self.text_after_calls(out, rest, i);
                self.content.text(out, rest);
                if rest.is_empty() {
                    None
                } else {
                    Some(rest.len())
                }
            }
        }
    }

    /// Prose after a call is kept as content (vLLM drops it) and reported once per run.
    fn text_after_calls(&mut self, out: &mut Emitter<'_>, text: &str, i: usize) {
        if out.calls_started() > 0 && !self.after_call_reported {
            if let Some(k) = text.find(|c: char| !c.is_whitespace()) {
                self.after_call_reported = true;
                let at = self.at(out, i + k);
                out.issue(IssueKind::UnexpectedText, at, "text after a tool call; kept as content");
            }
        }
    }

    fn on_preamble(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = rest.len() - rest.trim_start().len();
        if ws > 0 {
            self.raw.push_str(&rest[..ws]);
            return Some(ws);
        }
        if rest.is_empty() {
            return None;
        }
        if rest.starts_with(FUNCTION) {
            self.raw.push_str(FUNCTION);
            self.name.clear();
            self.st = St::Name;
            return Some(FUNCTION.len());
        }
        if rest.starts_with(TOOL_CALL_END) {
            self.raw.push_str(TOOL_CALL_END);
            let raw = std::mem::take(&mut self.raw);
            self.content.text(out, &raw);
            out.issue(
                IssueKind::MalformedMarkup,
                self.raw_at,
                "empty <tool_call></tool_call> block (no <function=NAME>); kept as content",
            );
            self.st = St::Content;
            return Some(TOOL_CALL_END.len());
        }
        if !eof && (FUNCTION.starts_with(rest) || TOOL_CALL_END.starts_with(rest)) {
            return None;
        }
        let raw = std::mem::take(&mut self.raw);
        self.content.text(out, &raw);
        let at = self.at(out, i);
        out.issue(
            IssueKind::MalformedMarkup,
            at,
            "<tool_call> is not followed by <function=NAME>; the text is kept as content",
        );
        self.st = St::Content;
        Some(0)
    }

    fn on_name(&mut self, rest: &str, i: usize, out: &mut Emitter<'_>) -> Option<usize> {
        let stop = memchr::memchr3(b'>', b'<', b'\n', rest.as_bytes());
        let take = stop.unwrap_or(rest.len());
        if let Some(cut) = cap(rest, self.name.len(), take) {
            self.name.push_str(&rest[..cut]);
            self.broken_name(out, i + cut, "the function name runs on without a closing '>'");
            return Some(cut);
        }
        self.name.push_str(&rest[..take]);
        match stop {
            None => {
                if take == 0 {
                    None
                } else {
                    Some(take)
                }
            }
            Some(s) if rest.as_bytes()[s] == b'>' => {
                let name = self.name.trim().to_owned();
                if name.is_empty() {
                    self.name.push('>');
                    self.broken_name(out, i + s, "<function=> has an empty name");
                    self.st = St::Content;
                    return Some(s + 1);
                }
                self.name.clear();
                self.content.call_starts();
                self.after_call_reported = false;
                out.start_call(&name, None, self.raw_at);
                self.raw.clear();
                self.call_name = name;
                self.keys.clear();
                self.st = St::Args;
                self.in_junk = false;
                Some(s + 1)
            }
            Some(s) => {
                self.broken_name(out, i + s, "the function name is not closed by '>'");
                Some(s)
            }
        }
    }

    /// `<function=NAME` cannot be a call: its markup goes back to content.
    fn broken_name(&mut self, out: &mut Emitter<'_>, i: usize, why: &str) {
        let mut raw = std::mem::take(&mut self.raw);
        raw.push_str(&self.name);
        self.name.clear();
        self.content.text(out, &raw);
        let at = self.at(out, i);
        out.issue(
            IssueKind::MalformedMarkup,
            at,
            format!("{why}; the markup is kept as content"),
        );
        self.st = St::Content;
    }

    fn end_call(&mut self, out: &mut Emitter<'_>) {
        self.args.finish(out);
        out.end_call();
    }

    fn on_args(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = rest.len() - rest.trim_start().len();
        if ws > 0 {
            return Some(ws);
        }
        if rest.is_empty() {
            return None;
        }
        match self.args_markers.find(rest, eof) {
            MarkerHit::Full { at: 0, end, marker } => {
                self.in_junk = false;
                match marker {
                    0 => {
                        self.name.clear();
                        self.st = St::ParamName;
                    }
                    1 => {
                        self.end_call(out);
                        self.st = St::AfterFunction;
                    }
                    2 => {
                        let at = self.at(out, i);
                        out.issue(
                            IssueKind::MalformedMarkup,
                            at,
                            "</tool_call> before </function>; the call ends here",
                        );
                        self.end_call(out);
                        self.st = St::Content;
                    }
                    _ => {
                        let at = self.at(out, i);
                        out.issue(
                            IssueKind::MalformedMarkup,
                            at,
                            "a new call starts before </function>; the open call ends here",
                        );
                        self.end_call(out);
                        self.raw_at = at;
                        self.raw.clear();
                        self.raw.push_str(&rest[..end]);
                        self.name.clear();
                        if marker == 3 {
                            self.name.clear();
                            self.via_tool_call = false;
                            self.st = St::Name;
                        } else {
                            self.via_tool_call = true;
                            self.st = St::Preamble;
                        }
                    }
                }
                Some(end)
            }
            MarkerHit::Partial { at: 0 } => None,
            hit => {
                // Stray text between parameters: dropped as vLLM drops it, but reported.
                let stop = match hit {
                    MarkerHit::Full { at, .. } | MarkerHit::Partial { at } => at,
                    MarkerHit::None => rest.len(),
                };
                if !self.in_junk {
                    self.in_junk = true;
                    let at = self.at(out, i);
                    out.issue(
                        IssueKind::UnexpectedText,
                        at,
                        format!(
                            "text between the parameters of call {:?} is not part of any parameter and was ignored",
                            self.call_name
                        ),
                    );
                }
                Some(stop)
            }
        }
    }

    fn on_param_name(&mut self, rest: &str, i: usize, out: &mut Emitter<'_>) -> Option<usize> {
        let stop = memchr::memchr3(b'>', b'<', b'\n', rest.as_bytes());
        let take = stop.unwrap_or(rest.len());
        let broken = |me: &mut Self, out: &mut Emitter<'_>, at: usize, why: &str| {
            me.name.clear();
            me.in_junk = true;
            let at = me.at(out, at);
            out.issue(
                IssueKind::MalformedMarkup,
                at,
                format!("{why}; the parameter is ignored"),
            );
            me.st = St::Args;
        };
        if let Some(cut) = cap(rest, self.name.len(), take) {
            broken(self, out, i + cut, "a parameter name runs on without a closing '>'");
            return Some(cut);
        }
        self.name.push_str(&rest[..take]);
        match stop {
            None => {
                if take == 0 {
                    None
                } else {
                    Some(take)
                }
            }
            Some(s) if rest.as_bytes()[s] == b'>' => {
                let key = self.name.trim().to_owned();
                self.name.clear();
                if key.is_empty() {
                    broken(self, out, i + s, "<parameter=> has an empty name");
                    return Some(s + 1);
                }
                if self.keys.contains(&key) {
                    let at = self.at(out, i + s);
                    out.issue(
                        IssueKind::BadArguments,
                        at,
                        format!("parameter {key:?} is given twice; the last value wins"),
                    );
                } else {
                    self.keys.push(key.clone());
                }
                self.types = TypeSet::of_param(&self.tools, &self.call_name, &key);
                self.streaming = self.types.is_plain_string();
                self.args.open(out, &key, self.streaming);
                self.value_started = false;
                self.held_newline = false;
                self.value.clear();
                self.st = St::Value;
                Some(s + 1)
            }
            Some(s) => {
                broken(self, out, i + s, "a parameter name is not closed by '>'");
                Some(s)
            }
        }
    }

    fn value_text(&mut self, out: &mut Emitter<'_>, mut seg: &str) {
        if seg.is_empty() {
            return;
        }
        if !self.value_started {
            self.value_started = true;
            seg = seg.strip_prefix('\n').unwrap_or(seg);
            if seg.is_empty() {
                return;
            }
        }
        if !self.streaming {
            self.value.push_str(seg);
            return;
        }
        if self.held_newline {
            self.held_newline = false;
            self.args.fragment(out, "\n");
        }
        if let Some(body) = seg.strip_suffix('\n') {
            self.held_newline = true;
            seg = body;
        }
        self.args.fragment(out, seg);
    }

    /// The value is complete: its trailing newline (held back) is framing.
    fn close_value(&mut self, out: &mut Emitter<'_>) {
        if self.streaming {
            self.held_newline = false;
            self.args.close_string(out);
        } else {
            let raw = self.value.strip_suffix('\n').unwrap_or(&self.value);
            let json = coerce(raw, self.types);
            self.args.value(out, &json);
            self.value.clear();
        }
    }

    fn on_value(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        match self.value_end.find(rest, eof) {
            MarkerHit::Full { at, end, .. } => {
                self.value_text(out, &rest[..at]);
                self.pending_pos = self.at(out, i + at);
                self.pending_end.clear();
                self.pending_end.push_str(&rest[at..end]);
                self.st = St::ValueEnd;
                Some(end)
            }
            MarkerHit::Partial { at } => {
                self.value_text(out, &rest[..at]);
                if at == 0 {
                    None
                } else {
                    Some(at)
                }
            }
            MarkerHit::None => {
                self.value_text(out, rest);
                if rest.is_empty() {
                    None
                } else {
                    Some(rest.len())
                }
            }
        }
    }

    fn on_after_function(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = rest.len() - rest.trim_start().len();
        if ws > 0 {
            return Some(ws);
        }
        if rest.is_empty() {
            return None;
        }
        if rest.starts_with(TOOL_CALL_END) {
            self.st = St::Content;
            return Some(TOOL_CALL_END.len());
        }
        if !eof && TOOL_CALL_END.starts_with(rest) {
            return None;
        }
        if self.via_tool_call {
            let at = self.at(out, i);
            out.issue(
                IssueKind::MalformedMarkup,
                at,
                "</function> is not followed by </tool_call>",
            );
        }
        self.st = St::Content;
        Some(0)
    }

    /// After a value's end marker: markup (or the end of the output) confirms it; any other text
    /// means the marker was part of the value (e.g. `echo '</parameter>'`), which then goes on.
    fn on_value_end(&mut self, rest: &str, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = rest.len() - rest.trim_start().len();
        if ws > 0 {
            self.pending_end.push_str(&rest[..ws]);
            return Some(ws);
        }
        match self.args_markers.find(rest, eof) {
            MarkerHit::Full { at: 0, end, marker } if marker == 1 || marker == 2 => {
                self.pending_end.push_str(&rest[..end]);
                self.st = St::Tentative;
                Some(end)
            }
            MarkerHit::Full { at: 0, .. } => {
                self.pending_end.clear();
                self.close_value(out);
                self.st = St::Args;
                Some(0)
            }
            MarkerHit::Partial { at: 0 } => None,
            _ => {
                let held = std::mem::take(&mut self.pending_end);
                self.value_text(out, &held);
                self.st = St::Value;
                Some(0)
            }
        }
    }

    fn on_tentative(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        match self.tentative_markers.find(rest, eof) {
            MarkerHit::Full { at, end, marker: 0 } => {
                // The value's end marker again: everything held was value text.
                self.pending_end.push_str(&rest[..at]);
                let held = std::mem::take(&mut self.pending_end);
                self.value_text(out, &held);
                self.pending_pos = self.at(out, i + at);
                self.pending_end.push_str(&rest[at..end]);
                self.st = St::ValueEnd;
                Some(end)
            }
            MarkerHit::Full { at, .. } => {
                self.pending_end.push_str(&rest[..at]);
                self.commit_value_end(out);
                Some(at)
            }
            MarkerHit::Partial { at } => {
                self.pending_end.push_str(&rest[..at]);
                if at == 0 {
                    None
                } else {
                    Some(at)
                }
            }
            MarkerHit::None => {
                self.pending_end.push_str(rest);
                Some(rest.len())
            }
        }
    }

    /// The held value end was real: close the value and run the held markup and text after it
    /// through the state machine (each held byte is replayed once).
    fn commit_value_end(&mut self, out: &mut Emitter<'_>) {
        let held = std::mem::take(&mut self.pending_end);
        self.close_value(out);
        self.st = St::Args;
        let skip = PARAMETER_END.len().min(held.len());
        let tail = held.get(skip..).unwrap_or_default();
        let origin = Pos {
            byte: self.pending_pos.byte + skip,
            char: self.pending_pos.char + skip,
        };
        self.replay = Some((origin, tail.to_owned()));
        let used = self.run(tail, true, out);
        self.replay = None;
        if let Some(left) = tail.get(used..) {
            self.content.text(out, left);
        }
    }

    fn process(&mut self, eof: bool, out: &mut Emitter<'_>) {
        let buf = std::mem::take(&mut self.buf);
        let used = self.run(&buf, eof, out);
        self.buf = buf;
        self.buf.drain(..used);
        self.base += used;
    }
}

impl FormatStream for Qwen3Stream {
    fn feed(&mut self, chunk: &str, out: &mut Emitter<'_>) {
        if chunk.is_empty() {
            return;
        }
        if self.buf.is_empty() {
            // Nothing held: run on the chunk itself and keep only its undecided tail.
            let used = self.run(chunk, false, out);
            self.base += used;
            self.buf.push_str(chunk.get(used..).unwrap_or_default());
            return;
        }
        self.buf.push_str(chunk);
        self.process(false, out);
    }

    fn finish(&mut self, out: &mut Emitter<'_>) {
        self.process(true, out);
        if self.st == St::Tentative {
            self.commit_value_end(out);
        }
        let end = out.pos(self.base + self.buf.len());
        // Anything still buffered is text that could not be decided (only at eof, and rare).
        let left = std::mem::take(&mut self.buf);
        match self.st {
            St::Content => self.content.text(out, &left),
            St::Preamble | St::Name => {
                let mut raw = std::mem::take(&mut self.raw);
                raw.push_str(&self.name);
                raw.push_str(&left);
                self.content.text(out, &raw);
                out.issue(
                    IssueKind::Truncated,
                    end,
                    "the output ends inside a <tool_call> before the function name is complete; kept as content",
                );
            }
            St::Args | St::ParamName | St::Value | St::ValueEnd | St::Tentative => {
                if self.st == St::Value {
                    self.value_text(out, &left);
                }
                if matches!(self.st, St::Value | St::ValueEnd | St::Tentative) {
                    self.close_value(out);
                }
                self.end_call(out);
                out.issue(
                    IssueKind::Truncated,
                    end,
                    format!(
                        "the output ends inside call {:?} (no </function>); the call keeps the parameters that arrived",
                        self.call_name
                    ),
                );
            }
            St::AfterFunction => {
                if self.via_tool_call {
                    out.issue(IssueKind::Truncated, end, "the output ends before </tool_call>");
                }
            }
        }
        self.st = St::Content;
        self.content.finish(out);
    }
}

/// Raw qwen3_coder text for `content` followed by `calls`.
fn render(calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
    let mut s = String::new();
    let content = content.unwrap_or("");
    for marker in [TOOL_CALL, FUNCTION] {
        if content.contains(marker) {
            return Err(RenderError(format!(
                "qwen3_coder cannot render content containing {marker:?}: it would be read as a tool call"
            )));
        }
    }
    if !calls.is_empty() && content.trim_end().len() != content.len() {
        return Err(RenderError(
            "qwen3_coder cannot render content that ends in whitespace before tool calls: that whitespace is framing"
                .into(),
        ));
    }
    s.push_str(content);
    for (n, call) in calls.iter().enumerate() {
        let name = call.name.as_str();
        if name.trim() != name || name.is_empty() || name.contains(['>', '<', '\n']) {
            return Err(RenderError(format!(
                "qwen3_coder cannot render tool name {name:?} (call {n}): it must be non-empty, without '<', '>', newlines or surrounding whitespace"
            )));
        }
        let args: serde_json::Value = serde_json::from_str(&call.arguments)
            .map_err(|e| RenderError(format!("call {n} ({name}): arguments are not valid JSON ({e})")))?;
        let serde_json::Value::Object(map) = args else {
            return Err(RenderError(format!(
                "call {n} ({name}): arguments must be a JSON object to render as <parameter=...> tags"
            )));
        };
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str("<tool_call>\n<function=");
        s.push_str(name);
        s.push_str(">\n");
        for (key, value) in &map {
            if key.trim() != key || key.is_empty() || key.contains(['>', '<', '\n']) {
                return Err(RenderError(format!(
                    "call {n} ({name}): parameter name {key:?} cannot be written as <parameter={key}>"
                )));
            }
            let text = match value {
                serde_json::Value::String(v) => v.clone(),
                other => other.to_string(),
            };
            if text.contains(PARAMETER_END) {
                return Err(RenderError(format!(
                    "call {n} ({name}): the value of {key:?} contains \"</parameter>\", which qwen3_coder cannot express (values are not escaped)"
                )));
            }
            s.push_str("<parameter=");
            s.push_str(key);
            s.push_str(">\n");
            s.push_str(&text);
            s.push_str("\n</parameter>\n");
        }
        s.push_str("</function>\n</tool_call>");
    }
    Ok(s)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_support::{args, check_events, every_split, kinds, parser, run};
    use super::*;
    use crate::parsers::{get_parser, Event};
    use proptest::prelude::*;
    use serde_json::json;

    const TWO_CALLS: &str = "Let me look. é😀\n\n<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/中.rs\n</parameter>\n\
        <parameter=offset>\n 12 \n</parameter>\n<parameter=limit>\nnull\n</parameter>\n</function>\n</tool_call>\n\
        <tool_call>\n<function=terminal>\n<parameter=command>\n\necho \"a\\b\"\n\n</parameter>\n<parameter=timeout>\n1.5\n\
        </parameter>\n<parameter=force>\nTrue\n</parameter>\n<parameter=env>\n{\"A\": [1, 2]}\n</parameter>\n</function>\n</tool_call>\n";

    #[test]
    fn realistic_output_every_split() {
        let r = every_split("qwen3_coder", TWO_CALLS);
        assert_eq!(r.content.as_deref(), Some("Let me look. é😀"));
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(args(&r, 0), json!({"path": "src/中.rs", "offset": 12, "limit": null}));
        // One leading and one trailing newline are framing; the others are the value's.
        assert_eq!(
            args(&r, 1),
            json!({"command": "\necho \"a\\b\"\n", "timeout": 1.5, "force": true, "env": {"A": [1, 2]}})
        );
        assert!(r.issues.is_empty(), "{:?}", r.issues);
    }

    #[test]
    fn string_values_stream_before_they_end_typed_values_wait() {
        let p = parser("qwen3_coder");
        let mut s = p.stream();
        let mut args_so_far = String::new();
        let mut take = |events: Vec<Event>| {
            for e in events {
                if let Event::ToolCallArgsDelta { text, .. } = e {
                    args_so_far.push_str(&text);
                }
            }
            args_so_far.clone()
        };
        take(s.feed("<tool_call>\n<function=terminal>\n<parameter=command>\nls -la"));
        assert_eq!(take(s.feed(" /tmp\n")), "{\"command\": \"ls -la /tmp");
        // The trailing newline is held (framing if </parameter> follows); a second one releases it.
        assert_eq!(
            take(s.feed("x\n</parameter>\n<parameter=timeout>\n3")),
            "{\"command\": \"ls -la /tmp\\nx\", \"timeout\": "
        );
        // `</parameter>` ends the value once the next markup confirms it.
        assert_eq!(
            take(s.feed("0\n</parameter>\n<")),
            "{\"command\": \"ls -la /tmp\\nx\", \"timeout\": "
        );
        assert_eq!(
            take(s.feed("parameter=force>\n")),
            "{\"command\": \"ls -la /tmp\\nx\", \"timeout\": 30, \"force\": "
        );
        take(s.feed("yes\n</parameter>\n</function>\n</tool_call>"));
        assert_eq!(
            take(s.finish()),
            "{\"command\": \"ls -la /tmp\\nx\", \"timeout\": 30, \"force\": \"yes\"}"
        );
    }

    #[test]
    fn without_tools_values_stay_strings() {
        let p = get_parser("qwen3_coder", Tools::none()).unwrap();
        let r = p.parse("<tool_call>\n<function=f>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>");
        assert_eq!(args(&r, 0), json!({"n": "5"}));
        assert!(r.issues.is_empty());
    }

    #[test]
    fn end_markers_inside_values_keep_their_meaning() {
        let text = "<tool_call>\n<function=terminal>\n<parameter=command>\necho '</parameter>' && echo '</function>\n</tool_call>' x\n</parameter>\n</function>\n</tool_call>";
        let r = every_split("qwen3_coder", text);
        assert_eq!(
            args(&r, 0),
            json!({"command": "echo '</parameter>' && echo '</function>\n</tool_call>' x"})
        );
        assert!(r.issues.is_empty() && r.content.is_none());
        // Prose after the calls is kept (vLLM drops it) and reported.
        let r = every_split(
            "qwen3_coder",
            "<function=list_processes>\n</function>\n</tool_call>\nDone.",
        );
        assert_eq!(r.content.as_deref(), Some("\nDone."));
        assert_eq!(kinds(&r), ["malformed_markup", "unexpected_text"]);
    }

    #[test]
    fn malformed_and_truncated_never_lose_text() {
        let r = every_split("qwen3_coder", "Hi <tool_call> not a call </tool_call> bye");
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content.as_deref(), Some("Hi <tool_call> not a call </tool_call> bye"));
        assert_eq!(kinds(&r), ["malformed_markup"]);
        let r = every_split(
            "qwen3_coder",
            "<tool_call>\n<function=read_file\n<parameter=path>\nx\n</parameter>",
        );
        assert!(r.tool_calls.is_empty());
        assert!(r.content.unwrap().starts_with("<tool_call>\n<function=read_file"));
        let r = every_split("qwen3_coder", "<function=read_file><tool_call>");
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.content.as_deref(), Some("<tool_call>"));
        // Every prefix of a realistic output: no panic, invariants hold, issues say truncated.
        for end in 0..=TWO_CALLS.len() {
            if !TWO_CALLS.is_char_boundary(end) {
                continue;
            }
            let p = parser("qwen3_coder");
            let prefix = &TWO_CALLS[..end];
            let (events, r) = run(&p, prefix, &[end / 2]);
            check_events(&events, &r);
            assert!(r.same_as(&p.parse(prefix)));
            for c in &r.tool_calls {
                assert!(serde_json::from_str::<serde_json::Value>(&c.arguments)
                    .unwrap()
                    .is_object());
            }
        }
    }

    #[test]
    fn render_round_trip_and_refusals() {
        let p = parser("qwen3_coder");
        let calls = [ToolCall {
            id: String::new(),
            name: "terminal".into(),
            arguments: r#"{"command": "\nprintf '%s\n' x\n", "timeout": 2.5, "force": false, "env": {"K": "v"}}"#
                .into(),
        }];
        let text = p.render(&calls, Some("Running it.")).unwrap();
        let r = every_split("qwen3_coder", &text);
        assert_eq!(r.content.as_deref(), Some("Running it."));
        assert_eq!(
            args(&r, 0),
            json!({"command": "\nprintf '%s\n' x\n", "timeout": 2.5, "force": false, "env": {"K": "v"}})
        );
        let bad = [ToolCall {
            id: String::new(),
            name: "terminal".into(),
            arguments: r#"{"command": "a</parameter>b"}"#.into(),
        }];
        assert!(p.render(&bad, None).unwrap_err().0.contains("</parameter>"));
        let bad = [ToolCall {
            id: String::new(),
            name: "a>b".into(),
            arguments: "{}".into(),
        }];
        assert!(p.render(&bad, None).is_err());
        assert!(p.render(&calls, Some("text <tool_call> x")).is_err());
        assert!(p.render(&calls, Some("ends with space ")).is_err());
    }

    const FRAGMENTS: &[&str] = &[
        "<tool_call>",
        "</tool_call>",
        "<function=",
        "<function=read_file>",
        "<function=terminal>",
        "</function>",
        "<parameter=",
        "<parameter=path>",
        "<parameter=offset>",
        "<parameter=env>",
        "</parameter>",
        "<",
        ">",
        "\n",
        " ",
        "x",
        "12",
        "null",
        "{\"a\": 1}",
        "é",
        "😀",
        "</par",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn fragments_never_panic_and_split_invariant(
            parts in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40),
            cuts in prop::collection::vec(0usize..300, 0..10),
        ) {
            let text = parts.concat();
            let p = parser("qwen3_coder");
            let whole = p.parse(&text);
            let mut cuts = cuts;
            cuts.sort_unstable();
            let (events, r) = run(&p, &text, &cuts);
            check_events(&events, &r);
            prop_assert!(r.same_as(&whole), "{:?}\n{:?}\n{:?}", text, r, whole);
            for c in &r.tool_calls {
                prop_assert!(serde_json::from_str::<serde_json::Value>(&c.arguments).is_ok(), "{:?}", c.arguments);
            }
        }
    }
}
