//! The described format "one JSON object per call, between a start and an end marker":
//! `START {"<name_key>": "NAME", "<args_key>": {...}} END`, repeated. Hermes, Qwen2.5/3 and
//! LongCat are rows of it (see `formats/hermes.rs`).
//!
//! # Semantics
//! - Text before the first call block is content, verbatim (as vLLM returns it).
//! - Whitespace between blocks and after the last block is framing and is dropped (vLLM returns
//!   `content: null` for outputs that are only calls). Any other text between or after blocks is
//!   kept in content, with the whitespace around it, and an `unexpected_text` issue (vLLM drops
//!   such text; we never lose text).
//! - Inside a block the JSON is scanned with a real JSON grammar, so an end (or start) marker
//!   inside a JSON string is just string text: the call is returned as the text means it (the
//!   corpus's `intended`; vLLM's regex split loses such calls). Markers are looked for only
//!   outside the JSON object, or after the JSON turned out malformed.
//! - A call starts (`ToolCallStart`) when its name is known and its arguments key has been seen;
//!   the arguments' raw JSON text then streams as it arrives, byte-exact (no re-serialisation).
//!   If the arguments key comes before the name, the arguments are held until the name arrives
//!   (the only unbounded hold-back; it ends with the object).
//! - Arguments that are valid JSON but not an object (a JSON string, an array...) are returned
//!   as written, with a `bad_arguments` issue (vLLM passes them on the same way).
//!
//! # Bad input (never raises, never loses text)
//! - A block that never becomes a call (missing or non-string name, no arguments key, JSON
//!   broken before the call started, start marker not followed by `{`) is returned as content,
//!   start marker included, with an issue (`missing_name`, `missing_arguments`,
//!   `malformed_json`, `malformed_markup`). After a start marker that is not followed by `{`,
//!   scanning resumes right after the marker, so `<tool_call><tool_call>{...}` still yields the
//!   inner call. An end marker outside any block is plain content.
//! - JSON that breaks inside arguments already streamed: the call stays; the rest of the block
//!   up to the end marker is appended to its arguments verbatim (so `arguments` is the raw text,
//!   not JSON) and a `malformed_json` issue gives the offset. Tool consumers should answer the
//!   model with an error for such a call. Once the JSON is broken, the end marker is recognised
//!   anywhere, even where it would be inside a string.
//! - JSON that breaks after the arguments are complete (e.g. a trailing comma in the outer
//!   object): the call stays valid; the rest of the block goes to content, `malformed_json`.
//! - A block with a complete object but no end marker before other text or the next start
//!   marker: the call stays; `malformed_markup`. At end of output: the call stays; `truncated`.
//! - Output ending inside a call: if the call had started, it stays with the arguments received
//!   so far (`truncated`); otherwise the block is returned as content (`truncated`).

use std::sync::Arc;

use super::json_scan::{ObjectWalker, Walk};
use super::marker::{MarkerHit, MarkerSet};
use super::stream::{Emitter, Format, FormatStream};
use super::tools::Tools;
use super::types::{IssueKind, Pos, RenderError, ToolCall};

/// The description: markers and the keys of the call object.
#[derive(Debug, Clone, Copy)]
pub struct JsonInMarkers {
    pub start: &'static str,
    pub end: &'static str,
    /// Key holding the tool name (a JSON string).
    pub name_key: &'static str,
    /// Keys that may hold the arguments (the first one present is used; `render` writes the first).
    pub args_keys: &'static [&'static str],
}

impl Format for JsonInMarkers {
    fn stream(&self, _tools: &Arc<Tools>) -> Box<dyn FormatStream> {
        Box::new(JimStream::new(*self))
    }

