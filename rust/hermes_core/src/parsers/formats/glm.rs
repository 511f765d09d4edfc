//! `glm45` and `glm47`: GLM-4.5 / GLM-4.7 XML tool calls (one parser in vLLM, two names).
//!
//! ```text
//! <tool_call>NAME
//! <arg_key>KEY</arg_key>
//! <arg_value>VALUE</arg_value>
//! </tool_call>
//! ```
//!
//! GLM-4.5 puts a newline after the name and after each pair; GLM-4.7 writes a call on one line.
//! The name and keys are trimmed; values are raw text taken exactly as written (no newline
//! framing, no escaping) and converted to JSON by the tool schema's parameter type, as vLLM
//! 0.33.0 does (see [`super::schema_values`]). Text before the first call is content; whitespace
//! around calls is framing.
//!
//! Streaming: `ToolCallStart` comes when the name is complete (at `<arg_key>` or
//! `</tool_call>`); `{"KEY": ` is released at `<arg_value>`; a string-typed value streams as
//! JSON-string fragments, holding back only a possible `</arg_value>` prefix; a value of any other
//! type is held until it is complete, because its conversion needs the whole text. A name is held
//! until it is complete (at most 256 bytes). Where the format forces more hold-back:
//! - `</arg_value>` ends a value only when markup follows it (after whitespace); other text means
//!   it was part of the value. So the closing quote (or a typed value) is released when the next
//!   `<arg_key>` arrives;
//! - the last value of a call is confirmed by the next call or the end of the output: if
//!   `</arg_value></tool_call>` is followed by prose and then `</arg_value>` again, all of it was
//!   value text. Until then the call's closing `"}` and `ToolCallEnd` wait, and so does prose
//!   after the call;
//! - plain text is held only while it may be the start of `<tool_call>` or `<arg_key>`, plus
//!   whitespace runs (see [`super::xml_content`]).
//!
//! `render` writes string values as they are and other values as compact JSON text; like the
//! model's own output, they come back typed only when the parser's tools give the parameter a
//! non-string type (a parser without tools returns every value as a string).
//!
//! Where this parser departs from vLLM on purpose:
//! - vLLM drops calls to tools that are not in the request. Here they are kept, with an
//!   `unknown_tool` issue, so nothing is lost and an environment can still count them.
//! - Inside a value only a confirmed `</arg_value>` ends it (see above), so `</tool_call>` and most
//!   `</arg_value>` in a value are kept as text, as the text means (vLLM ends the value or the call
//!   there). `render` refuses `</arg_value>` in a value all the same (no escaping in the format).
//! - Malformed markup never loses text: a `<tool_call>` whose name is missing, broken or cut off is
//!   returned as content with an issue. A key without a value, and stray text between pairs, are
//!   dropped as vLLM drops them, with an issue giving the offset. A truncated call is kept with
//!   what arrived and a `truncated` issue. Text after the calls is kept as content.

use std::sync::Arc;

use super::super::marker::{MarkerHit, MarkerSet};
use super::super::stream::{count_chars, Emitter, Format, FormatStream};
use super::super::tools::Tools;
use super::super::types::{IssueKind, Pos, RenderError, ToolCall};
use super::schema_values::{coerce, ArgsWriter, TypeSet};
use super::xml_content::FramedContent;

const TOOL_CALL: &str = "<tool_call>";
const TOOL_CALL_END: &str = "</tool_call>";
const KEY: &str = "<arg_key>";
const KEY_END: &str = "</arg_key>";
const VALUE: &str = "<arg_value>";
const VALUE_END: &str = "</arg_value>";

const MAX_NAME: usize = 256;

/// `glm45`: renders GLM-4.5's layout (a newline after the name and after each pair).
pub fn glm45() -> Arc<dyn Format> {
    Arc::new(Glm { compact: false })
}

/// `glm47`: renders GLM-4.7's layout (each call on one line). Parsing is the same as `glm45`.
pub fn glm47() -> Arc<dyn Format> {
    Arc::new(Glm { compact: true })
}

struct Glm {
    compact: bool,
}

impl Format for Glm {
    fn stream(&self, tools: &Arc<Tools>) -> Box<dyn FormatStream> {
        Box::new(GlmStream::new(Arc::clone(tools)))
    }

