//! The state-machine driver every machine-based format uses, and small pieces shared by the
//! JSON-argument formats (mistral, llama3_json, deepseek, kimi_k2, granite, jamba, internlm,
//! xlam):
//!
//! - [`Machine`] + [`Driven`]: the "held tail + chunk" feeding loop of `parsers`' module doc
//!   and the stepping loop over it, written once, so each format only writes `step` (consume
//!   what its state can decide, or wait) and `end`; [`MachineFormat`]: a machine and a render
//!   function as a [`Format`].
//! - [`Gate`]: content with the whitespace policy the vLLM parsers apply around call markup
//!   (e.g. the engine-based parsers `strip()` content when calls were found). Whitespace is the
//!   only text it ever holds back.
//! - [`ArgsValue`]: one raw JSON arguments value streamed as it arrives (P1's [`JsonScanner`]),
//!   with the `bad_arguments` check on its first byte.
//! - [`CallObject`]: one `{"name": ..., "arguments": {...}}` object (P1's [`ObjectWalker`]) for
//!   formats that carry calls as JSON objects, alone or in a JSON array.
//! - [`skip_ws`], [`skip_ws_into`] and [`render_args`] helpers.

use crate::parsers::json_bytes::is_ws;
use crate::parsers::json_escape::json_string;
use crate::parsers::json_scan::{validate, JsonError, JsonScanner, ObjectWalker, Status, Walk};
use crate::parsers::lane::Lane;
use crate::parsers::marker::MarkerSet;
use crate::parsers::types::{IssueKind, Pos, RenderError, ToolCall};
use std::sync::Arc;

use crate::parsers::tools::Tools;
use crate::parsers::{Emitter, Format, FormatStream};

/// What one [`Machine::step`] did with the input it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// This many bytes were consumed; step again over the rest.
    On(usize),
    /// This many bytes were consumed; the rest cannot be decided before more text comes. It is
    /// handed back, prefixed, next time (after the last input, to [`Machine::end`]).
    Wait(usize),
}