    fn render(&self, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
        let content = content.unwrap_or("");
        if content.contains(self.start) {
            return Err(RenderError(format!(
                "content contains the start marker {:?}, which would be read back as a tool call",
                self.start
            )));
        }
        let args_key = self.args_keys.first().copied().unwrap_or("arguments");
        let mut out =
            String::with_capacity(content.len() + calls.iter().map(|c| c.arguments.len() + 64).sum::<usize>());
        out.push_str(content);
        for (i, call) in calls.iter().enumerate() {
            if let Err(e) = super::json_scan::validate(&call.arguments) {
                return Err(RenderError(format!(
                    "call {i} ({}) arguments are not valid JSON ({} at byte {}); pass a JSON object",
                    call.name,
                    e.kind.description(),
                    e.offset
                )));
            }
            if i > 0 {
                out.push('\n');
            }
            out.push_str(self.start);
            out.push('\n');
            out.push_str("{\"");
            out.push_str(self.name_key);
            out.push_str("\": ");
            out.push_str(&serde_json::to_string(&call.name).map_err(|e| RenderError(e.to_string()))?);
            out.push_str(", \"");
            out.push_str(args_key);
            out.push_str("\": ");
            out.push_str(call.arguments.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r')));
            out.push_str("}\n");
            out.push_str(self.end);
        }
        Ok(out)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Outside blocks.
    Text,
    /// After the start marker, before `{`.
    Prologue,
    /// Inside the call object.
    Object,
    /// After the object, before the end marker.
    AfterObject,
    /// Broken JSON inside started arguments: raw text until the end marker goes to the arguments.
    RawArgs,
    /// Rest of a block that is content (the block is not a call): until the end marker inclusive.
    RawContent,
    /// Rest of a started call's block after broken JSON outside its arguments: content, end
    /// marker dropped.
    Junk,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Name,
    Args,
    Other,
}

struct JimStream {
    cfg: JsonInMarkers,
    /// Outside blocks only the start marker matters: a stray end marker is prose (models write
    /// about their own format), so it is content without an issue.
    text_markers: MarkerSet,
    /// After the object or after broken JSON: end marker (index 0) or a new start (index 1).
    block_markers: MarkerSet,
    held: String,
    mode: Mode,
    /// A call ended: whitespace that follows is framing until other text shows up.
    after_call: bool,
    ws_held: String,
    // Current block.
    block_start: Pos,
    raw: String,
    walker: ObjectWalker,
    obj_start: usize,
    member: Member,
    name: Option<String>,
    name_raw: String,
    name_seen: bool,
    args_seen: bool,
    args_done: bool,
    args_first: bool,
    args_held: String,
    started: bool,
}

impl JimStream {
    fn new(cfg: JsonInMarkers) -> JimStream {
        JimStream {
            cfg,
            text_markers: MarkerSet::new(&[cfg.start]),
            block_markers: MarkerSet::new(&[cfg.end, cfg.start]),
            held: String::new(),
            mode: Mode::Text,
            after_call: false,
            ws_held: String::new(),
            block_start: Pos::default(),
            raw: String::new(),
            walker: ObjectWalker::new(),
            obj_start: 0,
            member: Member::Other,
            name: None,
            name_raw: String::new(),
            name_seen: false,
            args_seen: false,
            args_done: false,
            args_first: true,
            args_held: String::new(),
            started: false,
        }
    }

    /// Text outside blocks at absolute offset `at`.
    fn text(&mut self, s: &str, at: usize, out: &mut Emitter<'_>) {
        if s.is_empty() {
            return;
        }
        if !self.after_call {
            out.content(s);
            return;
        }
        match s.bytes().position(|b| !b.is_ascii_whitespace()) {
            None => self.ws_held.push_str(s),
            Some(j) => {
                let pos = out.pos(at + j);
                out.issue(
                    IssueKind::UnexpectedText,
                    pos,
                    "text after a tool call block; it is kept in content (the format expects only calls after the first call)",
                );
                out.content(&std::mem::take(&mut self.ws_held));
                out.content(s);
                self.after_call = false;
            }
        }
    }

    fn begin_block(&mut self, at: usize, out: &mut Emitter<'_>) {
        self.ws_held.clear();
        self.block_start = out.pos(at);
        self.raw.clear();
        self.raw.push_str(self.cfg.start);
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
        self.mode = Mode::Prologue;
    }

    /// The block is not a call: report, return what was read of it as content, and treat the
    /// rest of it as content too (`resync`: continue right after the start marker instead).
    fn fail_unstarted(&mut self, kind: IssueKind, pos: Pos, msg: String, resync: bool, out: &mut Emitter<'_>) {
        out.issue(kind, pos, msg);
        self.after_call = false;
        let ws = std::mem::take(&mut self.ws_held);
        out.content(&ws);
        out.content(&std::mem::take(&mut self.raw));
        self.mode = if resync { Mode::Text } else { Mode::RawContent };
    }

    fn maybe_start(&mut self, out: &mut Emitter<'_>) {
        if self.started || !self.args_seen {
            return;
        }
        let Some(name) = self.name.as_deref() else { return };
        out.start_call(name, None, self.block_start);
        self.started = true;
        self.raw.clear();
        let held = std::mem::take(&mut self.args_held);
        out.args(&held);
    }

    fn args_text(&mut self, t: &str, at: usize, out: &mut Emitter<'_>) {
        if self.args_first {
            self.args_first = false;
            if !t.starts_with('{') {
                let pos = out.pos(at);
                out.issue(
                    IssueKind::BadArguments,
                    pos,
                    format!(
                        "the call's {:?} is not a JSON object; it is passed on as written",
                        self.walker.key()
                    ),
                );
            }
        }
        if self.started {
            out.args(t);
        } else {
            self.args_held.push_str(t);
        }
    }

    /// Process `input` (absolute offset `base`); returns how many bytes were consumed (the rest
    /// is held for the next feed).
    fn run(&mut self, input: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> usize {
        let mut i = 0;
        while i < input.len() {
            let rest = &input[i..];
            match self.mode {
                Mode::Text => match self.text_markers.find(rest, eof) {
                    MarkerHit::Full { at, end, .. } => {
                        self.text(&rest[..at], base + i, out);
                        self.begin_block(base + i + at, out);
                        i += end;
                    }
                    MarkerHit::Partial { at } => {
                        self.text(&rest[..at], base + i, out);
                        return i + at;
                    }
                    MarkerHit::None => {
                        self.text(rest, base + i, out);
                        return input.len();
                    }
                },
                Mode::Prologue => match rest.bytes().position(|b| !b.is_ascii_whitespace()) {
                    None => {
                        self.raw.push_str(rest);
                        return input.len();
                    }
                    Some(j) => {
                        self.raw.push_str(&rest[..j]);
                        i += j;
                        if rest.as_bytes()[j] == b'{' {
                            self.mode = Mode::Object;
                            self.obj_start = base + i;
                        } else {
                            let pos = out.pos(base + i);
                            let msg = format!(
                                "{} is not followed by a JSON object; the marker is kept as content",
                                self.cfg.start
                            );
                            self.fail_unstarted(IssueKind::MalformedMarkup, pos, msg, true, out);
                        }
                    }
                },
                Mode::Object => {
                    let (n, ev) = self.walker.step(rest);
                    if !self.started {
                        self.raw.push_str(&rest[..n]);
                    }
                    i += n;
                    self.object_event(ev, base + i, out);
                    if ev == Walk::NeedMore {
                        return input.len();
                    }
                }
                Mode::AfterObject => {
                    let Some(j) = rest.bytes().position(|b| !b.is_ascii_whitespace()) else {
                        return input.len();
                    };
                    i += j;
                    let rest = &input[i..];
                    match self.block_markers.find(rest, eof) {
                        MarkerHit::Full { at: 0, end, marker: 0 } => {
                            i += end;
                            self.mode = Mode::Text;
                            self.after_call = true;
                        }
                        MarkerHit::Partial { at: 0 } => return i,
                        _ => {
                            let pos = out.pos(base + i);
                            out.issue(
                                IssueKind::MalformedMarkup,
                                pos,
                                format!("no {} after the tool call's JSON object", self.cfg.end),
                            );
                            // What follows is ordinary text (or the next block).
                            self.mode = Mode::Text;
                            self.after_call = false;
                        }
                    }
                }
                Mode::RawArgs | Mode::RawContent | Mode::Junk => {
                    let (upto, next) = match self.block_markers.find(rest, eof) {
                        MarkerHit::Full { at, end, marker: 0 } => (at, Some(end)),
                        MarkerHit::Full { at, .. } => (at, Some(at)),
                        MarkerHit::Partial { at } => (at, None),
                        MarkerHit::None => (rest.len(), None),
                    };
                    match self.mode {
                        Mode::RawArgs => out.args(&rest[..upto]),
                        Mode::RawContent => out.content(&rest[..next.unwrap_or(upto)]),
                        _ => out.content(&rest[..upto]),
                    }
                    match next {
                        Some(end) => {
                            i += end;
                            if self.mode != Mode::RawContent {
                                out.end_call();
                                self.after_call = true;
                            }
                            self.mode = Mode::Text;
                        }
                        None => return i + upto,
                    }
                }
            }
        }
        i
    }

    /// Handle one walker event; `now` is the absolute offset where the event's text ended.
    fn object_event(&mut self, ev: Walk<'_>, now: usize, out: &mut Emitter<'_>) {
        match ev {
            Walk::NeedMore => {}
            Walk::Key => {
                let key = self.walker.key();
                self.member = if key == self.cfg.name_key && !self.name_seen {
                    self.name_seen = true;
                    Member::Name
                } else if !self.args_seen && self.cfg.args_keys.contains(&key) {
                    self.args_seen = true;
                    Member::Args
                } else {
                    Member::Other
                };
                if self.member == Member::Args {
                    self.maybe_start(out);
                }
            }
            Walk::Value(t) => match self.member {
                Member::Name => self.name_raw.push_str(t),
                Member::Args => self.args_text(t, now - t.len(), out),
                Member::Other => {}
            },
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
                    self.mode = Mode::AfterObject;
                } else {
                    let pos = out.pos(now);
                    let (kind, msg) = if self.name.is_none() {
                        let what = if self.name_seen {
                            "is not a string"
                        } else {
                            "is missing"
                        };
                        (
                            IssueKind::MissingName,
                            format!(
                                "tool call object's {:?} {what}; the block is kept as content",
                                self.cfg.name_key
                            ),
                        )
                    } else {
                        (
                            IssueKind::MissingArguments,
                            format!(
                                "tool call object has no {:?} key; the block is kept as content",
                                self.cfg.args_keys.first().copied().unwrap_or("arguments")
                            ),
                        )
                    };
                    self.fail_unstarted(kind, pos, msg, false, out);
                }
            }
            Walk::Error(e) => {
                let pos = out.pos(now);
                let msg = format!(
                    "malformed JSON in tool call: {} (byte {})",
                    e.kind.description(),
                    pos.byte
                );
                if !self.started {
                    self.fail_unstarted(IssueKind::MalformedJson, pos, msg, false, out);
                } else if self.member == Member::Args && !self.args_done {
                    out.issue(
                        IssueKind::MalformedJson,
                        pos,
                        msg + "; the arguments are kept as written",
                    );
                    self.mode = Mode::RawArgs;
                } else {
                    out.issue(
                        IssueKind::MalformedJson,
                        pos,
                        msg + "; the rest of the block is kept as content",
                    );
                    out.end_call();
                    self.after_call = false;
                    self.mode = Mode::Junk;
                }
            }
        }
    }

    fn feed_input(&mut self, chunk: &str, eof: bool, out: &mut Emitter<'_>) {
        let base = out.chunk_offset() - self.held.len();
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

impl FormatStream for JimStream {
    fn feed(&mut self, chunk: &str, out: &mut Emitter<'_>) {
        // Fast paths for the two states a long output spends its time in, when nothing is held:
        // prose that cannot start a marker, and the inside of a JSON string.
        if self.held.is_empty() {
            match self.mode {
                Mode::Text if !self.after_call && self.text_markers.find(chunk, false) == MarkerHit::None => {
                    out.content(chunk);
                    return;
                }
                Mode::Object if self.walker.skip_plain_string(chunk.as_bytes()) => {
                    if !self.started {
                        self.raw.push_str(chunk);
                    }
                    match self.member {
                        Member::Name => self.name_raw.push_str(chunk),
                        Member::Args if self.started => out.args(chunk),
                        Member::Args => self.args_held.push_str(chunk),
                        Member::Other => {}
                    }
                    return;
                }
                _ => {}
            }
        }
        self.feed_input(chunk, false, out);
    }

    fn holds_text(&self) -> bool {
        // Positions are only ever asked for text in `held` or in the chunk being fed.
        !self.held.is_empty()
    }

    fn finish(&mut self, out: &mut Emitter<'_>) {
        // Text held as a possible marker prefix is decided now: no more text will come.
        self.feed_input("", true, out);
        let leftover = std::mem::take(&mut self.held);
        let end = out.pos(out.chunk_offset());
        match self.mode {
            Mode::Text => {
                out.content(&leftover);
                self.ws_held.clear();
            }
            Mode::Prologue | Mode::Object if !self.started => {
                self.raw.push_str(&leftover);
                let msg = format!(
                    "output ended inside a {} block; the block is kept as content",
                    self.cfg.start
                );
                self.fail_unstarted(IssueKind::Truncated, end, msg, false, out);
            }
            Mode::Prologue | Mode::Object => {
                out.args(&leftover);
                let msg = format!(
                    "output ended inside the JSON of tool call {:?}; its arguments are incomplete",
                    self.name.as_deref().unwrap_or_default()
                );
                out.issue(IssueKind::Truncated, end, msg);
                out.end_call();
            }
            Mode::AfterObject => {
                out.content(&leftover);
                let msg = format!(
                    "output ended before {}; the tool call is complete and kept",
                    self.cfg.end
                );
                out.issue(IssueKind::Truncated, end, msg);
            }
            Mode::RawArgs => {
                out.args(&leftover);
                out.end_call();
            }
            Mode::RawContent | Mode::Junk => out.content(&leftover),
        }
        self.mode = Mode::Text;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::parsers::formats::hermes::HERMES;
    use crate::parsers::registry::Parser;
    use crate::parsers::{get_parser, ParseResult};

    fn hermes() -> Parser {
        get_parser("hermes", Tools::none()).unwrap()
    }

    /// (text, content, [(name, arguments)], [issue kinds]) — the documented semantics, one row each.
    type Row = (
        &'static str,
        Option<&'static str>,
        &'static [(&'static str, &'static str)],
        &'static [&'static str],
    );

    const ROWS: &[Row] = &[
        ("plain </tool_call> text", Some("plain </tool_call> text"), &[], &[]),
        (
            "Hi.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n",
            Some("Hi.\n"),
            &[("f", "{\"a\": 1}")],
            &[],
        ),
        (
            "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"</tool_call><tool_call>\"}}</tool_call>",
            None,
            &[("f", "{\"s\": \"</tool_call><tool_call>\"}")],
            &[],
        ),
        (
            "<tool_call>{\"arguments\": {\"a\": [1]}, \"name\": \"late\"}</tool_call>",
            None,
            &[("late", "{\"a\": [1]}")],
            &[],
        ),
        (
            "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\n\nafter",
            Some("\n\nafter"),
            &[("f", "{}")],
            &["unexpected_text"],
        ),
        (
            "<tool_call>{\"name\": \"f\"}</tool_call>",
            Some("<tool_call>{\"name\": \"f\"}</tool_call>"),
            &[],
            &["missing_arguments"],
        ),
        (
            "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": tru}}</tool_call>x",
            Some("x"),
            &[("f", "{\"a\": tru}}")],
            &["malformed_json", "unexpected_text"],
        ),
        (
            "<tool_call>{\"name\": \"f\", \"arguments\": \"s\"}</tool_call>",
            None,
            &[("f", "\"s\"")],
            &["bad_arguments"],
        ),
        (
            "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x",
            None,
            &[("f", "{\"a\": \"x")],
            &["truncated"],
        ),
        (
            "<tool_call>{\"name\": \"f",
            Some("<tool_call>{\"name\": \"f"),
            &[],
            &["truncated"],
        ),
        ("a <tool_call> b", Some("a <tool_call> b"), &[], &["malformed_markup"]),
        ("<tool_", Some("<tool_"), &[], &[]),
    ];

    fn check(r: &ParseResult, row: &Row) {
        let (text, content, calls, kinds) = row;
        assert_eq!(r.content.as_deref(), *content, "{text}");
        let got: Vec<(&str, &str)> = r
            .tool_calls
            .iter()
            .map(|c| (c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(&got, calls, "{text}");
        let got: Vec<&str> = r.issues.iter().map(|i| i.kind.as_str()).collect();
        assert_eq!(&got, kinds, "{text}");
    }

    #[test]
    fn semantics_table_whole_and_byte_by_byte() {
        let p = hermes();
        for row in ROWS {
            check(&p.parse(row.0), row);
            let mut s = p.stream();
            for (i, ch) in row.0.char_indices() {
                s.feed(&row.0[i..i + ch.len_utf8()]);
            }
            s.finish();
            check(&s.result(), row);
        }
    }

    #[test]
    fn render_refuses_what_it_cannot_express() {
        let call = ToolCall {
            id: String::new(),
            name: "f".into(),
            arguments: "{}".into(),
        };
        assert!(HERMES
            .render(std::slice::from_ref(&call), Some("see <tool_call>"))
            .is_err());
        let bad = ToolCall {
            arguments: "{oops".into(),
            ..call.clone()
        };
        assert!(HERMES.render(&[bad], None).unwrap_err().0.contains("not valid JSON"));
        let text = HERMES.render(&[call.clone(), call], Some("ok")).unwrap();
        assert_eq!(text, "ok<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>");
    }
}
