//! The described format "a JSON array of `{"name", "arguments"}` call objects in a region of
//! the output": Granite, Jamba and xLAM are rows of it.
//!
//! ```text
//! granite: ... <|tool_call|>[{"name": .., "arguments": {..}}, ...]          (or <tool_call>, no end marker)
//! jamba:   ... <tool_calls>[{..}, ...]</tool_calls>
//! xlam:    [{..}, ...]   |   ```json\n[..]\n```   |   <tool_call>[..]</tool_call>   |   [TOOL_CALLS][..]   |   ...</think>[..]
//! ```
//!
//! # Semantics
//! - A region opens at one of the row's start markers (or, for xLAM, at a bare `[` at the start
//!   of the output or right after `</think>`) and must hold a JSON array; each element that is
//!   a call object streams as its own call: `ToolCallStart` once its name and arguments key are
//!   known, then the arguments' raw JSON as it arrives. Strings are scanned with a JSON grammar,
//!   so marker text inside a string argument is string text.
//! - Text outside regions is content, with the row's [`Gate`] whitespace policy. A fenced block
//!   (```` ``` ````) that does not hold a call array is ordinary content (code in prose).
//!
//! # Hold-back
//! A marker's length of plain text; whitespace that may precede a region; a region's opening
//! (marker, fence language tag, `[`) until its first element decides whether it holds calls;
//! an element object until its name and arguments key are known.
//!
//! # Bad input (never raises, never loses text)
//! An element that is not a call is content with an issue (`missing_name`, ...), the rest of the
//! array still streams. A region that does not start with `[`: its marker and text stay
//! content (`malformed_markup`). JSON broken before a call started: the rest of the region is
//! content; inside started arguments: the rest of the region is appended to them raw
//! (`malformed_json`). Missing end marker, or text after an end-marker-less array:
//! `malformed_markup` / `unexpected_text`, text kept. Output cut inside a region: started call
//! keeps what arrived, the unstarted rest is content (`truncated`).

use crate::parsers::lane::Lane;
use crate::parsers::marker::{MarkerHit, MarkerSet};
use crate::parsers::types::IssueKind;
use crate::parsers::Emitter;

use super::call_objects::{ArrStep, CallArray};
use super::content_gate::Gate;
use super::json_args::truncated_args;
use super::machine::{Machine, Step};
use crate::parsers::json_bytes::{skip_ws, skip_ws_into};
use crate::parsers::types::Pos;

/// One way a call array is introduced.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Region {
    pub start: &'static str,
    /// Closing marker (`None`: the array ends the region).
    pub end: Option<&'static str>,
    /// A Markdown fence: an optional language tag line follows the start, and a region that does
    /// not hold an array is plain content without an issue.
    pub fence: bool,
}

/// The description of one row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArraySpec {
    pub regions: &'static [Region],
    /// A bare array at the start of the output, or after `think_end`, is a region (xLAM).
    pub bare: bool,
    /// End of a reasoning block after which a bare array may follow (kept as content).
    pub think_end: Option<&'static str>,
    pub args_keys: &'static [&'static str],
    pub strip_edges: bool,
    pub drop_tail_ws: bool,
    /// The format writes all calls in one region that ends the output (Jamba, Granite): text or
    /// another region after it is kept/parsed, with an issue.
    pub one_region: bool,
    /// A single space before the region is framing (see [`Gate`]'s `lone_space`).
    pub lone_space: bool,
}

/// How one format's call array differs from the others' (the rules [`ArrayBody`] applies).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArrayRules {
    /// A call that follows a non-call element still reports the region's opening as markup.
    /// Mistral says no: its `[TOOL_CALLS]` already went out as content with that element.
    pub markup_after_content: bool,
    /// The issue's words for an array that holds no call.
    pub empty_message: &'static str,
}

const REGION_RULES: ArrayRules = ArrayRules {
    markup_after_content: true,
    empty_message: "tool-call array without calls; kept as content",
};

