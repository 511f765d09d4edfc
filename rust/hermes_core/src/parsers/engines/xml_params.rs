//! The XML-parameter formats (qwen3_coder, glm45/glm47) as one *described* format: a call holds
//! parameters whose values are raw, unescaped text ended by an end marker (`</parameter>`,
//! `</arg_value>`), converted by the tool schema's types ([`super::schema_values`]).
//!
//! What the formats share lives here, written once:
//! - the stream driver ([`super::machine::Driven`]) and the state machine's shared states: plain
//!   content, between parameters, inside a value, and the end-marker-in-value lookahead (a value's
//!   end marker ends it only when markup follows, after whitespace; markup that closes the call
//!   then closes it at once, so a call's `ToolCallEnd` comes with its closing markup);
//! - a missing end marker: markup that starts a line inside a value and can only be the format's
//!   own (qwen3_coder's `<parameter=KEY>`, `</function>`) ends the value, with an issue;
//! - parameter bookkeeping: schema types, string values streamed as JSON-string fragments
//!   ([`ArgsWriter`]), typed values converted when complete, newline framing, and repeated keys
//!   (the first value is kept; a repeat, markup and value, is content with an issue: a JSON
//!   object holds one value per key, and a reader of duplicate keys would lose one of them);
//! - call start/end, broken call markup returned as content, stray text between parameters (content),
//!   truncation at the end of the output;
//! - the render checks (content that would read as markup, values containing the end marker)
//!   and value text: strings as they are, other values as compact JSON text; like the model's
//!   own output, they come back typed only when the parser's tools give the parameter a
//!   non-string type (a parser without tools returns every value as a string).
//!
//! A format describes itself with a [`Spec`] (its markers and wording) and implements [`Dialect`]
//! for the markup that differs: how a call's name and a parameter's key are written.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::machine::{Machine, Step};
use super::schema_values::{coerce, ArgsWriter, TypeSet};
use super::xml_content::FramedContent;
use crate::parsers::lane::Lane;
use crate::parsers::marker::{MarkerHit, MarkerSet};
use crate::parsers::tools::Tools;
use crate::parsers::types::{IssueKind, Pos, RenderError, ToolCall};
use crate::parsers::Emitter;

/// Longest tool or parameter name accepted before the markup is judged broken.
pub(crate) const MAX_NAME: usize = 256;

/// When a name of `have` bytes plus `take` more would pass [`MAX_NAME`], the cut point in
/// `rest`: always the same absolute position, however the text was chunked.
pub(crate) fn cap(rest: &str, have: usize, take: usize) -> Option<usize> {
    if have + take <= MAX_NAME {
        return None;
    }
    let mut cut = MAX_NAME.saturating_sub(have).min(take);
    while !rest.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(cut)
}

/// Leading whitespace (Unicode) of `s`, in bytes.
pub(crate) fn ws_len(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

/// What stands at the start of dialect markup where one of a few literals is expected after
/// optional whitespace (see [`ahead`]).
pub(crate) enum Ahead {
    /// This many bytes of whitespace.
    Space(usize),
    /// Literal `k` of the list.
    Literal(usize),
    /// The text so far may still become a literal.
    More,
    /// Something else.
    Other,
}

/// Which of `literals` starts `rest` after whitespace, one step at a time (the whitespace
/// first, so a dialect can keep it as markup).
pub(crate) fn ahead(rest: &str, eof: bool, literals: &[&str]) -> Ahead {
    let ws = ws_len(rest);
    if ws > 0 {
        return Ahead::Space(ws);
    }
    if let Some(k) = literals.iter().position(|l| rest.starts_with(l)) {
        return Ahead::Literal(k);
    }
    if rest.is_empty() || (!eof && literals.iter().any(|l| l.starts_with(rest))) {
        return Ahead::More;
    }
    Ahead::Other
}

/// A format's markers and wording.
pub(crate) struct Spec {
    /// The format's name in render errors.
    pub format: &'static str,
    /// Markup looked for in content (where a call may start); the dialect's `content` step reads
    /// their indices.
    pub content_markers: &'static [&'static str],
    /// Markup recognised between parameters; the dialect's `args_marker` reads their indices.
    pub args_markers: &'static [&'static str],
    /// The end marker of a value.
    pub value_end: &'static str,
    /// Markup that, at the start of a line inside a value, means the value's end marker is
    /// missing: the value ends before it (with a `malformed_markup` issue) and the markup is
    /// read as markup. A break ending in `=` counts only with its name and `>` (`<parameter=KEY>`).
    pub value_breaks: &'static [&'static str],
    /// One leading and one trailing newline of a value are the template's framing.
    pub framed_newlines: bool,
    /// What the format calls a parameter ("parameter", "argument"), in messages.
    pub param_word: &'static str,
    /// The markup a complete call ends with, in the truncation message.
    pub call_close: &'static str,
    /// The message for stray text between the parameters of call `name`.
    pub junk: fn(name: &str) -> String,
}

