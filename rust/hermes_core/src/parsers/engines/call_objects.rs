//! Calls written as JSON objects: [`CallObject`] reads one `{"name": ..., "arguments": {...}}`
//! object (through [`ObjectWalker`]), alone or in a JSON array; [`CallArray`] streams such an
//! array call by call.

use crate::parsers::json_bytes::skip_ws;
use crate::parsers::json_scan::{ObjectWalker, Walk};
use crate::parsers::lane::Lane;
use crate::parsers::types::{IssueKind, Pos};
use crate::parsers::Emitter;

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