/// What [`ArrayBody::step`] leaves to the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyStep {
    /// The input was used up.
    NeedMore,
    /// Keep stepping the array.
    More,
    /// The array's `]` was consumed; an array without calls is content by now.
    Done,
    /// The array broke outside a call: the rest of the region is content.
    RawContent,
    /// The array broke inside a started call: the rest of the region is its raw arguments.
    RawArgs,
}

/// A call array between its `[` and `]`, with the region's opening text (`raw`, content unless
/// a call starts) and its whitespace [`Gate`] lent by the caller, which owns what surrounds it.
pub(crate) struct ArrayBody {
    array: CallArray,
    rules: ArrayRules,
    /// A call has started and the opening was reported as markup.
    called: bool,
}

impl ArrayBody {
    pub(crate) fn new(args_keys: &'static [&'static str], rules: ArrayRules) -> ArrayBody {
        ArrayBody {
            array: CallArray::new("name", args_keys),
            rules,
            called: false,
        }
    }

    /// Expect a new array.
    pub(crate) fn reset(&mut self) {
        self.array.reset();
        self.called = false;
    }

    pub(crate) fn called(&self) -> bool {
        self.called
    }

    pub(crate) fn calls(&self) -> usize {
        self.array.calls()
    }

    pub(crate) fn args_lane(&self) -> Lane {
        self.array.args_lane()
    }

    pub(crate) fn resume_lane(&mut self, lane: Lane) {
        self.array.resume_lane(lane);
    }

    /// Feed `input` (at absolute `base`); returns bytes consumed and what comes next.
    pub(crate) fn step(
        &mut self,
        input: &str,
        base: usize,
        raw: &mut String,
        gate: &mut Gate,
        out: &mut Emitter<'_>,
    ) -> (usize, BodyStep) {
        let (n, step) = self.array.step(input, base, out);
        let has_call = self.array.calls() > 0 || self.array.in_started_call();
        if has_call && !self.called && (self.rules.markup_after_content || !raw.is_empty()) {
            // The region holds calls: its opening was markup.
            self.called = true;
            raw.clear();
            gate.markup(out);
        }
        // A broken array's rest is content; a non-call element's is not.
        let broke = matches!(step, ArrStep::Broken { .. });
        let next = match step {
            ArrStep::NeedMore => BodyStep::NeedMore,
            ArrStep::Done { raw: text } => {
                if self.array.calls() == 0 {
                    let at = out.pos(base + n);
                    out.issue(IssueKind::MalformedMarkup, at, self.rules.empty_message);
                    raw.push_str(&text);
                    gate.text(&std::mem::take(raw), out);
                }
                BodyStep::Done
            }
            ArrStep::Content {
                text,
                kind,
                message,
                at,
            }
            | ArrStep::Broken {
                raw: text,
                kind,
                message,
                at,
            } => {
                out.issue(kind, at, message);
                gate.text(&std::mem::take(raw), out);
                gate.text(&text, out);
                match broke {
                    true => BodyStep::RawContent,
                    false => BodyStep::More,
                }
            }
            ArrStep::BrokenArgs { message, at } => {
                out.issue(
                    IssueKind::MalformedJson,
                    at,
                    message + "; the arguments are kept as written",
                );
                BodyStep::RawArgs
            }
        };
        (n, next)
    }

    /// The output ended inside the array: a started call keeps what arrived, the rest is content.
    pub(crate) fn end(&mut self, leftover: &str, end: Pos, raw: &mut String, gate: &mut Gate, out: &mut Emitter<'_>) {
        if self.array.in_started_call() {
            let missing = self
                .array
                .started_call_args_done()
                .then_some("the end of its call object and the array's ']'");
            truncated_args(out, leftover, end, missing);
        } else {
            let mut text = self.array.take_raw();
            text.push_str(leftover);
            out.issue(
                IssueKind::Truncated,
                end,
                "output ended inside the tool-call array; the unfinished part is kept as content",
            );
            gate.text(&std::mem::take(raw), out);
            gate.text(&text, out);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    /// At the start of the output or after `think_end`: whitespace, then maybe a bare array.
    BareCheck,
    /// After a fence start: the language tag line.
    FenceTag,
    /// After a start marker: whitespace, then `[`.
    PreArray,
    Array,
    /// After the array: whitespace, then the region's end marker.
    AfterArray,
    RawArgs,
    RawContent,
}

pub(crate) struct ArrayRegions {
    spec: ArraySpec,
    /// Region starts, then `think_end` (if any) as the last index.
    text_markers: MarkerSet,
    mode: Mode,
    region: Option<Region>,
    /// End-marker sets of the regions (by region index), built once.
    end_markers: Vec<MarkerSet>,
    /// Index of the open region in `end_markers` (`None`: bare array, no end marker).
    region_index: Option<usize>,
    gate: Gate,
    /// The region's opening text while none of its calls has started.
    raw: String,
    body: ArrayBody,
    /// A region with calls has ended (for `one_region`).
    done_region: bool,
    after_reported: bool,
}

impl ArrayRegions {
    pub(crate) fn new(spec: ArraySpec) -> ArrayRegions {
        let mut markers: Vec<&str> = spec.regions.iter().map(|r| r.start).collect();
        if let Some(t) = spec.think_end {
            markers.push(t);
        }
        ArrayRegions {
            spec,
            text_markers: MarkerSet::new(&markers),
            mode: if spec.bare { Mode::BareCheck } else { Mode::Text },
            region: None,
            end_markers: spec
                .regions
                .iter()
                .map(|r| MarkerSet::new(&[r.end.unwrap_or("")]))
                .collect(),
            region_index: None,
            gate: match spec.lone_space {
                true => Gate::new(spec.strip_edges, spec.drop_tail_ws).with_lone_space(),
                false => Gate::new(spec.strip_edges, spec.drop_tail_ws),
            },
            raw: String::new(),
            body: ArrayBody::new(spec.args_keys, REGION_RULES),
            done_region: false,
            after_reported: false,
        }
    }

    fn open_region(&mut self, index: Option<usize>, marker_text: &str) {
        let region = index.and_then(|k| self.spec.regions.get(k)).copied();
        self.region = region;
        self.region_index = index;
        self.raw.clear();
        self.raw.push_str(marker_text);
        self.body.reset();
        self.mode = match region {
            Some(r) if r.fence => Mode::FenceTag,
            Some(_) => Mode::PreArray,
            None => Mode::Array,
        };
    }

    /// The open region's end marker (an empty set when it has none).
    fn find_end(&self, hay: &str, eof: bool) -> MarkerHit {
        match self.region_index.and_then(|k| self.end_markers.get(k)) {
            Some(m) => m.find(hay, eof),
            None => MarkerHit::None,
        }
    }

    /// The region is not a call array: its text so far is content (with an issue unless it is a
    /// fence, where non-array content is ordinary prose); scanning goes on after it.
    fn reject_region(&mut self, at: usize, out: &mut Emitter<'_>) {
        if !self.region.is_some_and(|r| r.fence) {
            let at = out.pos(at);
            let start = self.region.map_or("the array", |r| r.start);
            let msg = format!("{start:?} is not followed by a JSON array of tool calls; it is kept as content");
            out.issue(IssueKind::MalformedMarkup, at, msg);
        }
        let raw = std::mem::take(&mut self.raw);
        self.gate.text(&raw, out);
        self.mode = Mode::Text;
    }

    /// Content inside a region (before any call of it started the region's text goes first).
    fn region_text(&mut self, s: &str, out: &mut Emitter<'_>) {
        let raw = std::mem::take(&mut self.raw);
        self.gate.text(&raw, out);
        self.gate.text(s, out);
    }

    /// `one_region` formats: non-whitespace text after the call block is reported (once).
    fn after_region_text(&mut self, s: &str, at: usize, out: &mut Emitter<'_>) {
        if !(self.spec.one_region && self.done_region) || self.after_reported {
            return;
        }
        if let Some(j) = skip_ws(s) {
            self.after_reported = true;
            let pos = out.pos(at + j);
            out.issue(
                IssueKind::UnexpectedText,
                pos,
                "text after the tool-call block; it is kept in content",
            );
        }
    }

    fn has_end(&self) -> bool {
        self.region.and_then(|r| r.end).is_some()
    }
}

impl Machine for ArrayRegions {
    fn step(&mut self, rest: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> Step {
        match self.mode {
            Mode::BareCheck => {
                let Some(j) = skip_ws(rest) else {
                    self.gate.text(rest, out);
                    return Step::Wait(rest.len());
                };
                self.gate.text(&rest[..j], out);
                let after = &rest[j..];
                match self.text_markers.find(after, eof) {
                    MarkerHit::Partial { at: 0 } => return Step::Wait(j),
                    MarkerHit::Full { at: 0, .. } => self.mode = Mode::Text,
                    _ if after.starts_with('[') => self.open_region(None, ""),
                    _ => self.mode = Mode::Text,
                }
                Step::On(j)
            }
            Mode::Text => {
                let (at, hit) = self.text_markers.until(rest, eof);
                self.after_region_text(&rest[..at], base, out);
                let Some((end, marker)) = hit else {
                    self.gate.text(&rest[..at], out);
                    return Step::Wait(at);
                };
                if self.done_region && !self.after_reported && self.spec.regions.get(marker).is_some() {
                    self.after_reported = true;
                    let pos = out.pos(base + at);
                    out.issue(
                        IssueKind::MalformedMarkup,
                        pos,
                        "a second tool-call block (the format writes one); it is parsed too",
                    );
                }
                self.gate.text(&rest[..at], out);
                let marker_text = &rest[at..end];
                match self.spec.regions.get(marker) {
                    Some(_) => self.open_region(Some(marker), marker_text),
                    None => {
                        // `</think>`: reasoning stays content; a bare array may follow.
                        self.gate.text(marker_text, out);
                        self.mode = Mode::BareCheck;
                    }
                }
                Step::On(end)
            }
            Mode::FenceTag => {
                // ```json / ``` then whitespace; any other language tag is not a call block.
                // (A tag is short: at most 16 bytes are held while it is read.)
                let tag_len = rest.bytes().take(17).take_while(|b| b.is_ascii_alphanumeric()).count();
                if tag_len == rest.len() && tag_len <= 16 && !eof {
                    return Step::Wait(0);
                }
                let tag = &rest[..tag_len];
                if !(tag.is_empty() || tag.eq_ignore_ascii_case("json")) {
                    self.reject_region(base, out);
                    return Step::On(0);
                }
                self.raw.push_str(tag);
                self.mode = Mode::PreArray;
                Step::On(tag_len)
            }
            Mode::PreArray => {
                let Some(j) = skip_ws_into(&mut self.raw, rest) else {
                    return Step::Wait(rest.len());
                };
                if rest[j..].starts_with('[') {
                    self.mode = Mode::Array;
                } else {
                    self.reject_region(base + j, out);
                }
                Step::On(j)
            }
            Mode::Array => {
                let (n, step) = self.body.step(rest, base, &mut self.raw, &mut self.gate, out);
                match step {
                    BodyStep::NeedMore => return Step::Wait(rest.len()),
                    BodyStep::More => {}
                    BodyStep::Done => {
                        if self.body.called() && !self.has_end() {
                            self.done_region = true;
                        }
                        self.mode = Mode::AfterArray;
                    }
                    BodyStep::RawContent => self.mode = Mode::RawContent,
                    BodyStep::RawArgs => self.mode = Mode::RawArgs,
                }
                Step::On(n)
            }
            Mode::AfterArray => {
                if !self.has_end() {
                    // No end marker: what follows is content (an issue if it is not whitespace).
                    let Some(j) = skip_ws(rest) else {
                        self.gate.text(rest, out);
                        return Step::Wait(rest.len());
                    };
                    self.gate.text(&rest[..j], out);
                    let at = out.pos(base + j);
                    out.issue(
                        IssueKind::UnexpectedText,
                        at,
                        "text after the tool-call array; it is kept in content",
                    );
                    self.after_reported = true;
                    self.mode = Mode::Text;
                    return Step::On(j);
                }
                let Some(j) = skip_ws(rest) else {
                    return Step::Wait(rest.len());
                };
                let after = &rest[j..];
                match self.find_end(after, eof) {
                    MarkerHit::Full { at: 0, end, .. } => {
                        if self.body.called() {
                            self.gate.markup(out);
                            self.done_region = true;
                        } else {
                            // No call in the region: its end marker is content like its start.
                            self.gate.text(&after[..end], out);
                        }
                        self.mode = Mode::Text;
                        return Step::On(j + end);
                    }
                    MarkerHit::Partial { at: 0 } => return Step::Wait(j),
                    _ => {
                        let at = out.pos(base + j);
                        let end = self.region.and_then(|r| r.end).unwrap_or_default();
                        out.issue(
                            IssueKind::MalformedMarkup,
                            at,
                            format!("no {end:?} after the tool-call array; the text is kept in content"),
                        );
                        self.mode = Mode::Text;
                    }
                }
                Step::On(j)
            }
            Mode::RawArgs | Mode::RawContent => {
                let is_args = self.mode == Mode::RawArgs;
                let (upto, next) = if self.has_end() {
                    match self.find_end(rest, eof) {
                        MarkerHit::Full { at, end, .. } => (at, Some(end)),
                        MarkerHit::Partial { at } => (at, None),
                        MarkerHit::None => (rest.len(), None),
                    }
                } else {
                    (rest.len(), None)
                };
                if is_args {
                    out.args(&rest[..upto]);
                } else {
                    self.region_text(&rest[..upto], out);
                }
                let Some(end) = next else { return Step::Wait(upto) };
                if is_args {
                    self.gate.end_call(out);
                } else {
                    let marker = &rest[upto..end];
                    self.region_text(marker, out);
                }
                self.mode = Mode::Text;
                Step::On(end)
            }
        }
    }

    fn lane(&self) -> Lane {
        match self.mode {
            Mode::Array if self.body.called() => self.body.args_lane(),
            // Text after a finished block is checked once for `unexpected_text` first.
            Mode::Text if !(self.spec.one_region && self.done_region) || self.after_reported => {
                self.gate.content_lane(self.text_markers.first_byte())
            }
            _ => Lane::Off,
        }
    }

    fn resume_lane(&mut self, lane: Lane) {
        if self.mode == Mode::Array {
            self.body.resume_lane(lane);
        }
    }

    fn end(&mut self, leftover: &str, out: &mut Emitter<'_>) {
        let end = out.pos(out.chunk_offset());
        match self.mode {
            Mode::Text | Mode::BareCheck => self.gate.text(leftover, out),
            Mode::FenceTag | Mode::PreArray => {
                self.raw.push_str(leftover);
                let fence = self.region.is_some_and(|r| r.fence);
                if !fence {
                    out.issue(
                        IssueKind::Truncated,
                        end,
                        "output ended right after a tool-call marker; kept as content",
                    );
                }
                let raw = std::mem::take(&mut self.raw);
                self.gate.text(&raw, out);
            }
            Mode::Array => self.body.end(leftover, end, &mut self.raw, &mut self.gate, out),
            Mode::AfterArray => {
                if self.has_end() {
                    let endm = self.region.and_then(|r| r.end).unwrap_or_default();
                    out.issue(
                        IssueKind::Truncated,
                        end,
                        format!("output ended before {endm:?}; the calls are complete and kept"),
                    );
                }
                self.gate.text(leftover, out);
            }
            Mode::RawArgs => {
                out.args(leftover);
                out.end_call();
            }
            Mode::RawContent => self.region_text(leftover, out),
        }
        self.gate.finish(out);
        self.mode = Mode::Text;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::parsers::test_support::untyped::{every_split, marker_soup, parser};
    use crate::parsers::{IssueKind, ToolCall};

    const ARRAY: &str = "[{\"name\": \"read_file\", \"arguments\": {\"path\": \"</tool_calls>```]\"}}, \
                         {\"arguments\": {}, \"name\": \"list_processes\"}]";

    fn check_calls(r: &crate::parsers::ParseResult) {
        assert!(r.issues.is_empty(), "{:?}", r.issues);
        let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["read_file", "list_processes"]);
        assert_eq!(r.tool_calls[0].arguments, "{\"path\": \"</tool_calls>```]\"}");
    }

    #[test]
    fn every_row_every_split_point() {
        let r = every_split("jamba", &format!("Checking.\n<tool_calls>{ARRAY}</tool_calls>\n"));
        check_calls(&r);
        assert_eq!(r.content.as_deref(), Some("Checking.\n"));
        for marker in ["<|tool_call|>", "<tool_call>"] {
            let r = every_split("granite", &format!("Checking. {marker}{ARRAY}"));
            check_calls(&r);
            assert_eq!(r.content.as_deref(), Some("Checking."));
        }
        for text in [
            format!("{ARRAY}\n"),
            format!("Checking.\n\n```json\n{ARRAY}\n```"),
            format!("```\n{ARRAY}\n```"),
            format!("<tool_call>{ARRAY}</tool_call>"),
            format!("[TOOL_CALLS]{ARRAY}"),
        ] {
            check_calls(&every_split("xlam", &text));
        }
        let r = every_split("xlam", &format!("<think>plan</think>\n{ARRAY}"));
        check_calls(&r);
        assert_eq!(r.content.as_deref(), Some("<think>plan</think>"));
    }

    #[test]
    fn prose_and_code_fences_are_content() {
        let text = "Use this:\n\n```python\nprint([1])\n```\n\nAnd `[x]`.";
        let r = every_split("xlam", text);
        assert!(r.tool_calls.is_empty() && r.issues.is_empty());
        assert_eq!(r.content.as_deref(), Some(text));
    }

    #[test]
    fn bad_elements_keep_text() {
        let r = every_split(
            "jamba",
            "<tool_calls>[{\"arguments\": {}}, {\"name\": \"ok\", \"arguments\": {}}]</tool_calls>",
        );
        assert_eq!(r.tool_calls.len(), 1);
        assert!(r.content.as_deref().unwrap().contains("{\"arguments\": {}}"));
        assert_eq!(r.issues[0].kind, IssueKind::MissingName);
        let r = every_split("granite", "<|tool_call|>{\"name\": \"a\", \"arguments\": {}}");
        assert!(r.tool_calls.is_empty());
        assert_eq!(
            r.content.as_deref(),
            Some("<|tool_call|>{\"name\": \"a\", \"arguments\": {}}")
        );
        let r = every_split(
            "jamba",
            "<tool_calls>[{\"name\": \"a\", \"arguments\": {\"x\": 1,}}]</tool_calls>",
        );
        assert_eq!(r.tool_calls[0].arguments, "{\"x\": 1,}}]");
        assert_eq!(r.issues[0].kind, IssueKind::MalformedJson);
        let r = every_split("xlam", "[{\"name\":\"write");
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content.as_deref(), Some("[{\"name\":\"write"));
        assert_eq!(r.issues[0].kind, IssueKind::Truncated);
    }

    #[test]
    fn render_round_trips() {
        let calls = vec![
            ToolCall {
                id: String::new(),
                name: "a".into(),
                arguments: "{\"s\": \"]\"}".into(),
            },
            ToolCall {
                id: String::new(),
                name: "b".into(),
                arguments: "{}".into(),
            },
        ];
        for name in ["granite", "jamba", "xlam"] {
            let p = parser(name);
            for content in [None, Some("Hi")] {
                let r = every_split(name, &p.render(&calls, content).unwrap());
                assert_eq!(r.content.as_deref(), content, "{name}");
                assert_eq!(r.tool_calls.len(), 2);
                assert_eq!(r.tool_calls[0].arguments, calls[0].arguments);
            }
        }
        assert!(parser("xlam").render(&calls, Some("```json")).is_err());
    }

    const FRAGMENTS: &[&str] = &[
        "<tool_calls>",
        "</tool_calls>",
        "<|tool_call|>",
        "<tool_call>",
        "</tool_call>",
        "[TOOL_CALLS]",
        "```json\n",
        "```",
        "</think>",
        "[",
        "]",
        "{",
        "}",
        "\"name\"",
        "\"arguments\"",
        "\"a\"",
        ":",
        ",",
        " ",
        "\n",
        "x",
    ];

    #[test]
    fn marker_soup_never_panics() {
        marker_soup(&["granite", "jamba", "xlam"], FRAGMENTS);
    }
}