/// The machine's state: the shared states, or one of the dialect's own (`Markup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum St<S> {
    /// Plain text; looking for the start of a call.
    Content,
    /// Inside a call, between parameters.
    Args,
    /// Inside a value, up to its end marker.
    Value,
    /// After a value's end marker: it ends the value only if the next non-whitespace text is markup.
    ValueEnd,
    /// A dialect state (call name, parameter key, ...).
    Markup(S),
}

/// The markup that differs between the formats: how a call starts in `Content`, what markup
/// between parameters does, and the dialect's own states. A step returns `Some(bytes consumed)`
/// (0 is allowed when the state changed) or `None` when it needs more text.
pub(crate) trait Dialect: Send + 'static {
    type Sub: Copy + PartialEq + Send + 'static;
    /// One step in `Content`: prose (see [`Core::prose`]) until the format's call markup.
    fn content(
        &mut self,
        x: &mut Core<Self::Sub>,
        rest: &str,
        i: usize,
        eof: bool,
        out: &mut Emitter<'_>,
    ) -> Option<usize>;
    /// In `Args`, markup `marker` of `spec.args_markers` (`text`) stands at byte `i`; it is consumed.
    fn args_marker(&mut self, x: &mut Core<Self::Sub>, marker: usize, text: &str, i: usize, out: &mut Emitter<'_>);
    /// One step in the dialect's own state `sub`.
    fn markup(
        &mut self,
        x: &mut Core<Self::Sub>,
        sub: Self::Sub,
        rest: &str,
        i: usize,
        eof: bool,
        out: &mut Emitter<'_>,
    ) -> Option<usize>;
    /// The output ended in dialect state `sub` with `left` unconsumed. Returns false when that
    /// state is inside a call (the shared truncation handling then closes the call).
    fn finish(&mut self, sub: Self::Sub, x: &mut Core<Self::Sub>, left: &str, end: Pos, out: &mut Emitter<'_>) -> bool;
}

/// The state the shared steps and the dialect's steps work on.
pub(crate) struct Core<S> {
    spec: &'static Spec,
    tools: Arc<Tools>,
    pub st: St<S>,
    pub content: FramedContent,
    pub content_markers: MarkerSet,
    args_markers: MarkerSet,
    /// The value end marker (index 0) and `spec.value_breaks`.
    value_markers: MarkerSet,
    /// What stops a [`Lane::RawString`] (see there): the `<` and second bytes of those markers.
    lane_stop: Option<[u8; 3]>,
    /// Markup of a call that has not started yet (`<tool_call>\n<function=NA`): content if it fails.
    pub raw: String,
    /// Where that markup began.
    pub raw_at: Pos,
    /// The call name or parameter key being read.
    pub name: String,
    /// The open call's tool name (for parameter types).
    pub call_name: String,
    /// The open parameter's key.
    key: String,
    args: ArgsWriter,
    /// The open value streams as a JSON string (else it is converted when complete).
    streaming: bool,
    types: TypeSet,
    value_started: bool,
    held_newline: bool,
    /// A value kept as text (typed, or repeated): its raw text so far is empty or ends with a
    /// newline, so a value break may follow. (A streamed string value tells by `held_newline`
    /// and `value_args_start`, which hold also after a lane passed text.)
    line_start: bool,
    /// Where the open string value's text starts in the call's arguments.
    value_args_start: Option<usize>,
    /// The open parameter repeats a key: its text is content.
    repeated: bool,
    value: String,
    /// Inside stray text between parameters (content; one issue per run).
    in_junk: bool,
    after_call_reported: bool,
    /// The value's end marker and the whitespace after it, while it is not yet known to end it.
    pending_end: String,
    /// Parameter names of the open call (duplicates are reported).
    keys: Vec<String>,
}

impl<S: Copy + PartialEq> Core<S> {
    fn new(spec: &'static Spec, tools: Arc<Tools>) -> Core<S> {
        let mut value_markers = vec![spec.value_end];
        value_markers.extend_from_slice(spec.value_breaks);
        Core {
            spec,
            tools,
            st: St::Content,
            content: FramedContent::default(),
            content_markers: MarkerSet::new(spec.content_markers),
            args_markers: MarkerSet::new(spec.args_markers),
            value_markers: MarkerSet::new(&value_markers),
            lane_stop: lane_stop(&value_markers),
            raw: String::new(),
            raw_at: Pos::default(),
            name: String::new(),
            call_name: String::new(),
            key: String::new(),
            args: ArgsWriter::default(),
            streaming: true,
            types: TypeSet::STRING,
            value_started: false,
            held_newline: false,
            line_start: true,
            value_args_start: None,
            repeated: false,
            value: String::new(),
            in_junk: false,
            after_call_reported: false,
            pending_end: String::new(),
            keys: Vec::new(),
        }
    }

    /// Plain text (at byte `i`) for content. Prose after a call is kept as content (vLLM drops
    /// it) and reported once per run.
    pub fn prose(&mut self, out: &mut Emitter<'_>, text: &str, i: usize) {
        if out.calls_started() > 0 && !self.after_call_reported {
            if let Some(k) = text.find(|c: char| !c.is_whitespace()) {
                self.after_call_reported = true;
                let at = out.pos(i + k);
                out.issue(IssueKind::UnexpectedText, at, "text after a tool call; kept as content");
            }
        }
        self.content.text(out, text);
    }

    /// Call markup `text` starts at `at`; it is held in `raw` until the call is certain.
    pub fn begin_markup(&mut self, at: Pos, text: &str) {
        self.raw_at = at;
        self.raw.clear();
        self.raw.push_str(text);
        self.name.clear();
    }

    /// The call named `name` (trimmed) starts.
    pub fn start_call(&mut self, out: &mut Emitter<'_>) {
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

    /// The output ends inside call markup before the name is complete: the markup (`raw` +
    /// `name`) and `left` are content, with a `truncated` issue saying `why`.
    pub fn truncated_name(&mut self, out: &mut Emitter<'_>, left: &str, end: Pos, why: &str) {
        let mut raw = std::mem::take(&mut self.raw);
        raw.push_str(&self.name);
        raw.push_str(left);
        self.name.clear();
        self.content.text(out, &raw);
        out.issue(IssueKind::Truncated, end, why);
    }

    /// The held call markup (`raw` + `name`) cannot be a call: it goes back to content.
    pub fn broken_name(&mut self, out: &mut Emitter<'_>, at: Pos, kind: IssueKind, why: &str) {
        let mut raw = std::mem::take(&mut self.raw);
        raw.push_str(&self.name);
        self.name.clear();
        self.content.text(out, &raw);
        out.issue(kind, at, format!("{why}; the markup is kept as content"));
        self.st = St::Content;
    }

    pub fn end_call(&mut self, out: &mut Emitter<'_>) {
        self.args.finish(out);
        out.end_call();
    }

    /// Markup at byte `i` that the open call cannot hold: the call ends there, with an issue
    /// saying `why`; returns the position.
    pub fn cut_call(&mut self, out: &mut Emitter<'_>, i: usize, why: &str) -> Pos {
        let at = self.malformed(out, i, why);
        self.end_call(out);
        at
    }

    /// A `malformed_markup` issue at byte `i`, saying `why`; returns the position.
    pub fn malformed(&mut self, out: &mut Emitter<'_>, i: usize, why: impl Into<String>) -> Pos {
        let at = out.pos(i);
        out.issue(IssueKind::MalformedMarkup, at, why);
        at
    }

    /// A new call's markup `text` at byte `i` inside the open call: the open call ends there
    /// (`why`) and the new call's markup is held as at the start of a call.
    pub fn call_in_call(&mut self, out: &mut Emitter<'_>, i: usize, text: &str, why: &str) {
        let at = self.cut_call(out, i, why);
        self.begin_markup(at, text);
    }

    /// The `Args` step up to the dialect: whitespace is skipped and stray text goes to content
    /// (vLLM drops it) with one issue per run. `Ok((marker, end))`: markup `marker` of
    /// `spec.args_markers` is at the start of `rest`, `end` bytes long; `Err(step)`: done.
    fn args_markup(
        &mut self,
        rest: &str,
        i: usize,
        eof: bool,
        out: &mut Emitter<'_>,
    ) -> Result<(usize, usize), Option<usize>> {
        let ws = ws_len(rest);
        if ws > 0 {
            if self.in_junk {
                // Whitespace inside stray text is content with it, however the text is chunked.
                self.content.text(out, rest.get(..ws).unwrap_or_default());
            }
            return Err(Some(ws));
        }
        if rest.is_empty() {
            return Err(None);
        }
        match self.args_markers.find(rest, eof) {
            MarkerHit::Full { at: 0, end, marker } => {
                self.in_junk = false;
                Ok((marker, end))
            }
            MarkerHit::Partial { at: 0 } => Err(None),
            hit => {
                let stop = match hit {
                    MarkerHit::Full { at, .. } | MarkerHit::Partial { at } => at,
                    MarkerHit::None => rest.len(),
                };
                if !self.in_junk {
                    self.in_junk = true;
                    let at = out.pos(i);
                    out.issue(IssueKind::UnexpectedText, at, (self.spec.junk)(&self.call_name));
                }
                // Not part of any parameter: it is content (vLLM drops it; nothing is lost here).
                self.content.text(out, rest.get(..stop).unwrap_or_default());
                Err(Some(stop))
            }
        }
    }

    /// A parameter whose key is broken is not a parameter: its markup (the key marker and the
    /// key text read, in `name`) and its text up to the next markup are content.
    pub fn broken_param(&mut self, out: &mut Emitter<'_>, i: usize, why: &str) {
        let key = std::mem::take(&mut self.name);
        let marker = self.spec.args_markers.first().copied().unwrap_or_default();
        self.content.text(out, &format!("{marker}{key}"));
        self.in_junk = true;
        self.malformed(out, i, why);
        self.st = St::Args;
    }

    /// Parameter `key` opens (its markup, `markup`, ends at byte `i`); its value follows.
    pub fn open_param(&mut self, out: &mut Emitter<'_>, key: String, markup: &str, i: usize) {
        self.value_started = false;
        self.held_newline = false;
        self.line_start = true;
        self.value.clear();
        self.st = St::Value;
        self.repeated = self.keys.contains(&key);
        if self.repeated {
            // The first value has streamed already; this one cannot join the object.
            let at = out.pos(i);
            let word = self.spec.param_word;
            let msg = format!(
                "{word} {key:?} is given twice; the first value is kept, the repeated {word} is kept as content"
            );
            out.issue(IssueKind::BadArguments, at, msg);
            self.content.text(out, markup);
            self.streaming = false;
            self.key = key;
            return;
        }
        self.keys.push(key.clone());
        self.types = TypeSet::of_param(&self.tools, &self.call_name, &key);
        self.streaming = self.types.is_plain_string();
        self.args.open(out, &key, self.streaming);
        self.value_args_start = out.open_args_len();
        self.key = key;
    }

    /// The value's raw text so far is empty or ends with a newline.
    fn at_line_start(&self, out: &Emitter<'_>) -> bool {
        if self.streaming && !self.repeated {
            self.held_newline || out.open_args_len() == self.value_args_start
        } else {
            self.line_start
        }
    }

    /// Raw value text: streamed as a JSON-string fragment or kept for conversion. With newline
    /// framing, a value's first newline is dropped and a trailing one held back.
    fn value_text(&mut self, out: &mut Emitter<'_>, mut seg: &str) {
        if seg.is_empty() {
            return;
        }
        self.line_start = seg.ends_with('\n');
        if self.repeated {
            self.content.text(out, seg);
            return;
        }
        let framed = self.spec.framed_newlines;
        if framed && !self.value_started {
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
        if framed {
            if self.held_newline {
                self.held_newline = false;
                self.args.fragment(out, "\n");
            }
            if let Some(body) = seg.strip_suffix('\n') {
                self.held_newline = true;
                seg = body;
            }
        }
        self.args.fragment(out, seg);
    }

    /// The value is complete (a held trailing newline is framing; so is a held end marker,
    /// except after a repeated key, whose text is all content).
    fn close_value(&mut self, out: &mut Emitter<'_>) {
        let end = std::mem::take(&mut self.pending_end);
        if std::mem::take(&mut self.repeated) {
            self.content.text(out, &end);
            return;
        }
        if self.streaming {
            self.held_newline = false;
            self.args.close_string(out);
        } else {
            let raw = if self.spec.framed_newlines {
                self.value.strip_suffix('\n').unwrap_or(&self.value)
            } else {
                &self.value
            };
            let json = coerce(raw, self.types);
            self.args.value(out, &json);
            self.value.clear();
        }
    }

    fn on_value(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        match self.value_markers.find(rest, eof) {
            MarkerHit::Full { at, end, marker: 0 } => {
                self.value_text(out, &rest[..at]);
                self.pending_end.clear();
                self.pending_end.push_str(&rest[at..end]);
                self.st = St::ValueEnd;
                Some(end)
            }
            MarkerHit::Full { at, end, .. } => {
                self.value_text(out, &rest[..at]);
                let marker = &rest[at..end];
                let breaks = match marker.ends_with('=') {
                    false => Some(true),
                    true => markup_name_closes(&rest[end..], eof),
                };
                match breaks {
                    Some(true) if self.at_line_start(out) => {
                        let pos = out.pos(i + at);
                        let shown = if marker.ends_with('=') {
                            format!("{marker}...>")
                        } else {
                            marker.to_owned()
                        };
                        let msg = format!(
                            "{} {:?} has no {} before {shown}; its value ends at the line before",
                            self.spec.param_word, self.key, self.spec.value_end
                        );
                        out.issue(IssueKind::MalformedMarkup, pos, msg);
                        self.close_value(out);
                        self.st = St::Args;
                        Some(at)
                    }
                    None => Some(at).filter(|&n| n > 0),
                    _ => {
                        self.value_text(out, marker);
                        Some(end)
                    }
                }
            }
            MarkerHit::Partial { at } => {
                self.value_text(out, &rest[..at]);
                Some(at).filter(|&n| n > 0)
            }
            MarkerHit::None => {
                self.value_text(out, rest);
                Some(rest.len()).filter(|&n| n > 0)
            }
        }
    }

    /// After a value's end marker: markup (or the end of the output) confirms it; any other text
    /// means the marker was part of the value (e.g. `echo '</parameter>'`), which then goes on.
    fn on_value_end(&mut self, rest: &str, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = ws_len(rest);
        if ws > 0 {
            self.pending_end.push_str(&rest[..ws]);
            return Some(ws);
        }
        match self.args_markers.find(rest, eof) {
            MarkerHit::Full { at: 0, .. } => {
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

    /// The output ends inside the open call: it keeps what arrived.
    fn truncated_call(&mut self, out: &mut Emitter<'_>, left: &str, end: Pos) {
        if self.st == St::Value {
            self.value_text(out, left);
        }
        if matches!(self.st, St::Value | St::ValueEnd) {
            self.close_value(out);
        }
        self.end_call(out);
        out.issue(
            IssueKind::Truncated,
            end,
            format!(
                "the output ends inside call {:?} (no {}); the call keeps the {}s that arrived",
                self.call_name, self.spec.call_close, self.spec.param_word
            ),
        );
    }
}

/// The state machine of the format that a [`Spec`] and a [`Dialect`] describe.
pub(crate) struct XmlStream<D: Dialect> {
    d: D,
    x: Core<D::Sub>,
}

impl<D: Dialect> XmlStream<D> {
    pub(crate) fn new(spec: &'static Spec, dialect: D, tools: &Arc<Tools>) -> XmlStream<D> {
        XmlStream {
            d: dialect,
            x: Core::new(spec, Arc::clone(tools)),
        }
    }
}

impl<D: Dialect> Machine for XmlStream<D> {
    fn step(&mut self, rest: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> Step {
        let step = match self.x.st {
            St::Content => self.d.content(&mut self.x, rest, base, eof, out),
            St::Args => match self.x.args_markup(rest, base, eof, out) {
                Ok((marker, end)) => {
                    self.d
                        .args_marker(&mut self.x, marker, rest.get(..end).unwrap_or_default(), base, out);
                    Some(end)
                }
                Err(step) => step,
            },
            St::Value => self.x.on_value(rest, base, eof, out),
            St::ValueEnd => self.x.on_value_end(rest, eof, out),
            St::Markup(sub) => self.d.markup(&mut self.x, sub, rest, base, eof, out),
        };
        // The steps return the bytes they consumed, or `None` to wait for more text.
        step.map_or(Step::Wait(0), Step::On)
    }

    fn lane(&self) -> Lane {
        let x = &self.x;
        if x.st == St::Content {
            // Prose: once any text after a call was reported, it passes as it is.
            let settled = x.content.holds_nothing() && (!x.content.called() || x.after_call_reported);
            // Prose without the first byte of the content markers passes as it is.
            return match x.content_markers.first_byte() {
                Some(stop) if settled => Lane::Content {
                    stop,
                    hold_trailing_ws: true,
                },
                _ => Lane::Off,
            };
        }
        // Inside a string value past its leading newline: text that cannot start the value's end
        // marker (or a value break) is value text, escaped as it arrives.
        let open = x.st == St::Value && x.streaming;
        let framed = x.spec.framed_newlines;
        match x.lane_stop {
            Some(stop) if open && (x.value_started || !framed) => Lane::RawString {
                stop,
                framed,
                newline_held: x.held_newline,
            },
            _ => Lane::Off,
        }
    }

    fn resume_lane(&mut self, lane: Lane) {
        if let Lane::RawString { newline_held, .. } = lane {
            if self.x.st == St::Value && self.x.streaming {
                self.x.held_newline = newline_held;
            }
        }
    }

    fn end(&mut self, left: &str, out: &mut Emitter<'_>) {
        let end = out.pos(out.chunk_offset());
        // Anything still unconsumed is text that could not be decided (only at eof, and rare).
        match self.x.st {
            St::Content => self.x.content.text(out, left),
            St::Markup(sub) => {
                if !self.d.finish(sub, &mut self.x, left, end, out) {
                    self.x.truncated_call(out, left, end);
                }
            }
            St::Args | St::Value | St::ValueEnd => self.x.truncated_call(out, left, end),
        }
        self.x.st = St::Content;
        self.x.content.finish(out);
    }
}

/// The first byte shared by the value markers and up to two second bytes (see
/// [`Lane::RawString`]); `None` when they do not fit that shape.
fn lane_stop(markers: &[&str]) -> Option<[u8; 3]> {
    let first = *markers.first()?.as_bytes().first()?;
    let mut seconds: Vec<u8> = Vec::new();
    for m in markers {
        match m.as_bytes() {
            [a, b, ..] if *a == first => {
                if !seconds.contains(b) {
                    seconds.push(*b);
                }
            }
            _ => return None,
        }
    }
    match seconds.as_slice() {
        [a] => Some([first, *a, *a]),
        [a, b] => Some([first, *a, *b]),
        _ => None,
    }
}

/// After a value break ending in `=`: whether a name closed by `>` follows (`Some(true)`), or
/// something else (`Some(false)`: a `<`, a newline, nothing but whitespace, or more than
/// [`MAX_NAME`] bytes), or it cannot be told yet (`None`).
fn markup_name_closes(rest: &str, eof: bool) -> Option<bool> {
    let window = rest.get(..rest.len().min(MAX_NAME + 1)).unwrap_or(rest);
    match memchr::memchr3(b'>', b'<', b'\n', window.as_bytes()) {
        Some(k) => Some(window.as_bytes().get(k) == Some(&b'>') && !window[..k].trim().is_empty()),
        None if eof || rest.len() > MAX_NAME => Some(false),
        None => None,
    }
}

/// Rendering: `content` may not contain `markers` (it would read as call markup, `why`), nor end
/// in whitespace before calls (that whitespace is framing).
pub(crate) fn check_content(
    spec: &Spec,
    content: &str,
    has_calls: bool,
    markers: &[&str],
    why: &str,
) -> Result<(), RenderError> {
    for marker in markers {
        if content.contains(marker) {
            return Err(RenderError(format!(
                "{} cannot render content containing {marker:?}: it would be read as {why}",
                spec.format
            )));
        }
    }
    if has_calls && content.trim_end().len() != content.len() {
        return Err(RenderError(format!(
            "{} cannot render content that ends in whitespace before tool calls: that whitespace is framing",
            spec.format
        )));
    }
    Ok(())
}

/// Rendering: call `n`'s arguments as a JSON object (`as_what` says how the format writes them).
pub(crate) fn args_object(n: usize, call: &ToolCall, as_what: &str) -> Result<Map<String, Value>, RenderError> {
    let name = &call.name;
    let args: Value = serde_json::from_str(&call.arguments)
        .map_err(|e| RenderError(format!("call {n} ({name}): arguments are not valid JSON ({e})")))?;
    match args {
        Value::Object(map) => Ok(map),
        _ => Err(RenderError(format!(
            "call {n} ({name}): arguments must be a JSON object to render as {as_what}"
        ))),
    }
}

/// Rendering: the raw text of `key`'s value (strings as they are, other values as compact JSON),
/// refused when it contains the value end marker (the format has no escaping).
pub(crate) fn value_source(spec: &Spec, n: usize, name: &str, key: &str, value: &Value) -> Result<String, RenderError> {
    let text = match value {
        Value::String(v) => v.clone(),
        other => other.to_string(),
    };
    if text.contains(spec.value_end) {
        return Err(RenderError(format!(
            "call {n} ({name}): the value of {key:?} contains {:?}, which {} cannot express (values are not escaped)",
            spec.value_end, spec.format
        )));
    }
    // A value break starting a line would read as markup after a missing end marker.
    for brk in spec.value_breaks {
        if text.starts_with(brk) || text.contains(&format!("\n{brk}")) {
            return Err(RenderError(format!(
                "call {n} ({name}): a line of the value of {key:?} starts with {brk:?}, which {} would read as markup",
                spec.format
            )));
        }
    }
    Ok(text)
}