/// A format's state machine over "held tail + new chunk"; [`Driven`] runs the stepping loop.
pub(crate) trait Machine: Send {
    /// One step in the current state over `rest`, the input not consumed yet, whose first byte
    /// is absolute byte `base`. A step that consumes nothing must change state or wait. With
    /// `eof`, no more text will come: partial markers are no longer possible.
    fn step(&mut self, rest: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> Step;
    /// End of output, after the last steps (with `eof`): `leftover` is what they did not
    /// consume. Flush everything (content, arguments) and report what was unfinished.
    fn end(&mut self, leftover: &str, out: &mut Emitter<'_>);

    /// A fast path for the states a long output spends its time in, asked only while [`Driven`]
    /// holds no unconsumed text: take all of `chunk` at once (true) or leave it to the steps.
    fn take_chunk(&mut self, _chunk: &str, _out: &mut Emitter<'_>) -> bool {
        false
    }

    /// The lane the driver may run after this feed (see [`Lane`]); asked only when [`Driven`]
    /// holds no unconsumed text. Return a lane only in a state it cannot change, holding nothing.
    fn lane(&self) -> Lane {
        Lane::Off
    }

    /// Take over the state the lane from [`Machine::lane`] ended in (see
    /// [`Emitter::resumed_lane`]); called before the first step after a lane was open.
    fn resume_lane(&mut self, _lane: Lane) {}

    /// [`FormatStream::holds_text`] apart from [`Driven`]'s own unconsumed tail: whether the
    /// machine may still ask for positions of text fed before the current input. The default
    /// (true) is always correct.
    fn holds_text(&self) -> bool {
        true
    }
}

/// Adapts a [`Machine`] to [`FormatStream`]; keeps the unconsumed tail between feeds.
pub(crate) struct Driven<M> {
    machine: M,
    held: String,
}

impl<M: Machine> Driven<M> {
    pub(crate) fn new(machine: M) -> Driven<M> {
        Driven {
            machine,
            held: String::new(),
        }
    }

    /// Step the machine over `input` (its first byte is absolute byte `base`) until it waits
    /// or the input is used up; returns how many bytes were consumed.
    #[inline]
    fn run(&mut self, input: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> usize {
        let mut i = 0;
        while let Some(rest) = input.get(i..).filter(|rest| !rest.is_empty()) {
            match self.machine.step(rest, base + i, eof, out) {
                Step::On(n) => i += n,
                Step::Wait(n) => return i + n,
            }
        }
        i
    }

    fn feed_input(&mut self, chunk: &str, eof: bool, out: &mut Emitter<'_>) {
        let base = out.chunk_offset().saturating_sub(self.held.len());
        let mut buf = std::mem::take(&mut self.held);
        if buf.is_empty() {
            let n = self.run(chunk, base, eof, out);
            buf.push_str(chunk.get(n..).unwrap_or_default());
        } else {
            buf.push_str(chunk);
            let n = self.run(&buf, base, eof, out);
            buf.drain(..n.min(buf.len()));
        }
        self.held = buf;
    }
}

impl<M: Machine> FormatStream for Driven<M> {
    fn feed(&mut self, chunk: &str, out: &mut Emitter<'_>) {
        let resumed = out.resumed_lane();
        if resumed != Lane::Off {
            self.machine.resume_lane(resumed);
        }
        if !(self.held.is_empty() && self.machine.take_chunk(chunk, out)) {
            self.feed_input(chunk, false, out);
        }
        if self.held.is_empty() {
            out.set_lane(self.machine.lane());
        }
    }

    fn finish(&mut self, out: &mut Emitter<'_>) {
        let resumed = out.resumed_lane();
        if resumed != Lane::Off {
            self.machine.resume_lane(resumed);
        }
        self.feed_input("", true, out);
        let leftover = std::mem::take(&mut self.held);
        self.machine.end(&leftover, out);
    }

    fn holds_text(&self) -> bool {
        !self.held.is_empty() || self.machine.holds_text()
    }
}

/// A format that is a [`Machine`] (a fresh one per output and request tools, run by
/// [`Driven`]) and a render function, as most formats are.
pub(crate) struct MachineFormat<M> {
    pub machine: fn(&Arc<Tools>) -> M,
    pub render: fn(&[ToolCall], Option<&str>) -> Result<String, RenderError>,
}

impl<M: Machine + 'static> Format for MachineFormat<M> {
    fn stream(&self, tools: &Arc<Tools>) -> Box<dyn FormatStream> {
        Box::new(Driven::new((self.machine)(tools)))
    }

    fn render(&self, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
        (self.render)(calls, content)
    }
}

/// The output ended inside a started call: `leftover` goes to its arguments, the call is
/// reported `truncated` at `at` and ended (it keeps what arrived). `missing`: when the arguments
/// themselves were complete, what of the call's markup did not arrive (the message says so
/// rather than calling the arguments incomplete).
pub(crate) fn truncated_args(out: &mut Emitter<'_>, leftover: &str, at: Pos, missing: Option<&str>) {
    out.args(leftover);
    let msg = match missing {
        None => "output ended inside a tool call's arguments; they are incomplete".to_owned(),
        Some(what) => format!("output ended after a tool call's complete arguments, before {what}; the call is kept"),
    };
    out.issue(IssueKind::Truncated, at, msg);
    out.end_call();
}

#[inline]
/// Report arguments whose JSON broke after the call started (at input byte `at`): the call keeps
/// the raw text it already streamed as its arguments.
fn malformed_args_issue(out: &mut Emitter<'_>, at: usize, e: &JsonError) {
    let pos = out.pos(at);
    let msg = format!(
        "malformed JSON in tool call arguments: {}; the arguments are kept as written",
        e.kind.description()
    );
    out.issue(IssueKind::MalformedJson, pos, msg);
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

/// Content with the whitespace policy around call markup.
///
/// - `strip_edges` (vLLM's engine parsers, which `strip()` content when calls are found):
///   whitespace right before markup is dropped, and whitespace right after markup is dropped
///   when no content has been released yet.
/// - `drop_tail_ws`: whitespace at the very end of the output is dropped once markup was seen
///   (vLLM returns `content: null` for an output that is only calls and a trailing newline).
/// - `lone_space`: content that is exactly one space before the first markup is framing (vLLM's
///   Jamba returns `content: null` for `" <tool_calls>..."`, the space its template writes).
///
/// Only whitespace is ever held back, and only while it may still turn out to be framing.
/// Outputs without markup come out verbatim.
pub(crate) struct Gate {
    strip_edges: bool,
    drop_tail_ws: bool,
    lone_space: bool,
    ws: String,
    after_markup: bool,
    saw_markup: bool,
    emitted: bool,
}

impl Gate {
    pub(crate) fn new(strip_edges: bool, drop_tail_ws: bool) -> Gate {
        Gate {
            strip_edges,
            drop_tail_ws,
            lone_space: false,
            ws: String::new(),
            after_markup: false,
            saw_markup: false,
            emitted: false,
        }
    }

    /// [`Gate`] with the `lone_space` rule.
    pub(crate) fn with_lone_space(mut self) -> Gate {
        self.lone_space = true;
        self
    }

    /// Plain text for content.
    pub(crate) fn text(&mut self, s: &str, out: &mut Emitter<'_>) {
        if s.is_empty() {
            return;
        }
        if !self.strip_edges && !self.saw_markup {
            if self.lone_space && !out.content_emitted() {
                // A first lone space waits: markup right after it makes it framing.
                if self.ws.is_empty() && s == " " {
                    self.ws.push(' ');
                    return;
                }
                out.content(&self.ws);
                self.ws.clear();
            }
            // Nothing else can make this whitespace framing except later markup, which keeps it.
            out.content(s);
            self.emitted = true;
            return;
        }
        let body_end = s.bytes().rposition(|b| !is_ws(b)).map_or(0, |i| i + 1);
        if body_end == 0 {
            self.ws.push_str(s);
            return;
        }
        // Whitespace between markup and the first content is framing too (vLLM strips content).
        let framing = self.strip_edges && self.after_markup && !self.emitted;
        if !self.ws.is_empty() {
            if !framing {
                out.content(&self.ws);
            }
            self.ws.clear();
        }
        let (body, tail) = s.split_at(body_end);
        let body = if framing {
            body.trim_start_matches([' ', '\t', '\n', '\r'])
        } else {
            body
        };
        out.content(body);
        self.ws.push_str(tail);
        self.after_markup = false;
        self.emitted = true;
    }

    /// The lane for text that would come out as it is (see [`Lane::Content`]; `stop`: the first
    /// byte of the markers looked for), while nothing is held and no framing decision is open.
    pub(crate) fn content_lane(&self, stop: Option<u8>) -> Lane {
        let framing_open = self.strip_edges && !self.emitted;
        match stop {
            Some(stop) if self.ws.is_empty() && !framing_open => Lane::Content {
                stop,
                hold_trailing_ws: self.strip_edges || self.saw_markup,
            },
            _ => Lane::Off,
        }
    }

    /// Plain text up to the next of `markers` goes to content ([`MarkerSet::until`]'s answer).
    #[inline]
    pub(crate) fn until(
        &mut self,
        markers: &MarkerSet,
        rest: &str,
        eof: bool,
        out: &mut Emitter<'_>,
    ) -> (usize, Option<(usize, usize)>) {
        let (at, hit) = markers.until(rest, eof);
        self.text(rest.get(..at).unwrap_or_default(), out);
        (at, hit)
    }

    /// The open call ends with its closing markup.
    pub(crate) fn end_call(&mut self, out: &mut Emitter<'_>) {
        out.end_call();
        self.markup(out);
    }

    /// Markup (a marker, a call) follows the text so far.
    pub(crate) fn markup(&mut self, out: &mut Emitter<'_>) {
        let lone_space = self.lone_space && !out.content_emitted() && !self.saw_markup && self.ws == " ";
        if !self.strip_edges && !lone_space {
            out.content(&self.ws);
        }
        self.ws.clear();
        self.after_markup = true;
        self.saw_markup = true;
    }

    /// End of output.
    pub(crate) fn finish(&mut self, out: &mut Emitter<'_>) {
        if !(self.saw_markup && self.drop_tail_ws) {
            out.content(&self.ws);
        }
        self.ws.clear();
    }
}

/// One JSON arguments value, streamed raw as it arrives. Feed it from the value's first byte
/// (callers skip the whitespace before it, so `arguments` is exactly the value's text).
pub(crate) struct ArgsValue {
    scanner: JsonScanner,
    first: bool,
}

impl ArgsValue {
    pub(crate) fn new() -> ArgsValue {
        ArgsValue {
            scanner: JsonScanner::new(),
            first: true,
        }
    }

    pub(crate) fn reset(&mut self) {
        self.scanner.reset();
        self.first = true;
    }

    /// Scan `input` (at absolute `base`), sending what belongs to the value to the open call;
    /// returns the bytes consumed and the value's status. JSON that breaks is reported here
    /// (`malformed_json`); the call keeps what it streamed.
    pub(crate) fn feed(&mut self, input: &str, base: usize, out: &mut Emitter<'_>) -> (usize, Status) {
        if self.first && !input.is_empty() {
            self.first = false;
            if !input.starts_with('{') {
                let pos = out.pos(base);
                out.issue(
                    IssueKind::BadArguments,
                    pos,
                    "the tool call's arguments are not a JSON object; they are passed on as written",
                );
            }
        }
        let (n, status) = self.scanner.feed(input.as_bytes());
        out.args(input.get(..n).unwrap_or_default());
        if let Status::Error(e) = &status {
            malformed_args_issue(out, base + n, e);
        }
        (n, status)
    }

    /// The output ended: a bare top-level number completes here; anything else is cut short.
    pub(crate) fn end(&mut self) -> Status {
        self.scanner.end()
    }

    /// Inside a JSON string of the value: the lane that may pass text on ([`Lane::Off`]
    /// otherwise, and before the value's first byte).
    pub(crate) fn string_lane(&self) -> Lane {
        if self.first {
            Lane::Off
        } else {
            self.scanner.string_lane()
        }
    }

    /// Take over the state of a lane opened from [`ArgsValue::string_lane`].
    pub(crate) fn resume_lane(&mut self, lane: Lane) {
        self.scanner.resume_lane(lane);
    }
}

/// For formats whose parser drops whitespace around the call markup (vLLM `strip()`s such
/// content): content that ends in whitespace cannot be written so that it reads back the same.
pub(crate) fn check_stripped_content(content: &str, has_calls: bool, format: &str) -> Result<(), RenderError> {
    if has_calls && content.bytes().last().is_some_and(is_ws) {
        return Err(RenderError(format!(
            "{format} drops whitespace around tool calls, so content ending in whitespace cannot be \
             rendered to read back the same; strip the content first"
        )));
    }
    Ok(())
}

/// A call's arguments for rendering: trimmed, checked to be one JSON value (empty means `{}`).
pub(crate) fn render_args(i: usize, call: &ToolCall) -> Result<&str, RenderError> {
    let args = call.arguments.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    if args.is_empty() {
        return Ok("{}");
    }
    validate(args).map_err(|e| {
        RenderError(format!(
            "call {i} ({}) arguments are not valid JSON ({} at byte {}); pass a JSON object",
            call.name,
            e.kind.description(),
            e.offset
        ))
    })?;
    Ok(args)
}

/// Which member of a call object is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Name,
    Args,
    Other,
}

/// How one call object ended (see [`CallObject::step`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ObjEnd {
    /// Not finished; the whole input was consumed.
    NeedMore,
    /// The object closed and its call was emitted (and ended).
    Call,
    /// The object closed but is not a call (no string name, or no arguments key): nothing was
    /// emitted; [`CallObject::take_raw`] gives its text, which the caller returns as content.
    NotACall { kind: IssueKind, message: String },
    /// The JSON broke before the call started; like `NotACall` (the raw text read so far is in
    /// `take_raw`, the offending byte was not consumed).
    BrokenBeforeStart { message: String },
    /// The JSON broke inside the arguments of a started call (still open): the caller decides
    /// where the raw arguments end and calls `Emitter::end_call`.
    BrokenArgs { message: String },
    /// The JSON broke after the arguments were complete; the call was ended and is valid.
    BrokenAfterArgs { message: String },
}

/// Reads one `{"name": ..., "arguments": ...}` object (keys in any order), starting the call
/// when both the name and the arguments key are known and streaming the arguments' raw text.
/// If the arguments come before the name they are held until the name arrives (the one
/// unbounded hold-back of these formats; it ends with the object).
pub(crate) struct CallObject {
    name_key: &'static str,
    args_keys: &'static [&'static str],
    walker: ObjectWalker,
    member: Member,
    name: Option<String>,
    name_raw: String,
    name_seen: bool,
    args_seen: bool,
    args_done: bool,
    args_first: bool,
    args_held: String,
    started: bool,
    raw: String,
    at: Pos,
}