    fn render(&self, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
        render(calls, content, self.compact)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Content,
    /// After `<tool_call>`: the tool name, up to `<arg_key>` or `</tool_call>`.
    Name,
    /// Between pairs.
    Args,
    /// Inside `<arg_key>...`.
    Key,
    /// After `</arg_key>`: whitespace, then `<arg_value>`.
    AfterKey,
    /// Inside `<arg_value>...`.
    Value,
    /// After `</arg_value>`: it ends the value only if the next non-whitespace text is markup.
    ValueEnd,
    /// After a value's end marker and the call's closing markup: the call ends there unless the
    /// value's end marker shows up again before the next call (then all of it was value text).
    Tentative,
}

struct GlmStream {
    tools: Arc<Tools>,
    buf: String,
    base: usize,
    st: St,
    content: FramedContent,
    content_markers: MarkerSet,
    name_markers: MarkerSet,
    args_markers: MarkerSet,
    key_end: MarkerSet,
    value_end: MarkerSet,
    raw: String,
    raw_at: Pos,
    name: String,
    call_name: String,
    key: String,
    args: ArgsWriter,
    streaming: bool,
    types: TypeSet,
    value: String,
    in_junk: bool,
    after_call_reported: bool,
    /// The value's end marker and the whitespace after it, while it is not yet known to end it.
    pending_end: String,
    /// Where `pending_end` starts (its value-end marker).
    pending_pos: Pos,
    tentative_markers: MarkerSet,
    /// While held text is replayed: its position and a copy (for exact issue offsets).
    replay: Option<(Pos, String)>,
    keys: Vec<String>,
}

impl GlmStream {
    fn new(tools: Arc<Tools>) -> GlmStream {
        GlmStream {
            tools,
            buf: String::new(),
            base: 0,
            st: St::Content,
            content: FramedContent::default(),
            content_markers: MarkerSet::new(&[TOOL_CALL, KEY]),
            name_markers: MarkerSet::new(&[KEY, TOOL_CALL_END]),
            args_markers: MarkerSet::new(&[KEY, TOOL_CALL_END, TOOL_CALL]),
            key_end: MarkerSet::new(&[KEY_END]),
            value_end: MarkerSet::new(&[VALUE_END]),
            raw: String::new(),
            raw_at: Pos::default(),
            name: String::new(),
            call_name: String::new(),
            key: String::new(),
            args: ArgsWriter::default(),
            streaming: true,
            types: TypeSet::STRING,
            value: String::new(),
            in_junk: false,
            after_call_reported: false,
            pending_end: String::new(),
            pending_pos: Pos::default(),
            tentative_markers: MarkerSet::new(&[VALUE_END, TOOL_CALL]),
            replay: None,
            keys: Vec::new(),
        }
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

    fn run(&mut self, buf: &str, eof: bool, out: &mut Emitter<'_>) -> usize {
        let mut i = 0;
        while i < buf.len() {
            let rest = &buf[i..];
            let step = match self.st {
                St::Content => self.on_content(rest, i, eof, out),
                St::Name => self.on_name(rest, i, eof, out),
                St::Args => self.on_args(rest, i, eof, out),
                St::Key => self.on_key(rest, i, eof, out),
                St::AfterKey => self.on_after_key(rest, i, eof, out),
                St::Value => self.on_value(rest, i, eof, out),
                St::Tentative => self.on_tentative(rest, i, eof, out),
                St::ValueEnd => self.on_value_end(rest, eof, out),
            };
            match step {
                Some(n) => i += n,
                None => break,
            }
        }
        i
    }

    fn text_after_calls(&mut self, out: &mut Emitter<'_>, text: &str, i: usize) {
        if out.calls_started() > 0 && !self.after_call_reported {
            if let Some(k) = text.find(|c: char| !c.is_whitespace()) {
                self.after_call_reported = true;
                let at = self.at(out, i + k);
                out.issue(IssueKind::UnexpectedText, at, "text after a tool call; kept as content");
            }
        }
    }

    fn on_content(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let (text_end, next) = match self.content_markers.find(rest, eof) {
            MarkerHit::Full { at, end, marker: 1 } => {
                // `<arg_key>` outside a call: kept as text, but it is broken call markup.
                self.text_after_calls(out, &rest[..end], i);
                self.content.text(out, &rest[..end]);
                let pos = self.at(out, i + at);
                out.issue(
                    IssueKind::MalformedMarkup,
                    pos,
                    "<arg_key> outside a <tool_call>; kept as content",
                );
                return Some(end);
            }
            MarkerHit::Full { at, end, .. } => (at, Some(end)),
            MarkerHit::Partial { at } => (at, None),
            MarkerHit::None => (rest.len(), None),
        };
        self.text_after_calls(out, &rest[..text_end], i);
        self.content.text(out, &rest[..text_end]);
        match next {
            Some(end) => {
                self.raw_at = self.at(out, i + text_end);
                self.raw.clear();
                self.raw.push_str(TOOL_CALL);
                self.name.clear();
                self.st = St::Name;
                Some(end)
            }
            None if text_end == 0 => None,
            None => Some(text_end),
        }
    }

    /// `<tool_call>NAME` cannot be a call: its markup goes back to content.
    fn broken_name(&mut self, out: &mut Emitter<'_>, i: usize, kind: IssueKind, why: &str) {
        let at = self.at(out, i);
        self.broken_name_at(out, at, kind, why);
    }

    fn broken_name_at(&mut self, out: &mut Emitter<'_>, at: Pos, kind: IssueKind, why: &str) {
        let mut raw = std::mem::take(&mut self.raw);
        raw.push_str(&self.name);
        self.name.clear();
        self.content.text(out, &raw);
        out.issue(kind, at, format!("{why}; the markup is kept as content"));
        self.st = St::Content;
    }

    fn start_call(&mut self, out: &mut Emitter<'_>) {
        let name = self.name.trim().to_owned();
        self.name.clear();
        self.raw.clear();
        self.content.call_starts();
        self.after_call_reported = false;
        out.start_call(&name, None, self.raw_at);
        self.call_name = name;
        self.keys.clear();
        self.in_junk = false;
    }

    fn end_call(&mut self, out: &mut Emitter<'_>) {
        self.args.finish(out);
        out.end_call();
    }

    fn on_name(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let lt = memchr::memchr(b'<', rest.as_bytes());
        let mut take = lt.unwrap_or(rest.len());
        // A name is one word: whitespace inside it, or a name longer than MAX_NAME, means this
        // is not a call. Decided at a fixed position, whatever the chunking.
        let mut had_word = !self.name.trim().is_empty();
        let mut ws_after_word = had_word && self.name.ends_with(char::is_whitespace);
        let mut bad = None;
        for (k, c) in rest[..take].char_indices() {
            if self.name.len() + k >= MAX_NAME {
                bad = Some(k);
                break;
            }
            if c.is_whitespace() {
                ws_after_word = had_word;
            } else if ws_after_word {
                bad = Some(k);
                break;
            } else {
                had_word = true;
            }
        }
        if let Some(k) = bad {
            self.name.push_str(&rest[..k]);
            let at = self.raw_at;
            self.broken_name_at(
                out,
                at,
                IssueKind::MalformedMarkup,
                "the text after <tool_call> is not a tool name",
            );
            return Some(k);
        }
        self.name.push_str(&rest[..take]);
        let trimmed = self.name.trim();
        if lt.is_none() {
            take = rest.len();
        }
        let Some(lt) = lt else {
            return if take == 0 { None } else { Some(take) };
        };
        let at_lt = &rest[lt..];
        match self.name_markers.find(at_lt, eof) {
            MarkerHit::Full { at: 0, end, marker } => {
                if trimmed.is_empty() {
                    self.broken_name(out, i + lt, IssueKind::MissingName, "<tool_call> has no tool name");
                    return Some(lt);
                }
                self.start_call(out);
                if marker == 0 {
                    self.key.clear();
                    self.st = St::Key;
                } else {
                    self.end_call(out);
                    self.st = St::Content;
                }
                Some(lt + end)
            }
            MarkerHit::Partial { at: 0 } => {
                if lt == 0 {
                    None
                } else {
                    Some(lt)
                }
            }
            _ => {
                self.broken_name(
                    out,
                    i + lt,
                    IssueKind::MalformedMarkup,
                    "the tool name is not followed by <arg_key> or </tool_call>",
                );
                Some(lt)
            }
        }
    }

    fn on_args(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = rest.len() - rest.trim_start().len();
        if ws > 0 {
            return Some(ws);
        }
        match self.args_markers.find(rest, eof) {
            MarkerHit::Full { at: 0, end, marker } => {
                self.in_junk = false;
                match marker {
                    0 => {
                        self.key.clear();
                        self.st = St::Key;
                    }
                    1 => {
                        self.end_call(out);
                        self.st = St::Content;
                    }
                    _ => {
                        let at = self.at(out, i);
                        out.issue(
                            IssueKind::MalformedMarkup,
                            at,
                            "<tool_call> inside a call; the open call ends here",
                        );
                        self.end_call(out);
                        self.raw_at = at;
                        self.raw.clear();
                        self.raw.push_str(TOOL_CALL);
                        self.name.clear();
                        self.st = St::Name;
                    }
                }
                Some(end)
            }
            MarkerHit::Partial { at: 0 } => None,
            hit => {
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
                            "text in call {:?} outside any <arg_key>/<arg_value> pair was ignored",
                            self.call_name
                        ),
                    );
                }
                Some(stop)
            }
        }
    }

    fn on_key(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let (take, next) = match self.key_end.find(rest, eof) {
            MarkerHit::Full { at, end, .. } => (at, Some(end)),
            MarkerHit::Partial { at } => (at, None),
            MarkerHit::None => (rest.len(), None),
        };
        if self.key.len() + take > MAX_NAME {
            // Cut at a fixed position (MAX_NAME bytes into the key), whatever the chunking.
            let mut cut = MAX_NAME.saturating_sub(self.key.len()).min(take);
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            self.key.clear();
            self.in_junk = true;
            let at = self.at(out, i + cut);
            out.issue(
                IssueKind::MalformedMarkup,
                at,
                "<arg_key> is not closed by </arg_key> within 256 bytes; the pair is ignored",
            );
            self.st = St::Args;
            return Some(cut);
        }
        self.key.push_str(&rest[..take]);
        match next {
            Some(end) => {
                self.st = St::AfterKey;
                Some(end)
            }
            None if take == 0 => None,
            None => Some(take),
        }
    }

    fn on_after_key(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = rest.len() - rest.trim_start().len();
        if ws > 0 {
            return Some(ws);
        }
        if rest.starts_with(VALUE) {
            let key = self.key.trim().to_owned();
            if self.keys.contains(&key) {
                let at = self.at(out, i);
                out.issue(
                    IssueKind::BadArguments,
                    at,
                    format!("argument {key:?} is given twice; the last value wins"),
                );
            } else {
                self.keys.push(key.clone());
            }
            self.types = TypeSet::of_param(&self.tools, &self.call_name, &key);
            self.streaming = self.types.is_plain_string();
            self.args.open(out, &key, self.streaming);
            self.value.clear();
            self.st = St::Value;
            return Some(VALUE.len());
        }
        if !eof && VALUE.starts_with(rest) {
            return None;
        }
        let at = self.at(out, i);
        out.issue(
            IssueKind::MalformedMarkup,
            at,
            format!(
                "<arg_key>{}</arg_key> is not followed by <arg_value>; the key is ignored",
                self.key.trim()
            ),
        );
        self.st = St::Args;
        Some(0)
    }

    fn close_value(&mut self, out: &mut Emitter<'_>) {
        if self.streaming {
            self.args.close_string(out);
        } else {
            let json = coerce(&self.value, self.types);
            self.args.value(out, &json);
            self.value.clear();
        }
    }

    fn value_text(&mut self, out: &mut Emitter<'_>, seg: &str) {
        if self.streaming {
            self.args.fragment(out, seg);
        } else {
            self.value.push_str(seg);
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
                Some(rest.len())
            }
        }
    }

    /// After a value's end marker: markup (or the end of the output) confirms it; any other text
    /// means the marker was part of the value (e.g. `echo '</arg_value>'`), which then goes on.
    fn on_value_end(&mut self, rest: &str, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = rest.len() - rest.trim_start().len();
        if ws > 0 {
            self.pending_end.push_str(&rest[..ws]);
            return Some(ws);
        }
        match self.args_markers.find(rest, eof) {
            MarkerHit::Full { at: 0, end, marker: 1 } => {
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
        let skip = VALUE_END.len().min(held.len());
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

impl FormatStream for GlmStream {
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
        let left = std::mem::take(&mut self.buf);
        match self.st {
            St::Content => self.content.text(out, &left),
            St::Name => {
                let mut raw = std::mem::take(&mut self.raw);
                raw.push_str(&self.name);
                raw.push_str(&left);
                self.name.clear();
                self.content.text(out, &raw);
                out.issue(
                    IssueKind::Truncated,
                    end,
                    "the output ends inside <tool_call> before the tool name is complete; kept as content",
                );
            }
            St::Args | St::Key | St::AfterKey | St::Value | St::ValueEnd | St::Tentative => {
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
                        "the output ends inside call {:?} (no </tool_call>); the call keeps the arguments that arrived",
                        self.call_name
                    ),
                );
            }
        }
        self.st = St::Content;
        self.content.finish(out);
    }
}

