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

use super::call_objects::{CallObject, ObjEnd};
use super::machine::{Driven, Machine, Step};
use crate::parsers::lane::Lane;
use crate::parsers::marker::{MarkerHit, MarkerSet};
use crate::parsers::tools::Tools;
use crate::parsers::types::{IssueKind, Pos, RenderError, ToolCall};
use crate::parsers::{Emitter, Format, FormatStream};

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
        Box::new(Driven::new(JimStream::new(*self)))
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
            if let Err(e) = crate::parsers::json_scan::validate(&call.arguments) {
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

struct JimStream {
    cfg: JsonInMarkers,
    /// Outside blocks only the start marker matters: a stray end marker is prose (models write
    /// about their own format), so it is content without an issue.
    text_markers: MarkerSet,
    /// After the object or after broken JSON: end marker (index 0) or a new start (index 1).
    block_markers: MarkerSet,
    mode: Mode,
    /// A call ended: whitespace that follows is framing until other text shows up.
    after_call: bool,
    ws_held: String,
    // Current block.
    block_start: Pos,
    /// The block's start marker and the whitespace after it, while no call has started.
    raw: String,
    /// The call object (the same reader the JSON-array formats use).
    obj: CallObject,
}

impl JimStream {
    fn new(cfg: JsonInMarkers) -> JimStream {
        JimStream {
            cfg,
            text_markers: MarkerSet::new(&[cfg.start]),
            block_markers: MarkerSet::new(&[cfg.end, cfg.start]),
            mode: Mode::Text,
            after_call: false,
            ws_held: String::new(),
            block_start: Pos::default(),
            raw: String::new(),
            obj: CallObject::new(cfg.name_key, cfg.args_keys),
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
        self.obj.reset(self.block_start);
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
        out.content(&self.obj.take_raw());
        self.mode = if resync { Mode::Text } else { Mode::RawContent };
    }

    /// The call object ended (`now`: absolute offset right after what was consumed of it).
    fn object_end(&mut self, end: ObjEnd, now: usize, out: &mut Emitter<'_>) {
        let pos = out.pos(now);
        match end {
            ObjEnd::NeedMore => {}
            ObjEnd::Call => self.mode = Mode::AfterObject,
            ObjEnd::NotACall { kind, message } => {
                self.fail_unstarted(kind, pos, message, false, out);
            }
            ObjEnd::BrokenBeforeStart { message } => {
                let msg = format!("{message} (byte {})", pos.byte);
                self.fail_unstarted(IssueKind::MalformedJson, pos, msg, false, out);
            }
            ObjEnd::BrokenArgs { message } => {
                let msg = format!("{message} (byte {}); the arguments are kept as written", pos.byte);
                out.issue(IssueKind::MalformedJson, pos, msg);
                self.mode = Mode::RawArgs;
            }
            ObjEnd::BrokenAfterArgs { message } => {
                // `CallObject` has ended the call; what follows in the block is content.
                let msg = format!(
                    "{message} (byte {}); the rest of the block is kept as content",
                    pos.byte
                );
                out.issue(IssueKind::MalformedJson, pos, msg);
                self.after_call = false;
                self.mode = Mode::Junk;
            }
        }
    }
}

impl Machine for JimStream {
    fn step(&mut self, rest: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> Step {
        match self.mode {
            Mode::Text => {
                let (at, hit) = self.text_markers.until(rest, eof);
                self.text(&rest[..at], base, out);
                let Some((end, _)) = hit else { return Step::Wait(at) };
                self.begin_block(base + at, out);
                Step::On(end)
            }
            Mode::Prologue => {
                let Some(j) = rest.bytes().position(|b| !b.is_ascii_whitespace()) else {
                    self.raw.push_str(rest);
                    return Step::Wait(rest.len());
                };
                self.raw.push_str(&rest[..j]);
                if rest.as_bytes().get(j) == Some(&b'{') {
                    self.mode = Mode::Object;
                } else {
                    let pos = out.pos(base + j);
                    let msg = format!(
                        "{} is not followed by a JSON object; the marker is kept as content",
                        self.cfg.start
                    );
                    self.fail_unstarted(IssueKind::MalformedMarkup, pos, msg, true, out);
                }
                Step::On(j)
            }
            Mode::Object => {
                let (n, end) = self.obj.step(rest, base, out);
                if end == ObjEnd::NeedMore {
                    return Step::Wait(rest.len());
                }
                self.object_end(end, base + n, out);
                Step::On(n)
            }
            Mode::AfterObject => {
                let Some(j) = rest.bytes().position(|b| !b.is_ascii_whitespace()) else {
                    return Step::Wait(rest.len());
                };
                match self.block_markers.find(&rest[j..], eof) {
                    MarkerHit::Full { at: 0, end, marker: 0 } => {
                        self.mode = Mode::Text;
                        self.after_call = true;
                        return Step::On(j + end);
                    }
                    MarkerHit::Partial { at: 0 } => return Step::Wait(j),
                    _ => {
                        let pos = out.pos(base + j);
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
                Step::On(j)
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
                let Some(end) = next else { return Step::Wait(upto) };
                if self.mode != Mode::RawContent {
                    out.end_call();
                    self.after_call = true;
                }
                self.mode = Mode::Text;
                Step::On(end)
            }
        }
    }

    /// Fast paths for the two states a long output spends its time in: prose that cannot start
    /// a marker, and the inside of a JSON string (unless the driver's string lane just refused
    /// this chunk: the same rule would refuse it again).
    #[inline]
    fn take_chunk(&mut self, chunk: &str, out: &mut Emitter<'_>) -> bool {
        match self.mode {
            Mode::Text if !self.after_call && self.text_markers.find(chunk, false) == MarkerHit::None => {
                out.content(chunk);
                true
            }
            Mode::Object if out.resumed_lane() == Lane::Off => self.obj.skip_plain_string(chunk, out),
            _ => false,
        }
    }

    /// Inside the arguments' JSON strings the driver may pass text on by itself.
    fn lane(&self) -> Lane {
        match self.mode {
            Mode::Object => self.obj.args_lane(),
            // Prose that is not after a call (whitespace there is framing until text shows).
            Mode::Text if !self.after_call => match self.text_markers.first_byte() {
                Some(stop) => Lane::Content {
                    stop,
                    hold_trailing_ws: false,
                },
                None => Lane::Off,
            },
            _ => Lane::Off,
        }
    }

    fn resume_lane(&mut self, lane: Lane) {
        if self.mode == Mode::Object {
            self.obj.resume_lane(lane);
        }
    }

    /// Positions are only ever asked for text in the input being stepped.
    fn holds_text(&self) -> bool {
        false
    }

    fn end(&mut self, leftover: &str, out: &mut Emitter<'_>) {
        let end = out.pos(out.chunk_offset());
        match self.mode {
            Mode::Text => {
                out.content(leftover);
                self.ws_held.clear();
            }
            Mode::Prologue | Mode::Object if !self.obj.started() => {
                self.raw.push_str(leftover);
                let msg = format!(
                    "output ended inside a {} block; the block is kept as content",
                    self.cfg.start
                );
                self.fail_unstarted(IssueKind::Truncated, end, msg, false, out);
            }
            Mode::Prologue | Mode::Object => {
                out.args(leftover);
                let name = self.obj.name().unwrap_or_default();
                let msg = if self.obj.args_done() {
                    format!(
                        "output ended after the complete arguments of tool call {name:?}, before the end of its JSON object and {}; the call is kept",
                        self.cfg.end
                    )
                } else {
                    format!("output ended inside the arguments of tool call {name:?}; they are incomplete")
                };
                out.issue(IssueKind::Truncated, end, msg);
                out.end_call();
            }
            Mode::AfterObject => {
                out.content(leftover);
                let msg = format!(
                    "output ended before {}; the tool call is complete and kept",
                    self.cfg.end
                );
                out.issue(IssueKind::Truncated, end, msg);
            }
            Mode::RawArgs => {
                out.args(leftover);
                out.end_call();
            }
            Mode::RawContent | Mode::Junk => out.content(leftover),
        }
        self.mode = Mode::Text;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::parsers::{get_parser, ParseResult, Parser};

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
    fn truncation_messages_say_what_is_missing() {
        let p = hermes();
        let msg = |text: &str| {
            p.parse(text)
                .issues
                .iter()
                .map(|i| i.message.clone())
                .collect::<Vec<_>>()
        };
        let done = msg("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}");
        assert_eq!(done.len(), 1);
        assert!(
            done[0].contains("complete arguments") && done[0].contains("</tool_call>"),
            "{done:?}"
        );
        let cut = msg("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1");
        assert!(cut[0].contains("they are incomplete"), "{cut:?}");
    }

    /// Issue offsets are part of the result, so they must not depend on the chunking: the offset
    /// of a non-object `arguments` value is where the value starts, after the whitespace the
    /// walker skips, wherever the text is cut (also inside that whitespace).
    #[test]
    fn issue_offsets_do_not_depend_on_chunking() {
        use crate::parsers::test_support::untyped::every_split;
        let cases: &[(&str, &str)] = &[
            (
                "<tool_call>{\"name\": \"x\", \"arguments\":   \"str\"}</tool_call>",
                "   \"str\"",
            ),
            (
                "<tool_call>{\"arguments\": \n\t [1], \"name\": \"é\"}</tool_call>",
                " \n\t [1]",
            ),
            ("ü<tool_call> {\"name\": \"x\", \"arguments\":  7 }</tool_call>", "  7 "),
        ];
        for (text, ws_then_value) in cases {
            let r = every_split("hermes", text);
            let value_at = text.find(ws_then_value).unwrap() + (ws_then_value.len() - ws_then_value.trim_start().len());
            let kinds: Vec<(&str, usize)> = r.issues.iter().map(|i| (i.kind.as_str(), i.offset)).collect();
            assert_eq!(kinds, [("bad_arguments", value_at)], "{text}");
        }
    }

    #[test]
    fn render_refuses_what_it_cannot_express() {
        let call = ToolCall {
            id: String::new(),
            name: "f".into(),
            arguments: "{}".into(),
        };
        assert!(hermes()
            .render(std::slice::from_ref(&call), Some("see <tool_call>"))
            .is_err());
        let bad = ToolCall {
            arguments: "{oops".into(),
            ..call.clone()
        };
        assert!(hermes().render(&[bad], None).unwrap_err().0.contains("not valid JSON"));
        let text = hermes().render(&[call.clone(), call], Some("ok")).unwrap();
        assert_eq!(text, "ok<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>");
    }
}