impl CallObject {
    pub(crate) fn new(name_key: &'static str, args_keys: &'static [&'static str]) -> CallObject {
        CallObject {
            name_key,
            args_keys,
            walker: ObjectWalker::new(),
            member: Member::Other,
            name: None,
            name_raw: String::new(),
            name_seen: false,
            args_seen: false,
            args_done: false,
            args_first: true,
            args_held: String::new(),
            started: false,
            raw: String::new(),
            at: Pos::default(),
        }
    }

    /// Start a new object whose `{` is the next byte fed; `at` is where it starts.
    pub(crate) fn reset(&mut self, at: Pos) {
        self.walker.reset();
        self.member = Member::Other;
        self.name = None;
        self.name_raw.clear();
        self.name_seen = false;
        self.args_seen = false;
        self.args_done = false;
        self.args_first = true;
        self.args_held.clear();
        self.started = false;
        self.raw.clear();
        self.at = at;
    }

    /// True once the call has been emitted (`ToolCallStart` sent).
    pub(crate) fn started(&self) -> bool {
        self.started
    }

    /// The object's text read so far, while the call has not started.
    pub(crate) fn take_raw(&mut self) -> String {
        std::mem::take(&mut self.raw)
    }

    /// True once the arguments value is complete (the object may still go on).
    pub(crate) fn args_done(&self) -> bool {
        self.args_done || (self.member == Member::Args && self.walker.value_ended())
    }

    /// The call's name, once its value has been read.
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Streaming fast path: while a member value is inside a JSON string, take `chunk` whole when
    /// it cannot end that string (see [`ObjectWalker::skip_plain_string`]); false: call `step`.
    #[inline]
    pub(crate) fn skip_plain_string(&mut self, chunk: &str, out: &mut Emitter<'_>) -> bool {
        if !self.walker.skip_plain_string(chunk.as_bytes()) {
            return false;
        }
        if !self.started {
            self.raw.push_str(chunk);
        }
        match self.member {
            Member::Name => self.name_raw.push_str(chunk),
            Member::Args if self.started => out.args(chunk),
            Member::Args => self.args_held.push_str(chunk),
            Member::Other => {}
        }
        true
    }

    /// While the started call's arguments are inside a JSON string: the lane that may pass text
    /// on to them ([`Lane::Off`] otherwise).
    pub(crate) fn args_lane(&self) -> Lane {
        if self.started && self.member == Member::Args {
            self.walker.string_lane()
        } else {
            Lane::Off
        }
    }

    /// Take over the state of a lane opened from [`CallObject::args_lane`].
    pub(crate) fn resume_lane(&mut self, lane: Lane) {
        if self.started && self.member == Member::Args {
            self.walker.resume_lane(lane);
        }
    }

    fn maybe_start(&mut self, out: &mut Emitter<'_>) {
        if self.started || !self.args_seen {
            return;
        }
        let Some(name) = self.name.as_deref() else { return };
        out.start_call(name, None, self.at);
        self.started = true;
        self.raw.clear();
        let held = std::mem::take(&mut self.args_held);
        out.args(&held);
    }

    /// Feed `input` (at absolute `base`) until the object ends or the input is used up.
    /// Returns the bytes consumed and how the object ended.
    pub(crate) fn step(&mut self, input: &str, base: usize, out: &mut Emitter<'_>) -> (usize, ObjEnd) {
        let mut i = 0;
        loop {
            let rest = input.get(i..).unwrap_or_default();
            let (n, ev) = self.walker.step(rest);
            if !self.started {
                self.raw.push_str(rest.get(..n).unwrap_or_default());
            }
            i += n;
            // Where a value's text begins (the walker skips whitespace before it in the same step).
            let at = match ev {
                Walk::Value(t) => base + i - t.len(),
                _ => base + i,
            };
            match ev {
                Walk::NeedMore => return (i, ObjEnd::NeedMore),
                Walk::Key => {
                    let key = self.walker.key();
                    self.member = if key == self.name_key && !self.name_seen {
                        self.name_seen = true;
                        Member::Name
                    } else if !self.args_seen && self.args_keys.contains(&key) {
                        self.args_seen = true;
                        Member::Args
                    } else {
                        Member::Other
                    };
                    if self.member == Member::Args {
                        self.maybe_start(out);
                    }
                }
                Walk::Value(t) => {
                    match self.member {
                        Member::Name => self.name_raw.push_str(t),
                        Member::Args => {
                            if self.args_first {
                                self.args_first = false;
                                if !t.starts_with('{') {
                                    let pos = out.pos(at);
                                    let msg = format!(
                                        "the call's {:?} is not a JSON object; it is passed on as written",
                                        self.walker.key()
                                    );
                                    out.issue(IssueKind::BadArguments, pos, msg);
                                }
                            }
                            if self.started {
                                out.args(t);
                            } else {
                                self.args_held.push_str(t);
                            }
                        }
                        Member::Other => {}
                    }
                    if i >= input.len() {
                        // Input used up: the walker keeps any pending event for the next step.
                        return (i, ObjEnd::NeedMore);
                    }
                }
                Walk::ValueEnd => match self.member {
                    Member::Name => {
                        if self.name_raw.starts_with('"') {
                            self.name = serde_json::from_str::<String>(&self.name_raw).ok();
                        }
                        self.maybe_start(out);
                    }
                    Member::Args => self.args_done = true,
                    Member::Other => {}
                },
                Walk::End => {
                    if self.started {
                        out.end_call();
                        return (i, ObjEnd::Call);
                    }
                    let end = if self.name.is_none() {
                        let what = if self.name_seen {
                            "is not a string"
                        } else {
                            "is missing"
                        };
                        ObjEnd::NotACall {
                            kind: IssueKind::MissingName,
                            message: format!("tool call object's {:?} {what}; it is kept as content", self.name_key),
                        }
                    } else {
                        ObjEnd::NotACall {
                            kind: IssueKind::MissingArguments,
                            message: format!(
                                "tool call object has no {:?} key; it is kept as content",
                                self.args_keys.first().copied().unwrap_or("arguments")
                            ),
                        }
                    };
                    return (i, end);
                }
                Walk::Error(e) => {
                    let msg = format!("malformed JSON in tool call: {}", e.kind.description());
                    let end = if !self.started {
                        ObjEnd::BrokenBeforeStart { message: msg }
                    } else if self.member == Member::Args && !self.args_done {
                        ObjEnd::BrokenArgs { message: msg }
                    } else {
                        out.end_call();
                        ObjEnd::BrokenAfterArgs { message: msg }
                    };
                    return (i, end);
                }
            }
        }
    }
}

/// What [`CallArray::step`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArrStep {
    /// The input was used up.
    NeedMore,
    /// The array's `]` was consumed. `raw` is the array's text when it held no call (the caller
    /// decides whether that is content), empty otherwise.
    Done { raw: String },
    /// Text the caller must return as content (an element that is not a call), with its issue.
    Content {
        text: String,
        kind: IssueKind,
        message: String,
        at: Pos,
    },
    /// The array broke and no call is open: `raw` (what was read of the broken part) is content,
    /// and so is the rest of the array region (the caller knows where it ends).
    Broken {
        raw: String,
        kind: IssueKind,
        message: String,
        at: Pos,
    },
    /// The JSON broke inside a started call's arguments: the call is still open and the rest of
    /// the array region is its raw arguments (the caller ends the call).
    BrokenArgs { message: String, at: Pos },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArrMode {
    Open,
    ElemOrClose,
    Elem,
    Object,
    AfterElem,
}

/// A JSON array of call objects, `[{"name": .., "arguments": ..}, ...]`, streamed call by call
/// (granite, jamba, xlam, mistral's pre-v11 form).
pub(crate) struct CallArray {
    mode: ArrMode,
    obj: CallObject,
    /// The array's text while no call of it has started (returned as content if none does).
    raw: String,
    calls: usize,
}

impl CallArray {
    pub(crate) fn new(name_key: &'static str, args_keys: &'static [&'static str]) -> CallArray {
        CallArray {
            mode: ArrMode::Open,
            obj: CallObject::new(name_key, args_keys),
            raw: String::new(),
            calls: 0,
        }
    }

    /// Expect a new array (its `[` after optional whitespace).
    pub(crate) fn reset(&mut self) {
        self.mode = ArrMode::Open;
        self.raw.clear();
        self.calls = 0;
    }

    /// Calls emitted from this array so far.
    pub(crate) fn calls(&self) -> usize {
        self.calls
    }

    /// The array's unconsumed text so far plus the open element's, for content at a cut-off end.
    pub(crate) fn take_raw(&mut self) -> String {
        let mut raw = std::mem::take(&mut self.raw);
        if self.mode == ArrMode::Object && !self.obj.started() {
            raw.push_str(&self.obj.take_raw());
        }
        raw
    }

    /// True while a started call's object is being read.
    pub(crate) fn in_started_call(&self) -> bool {
        self.mode == ArrMode::Object && self.obj.started()
    }

    /// In a started call whose arguments are complete (the rest of its object is missing).
    pub(crate) fn started_call_args_done(&self) -> bool {
        self.in_started_call() && self.obj.args_done()
    }

    /// Inside a JSON string of a started call's arguments: the lane that may pass text on.
    pub(crate) fn args_lane(&self) -> Lane {
        if self.mode == ArrMode::Object {
            self.obj.args_lane()
        } else {
            Lane::Off
        }
    }

    /// Take over the state of a lane opened from [`CallArray::args_lane`].
    pub(crate) fn resume_lane(&mut self, lane: Lane) {
        if self.mode == ArrMode::Object {
            self.obj.resume_lane(lane);
        }
    }

    fn broken(&mut self, what: &str, at: Pos) -> ArrStep {
        let raw = std::mem::take(&mut self.raw);
        ArrStep::Broken {
            raw,
            kind: IssueKind::MalformedJson,
            message: format!("malformed tool-call array: {what}; the rest is kept as content"),
            at,
        }
    }

    fn keep_raw(&mut self, s: &str) {
        if self.calls == 0 {
            self.raw.push_str(s);
        }
    }

    /// Feed `input` (at absolute `base`); returns bytes consumed and what happened.
    pub(crate) fn step(&mut self, input: &str, base: usize, out: &mut Emitter<'_>) -> (usize, ArrStep) {
        let mut i = 0;
        loop {
            let rest = input.get(i..).unwrap_or_default();
            if self.mode == ArrMode::Object {
                let (n, end) = self.obj.step(rest, base + i, out);
                i += n;
                if end == ObjEnd::NeedMore {
                    return (i, ArrStep::NeedMore);
                }
                let at = out.pos(base + i);
                match end {
                    ObjEnd::NeedMore => return (i, ArrStep::NeedMore),
                    ObjEnd::Call => {
                        self.calls += 1;
                        self.raw.clear();
                        self.mode = ArrMode::AfterElem;
                    }
                    ObjEnd::NotACall { kind, message } => {
                        self.mode = ArrMode::AfterElem;
                        let mut text = std::mem::take(&mut self.raw);
                        text.push_str(&self.obj.take_raw());
                        return (
                            i,
                            ArrStep::Content {
                                text,
                                kind,
                                message,
                                at,
                            },
                        );
                    }
                    ObjEnd::BrokenBeforeStart { message } => {
                        let mut raw = std::mem::take(&mut self.raw);
                        raw.push_str(&self.obj.take_raw());
                        self.mode = ArrMode::Open;
                        return (
                            i,
                            ArrStep::Broken {
                                raw,
                                kind: IssueKind::MalformedJson,
                                message,
                                at,
                            },
                        );
                    }
                    ObjEnd::BrokenArgs { message } => {
                        self.mode = ArrMode::Open;
                        return (i, ArrStep::BrokenArgs { message, at });
                    }
                    ObjEnd::BrokenAfterArgs { message } => {
                        self.calls += 1;
                        self.mode = ArrMode::Open;
                        return (
                            i,
                            ArrStep::Broken {
                                raw: String::new(),
                                kind: IssueKind::MalformedJson,
                                message,
                                at,
                            },
                        );
                    }
                }
                continue;
            }
            let Some(j) = skip_ws(rest) else {
                self.keep_raw(rest);
                return (input.len(), ArrStep::NeedMore);
            };
            self.keep_raw(&rest[..j]);
            i += j;
            let b = input.as_bytes().get(i).copied().unwrap_or(b' ');
            let at = out.pos(base + i);
            match (self.mode, b) {
                (ArrMode::Open, b'[') => self.mode = ArrMode::ElemOrClose,
                (ArrMode::Open, _) => return (i, self.broken("expected '['", at)),
                (ArrMode::ElemOrClose | ArrMode::Elem, b'{') => {
                    self.obj.reset(at);
                    self.mode = ArrMode::Object;
                    continue;
                }
                (ArrMode::ElemOrClose | ArrMode::AfterElem, b']') => {
                    self.keep_raw("]");
                    self.mode = ArrMode::Open;
                    let raw = if self.calls == 0 {
                        std::mem::take(&mut self.raw)
                    } else {
                        String::new()
                    };
                    return (i + 1, ArrStep::Done { raw });
                }
                (ArrMode::Elem, b']') => return (i, self.broken("trailing comma before ']'", at)),
                (ArrMode::AfterElem, b',') => self.mode = ArrMode::Elem,
                (ArrMode::AfterElem, _) => return (i, self.broken("expected ',' or ']' after a call", at)),
                _ => return (i, self.broken("expected a call object", at)),
            }
            self.keep_raw(input.get(i..i + 1).unwrap_or_default());
            i += 1;
        }
    }
}

/// Append `[{"name": .., "arguments": ..}, ...]` for `calls` to `out`.
pub(crate) fn render_call_array(calls: &[ToolCall], out: &mut String) -> Result<(), RenderError> {
    out.push('[');
    render_call_objects(calls, ", ", "arguments", out)?;
    out.push(']');
    Ok(())
}

/// Append `{"name": .., "<args_key>": ..}` for each of `calls` to `out`, joined by `separator`.
pub(crate) fn render_call_objects(
    calls: &[ToolCall],
    separator: &str,
    args_key: &str,
    out: &mut String,
) -> Result<(), RenderError> {
    for (i, call) in calls.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        out.push_str("{\"name\": ");
        out.push_str(&json_string(&call.name));
        out.push_str(", \"");
        out.push_str(args_key);
        out.push_str("\": ");
        out.push_str(render_args(i, call)?);
        out.push('}');
    }
    Ok(())
}