fn render(calls: &[ToolCall], content: Option<&str>, compact: bool) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    for marker in [TOOL_CALL, KEY] {
        if content.contains(marker) {
            return Err(RenderError(format!(
                "glm cannot render content containing {marker:?}: it would be read as (broken) tool-call markup"
            )));
        }
    }
    if !calls.is_empty() && content.trim_end().len() != content.len() {
        return Err(RenderError(
            "glm cannot render content that ends in whitespace before tool calls: that whitespace is framing".into(),
        ));
    }
    let nl = if compact { "" } else { "\n" };
    let mut s = String::from(content);
    for (n, call) in calls.iter().enumerate() {
        let name = call.name.as_str();
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains('<') {
            return Err(RenderError(format!(
                "glm cannot render tool name {name:?} (call {n}): it must be non-empty, without whitespace or '<'"
            )));
        }
        let args: serde_json::Value = serde_json::from_str(&call.arguments)
            .map_err(|e| RenderError(format!("call {n} ({name}): arguments are not valid JSON ({e})")))?;
        let serde_json::Value::Object(map) = args else {
            return Err(RenderError(format!(
                "call {n} ({name}): arguments must be a JSON object to render as <arg_key>/<arg_value> pairs"
            )));
        };
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(TOOL_CALL);
        s.push_str(name);
        s.push_str(nl);
        for (key, value) in &map {
            if key.trim() != key || key.contains(KEY_END) {
                return Err(RenderError(format!(
                    "call {n} ({name}): key {key:?} cannot be written in <arg_key> (surrounding whitespace or \"</arg_key>\")"
                )));
            }
            let text = match value {
                serde_json::Value::String(v) => v.clone(),
                other => other.to_string(),
            };
            if text.contains(VALUE_END) {
                return Err(RenderError(format!(
                    "call {n} ({name}): the value of {key:?} contains \"</arg_value>\", which glm cannot express (values are not escaped)"
                )));
            }
            s.push_str(KEY);
            s.push_str(key);
            s.push_str(KEY_END);
            s.push_str(nl);
            s.push_str(VALUE);
            s.push_str(&text);
            s.push_str(VALUE_END);
            s.push_str(nl);
        }
        s.push_str(TOOL_CALL_END);
    }
    Ok(s)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_support::{args, check_events, every_split, kinds, parser, run};
    use super::*;
    use crate::parsers::Event;
    use proptest::prelude::*;
    use serde_json::json;

    const GLM45: &str = "I'll read it.\n<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a/中.rs</arg_value>\n\
        <arg_key>offset</arg_key>\n<arg_value>7</arg_value>\n</tool_call>\n<tool_call> terminal\n<arg_key> command </arg_key>\
        <arg_value>\nls\n</arg_value>\n<arg_key>args</arg_key>\n<arg_value>[\"-l\", 2]</arg_value>\n</tool_call>";
    const GLM47: &str = "<tool_call>list_processes</tool_call><tool_call>terminal<arg_key>command</arg_key><arg_value>echo 😀</arg_value><arg_key>force</arg_key><arg_value>0</arg_value></tool_call>";

    #[test]
    fn both_layouts_every_split() {
        let r = every_split("glm45", GLM45);
        assert_eq!(r.content.as_deref(), Some("I'll read it."));
        assert_eq!(args(&r, 0), json!({"path": "a/中.rs", "offset": 7}));
        // Values keep their newlines (no framing in glm); names and keys are trimmed.
        assert_eq!(r.tool_calls[1].name, "terminal");
        assert_eq!(args(&r, 1), json!({"command": "\nls\n", "args": ["-l", 2]}));
        assert!(r.issues.is_empty());
        let r = every_split("glm47", GLM47);
        assert_eq!(r.content, None);
        assert_eq!(args(&r, 0), json!({}));
        assert_eq!(args(&r, 1), json!({"command": "echo 😀", "force": false}));
    }

    #[test]
    fn string_values_stream() {
        let p = parser("glm45");
        let mut s = p.stream();
        let mut got = String::new();
        for e in s.feed("<tool_call>terminal\n<arg_key>command</arg_key>\n<arg_value>make -j8 al") {
            if let Event::ToolCallArgsDelta { text, .. } = e {
                got.push_str(&text);
            }
        }
        assert_eq!(got, "{\"command\": \"make -j8 al");
    }

    #[test]
    fn unknown_tools_are_kept_and_reported() {
        let r = every_split(
            "glm45",
            "<tool_call>delete_db\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
        );
        assert_eq!(r.tool_calls[0].name, "delete_db");
        assert_eq!(args(&r, 0), json!({"x": "1"}));
        assert_eq!(kinds(&r), ["unknown_tool"]);
    }

    #[test]
    fn end_markers_inside_values() {
        let text = "<tool_call>terminal<arg_key>command</arg_key><arg_value>echo '</tool_call>' '</arg_value>' \
                    x</arg_value>\n</tool_call> mean</arg_value></tool_call>";
        let r = every_split("glm47", text);
        assert_eq!(
            args(&r, 0),
            json!({"command": "echo '</tool_call>' '</arg_value>' x</arg_value>\n</tool_call> mean"})
        );
        assert!(r.issues.is_empty() && r.content.is_none());
    }

    #[test]
    fn malformed_and_truncated_never_lose_text() {
        let r = every_split(
            "glm45",
            "<tool_call><arg_key>q</arg_key><arg_value>x</arg_value></tool_call>",
        );
        assert!(r.tool_calls.is_empty());
        assert_eq!(kinds(&r)[0], "missing_name");
        assert!(r.content.unwrap().contains("<arg_value>x</arg_value>"));
        let r = every_split(
            "glm45",
            "<tool_call>read_file\n<tool_call>read_file\n<arg_key>path</arg_key><arg_value>p</arg_value></tool_call>",
        );
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.content.as_deref(), Some("<tool_call>read_file"));
        let r = every_split("glm45", "text <tool_call>web_s");
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content.as_deref(), Some("text <tool_call>web_s"));
        assert_eq!(kinds(&r), ["truncated"]);
        for end in 0..=GLM45.len() {
            if GLM45.is_char_boundary(end) {
                let p = parser("glm45");
                let (events, r) = run(&p, &GLM45[..end], &[end / 3]);
                check_events(&events, &r);
                assert!(r.same_as(&p.parse(&GLM45[..end])));
            }
        }
    }

    #[test]
    fn render_round_trip_and_refusals() {
        for name in ["glm45", "glm47"] {
            let p = parser(name);
            let calls = [ToolCall {
                id: String::new(),
                name: "terminal".into(),
                arguments: r#"{"command": " a\nb ", "timeout": 3, "env": {"k": null}}"#.into(),
            }];
            let text = p.render(&calls, Some("ok")).unwrap();
            let r = every_split(name, &text);
            assert_eq!(r.content.as_deref(), Some("ok"));
            assert_eq!(
                args(&r, 0),
                json!({"command": " a\nb ", "timeout": 3, "env": {"k": null}})
            );
            let bad = [ToolCall {
                id: String::new(),
                name: "terminal".into(),
                arguments: r#"{"command": "</arg_value>"}"#.into(),
            }];
            assert!(p.render(&bad, None).unwrap_err().0.contains("</arg_value>"));
            assert!(p.render(&calls, Some("<arg_key>")).is_err());
        }
    }

    const FRAGMENTS: &[&str] = &[
        "<tool_call>",
        "</tool_call>",
        "read_file",
        "terminal",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "path",
        "offset",
        "env",
        "\n",
        " ",
        "x",
        "12",
        "{\"a\": 1}",
        "é",
        "😀",
        "</arg_",
        "<",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn fragments_never_panic_and_split_invariant(
            parts in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40),
            cuts in prop::collection::vec(0usize..300, 0..10),
        ) {
            let text = parts.concat();
            let p = parser("glm45");
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
