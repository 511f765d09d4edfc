//! Llama 3.x JSON tool calls (vLLM `llama3_json`, alias `llama4_json`).
//!
//! ```text
//! [<|python_tag|>]{"name": "NAME", "parameters": {..}}; {"name": .., "arguments": {..}}
//! ```
//!
//! # Semantics
//! - Calls are bare JSON objects at the start of the output (after optional whitespace and an
//!   optional `<|python_tag|>`), separated by `;`, whitespace and/or another `<|python_tag|>`.
//!   The arguments key is `parameters` or `arguments`. As in vLLM, `content` is `None` when
//!   calls are found (the only text around well-formed calls is the tag, separators and
//!   whitespace).
//! - Text that does not start with a call object is content. (vLLM decodes JSON at every `{`
//!   of the text and drops prose around it; the format has no prose before calls, so a bare
//!   object after prose stays content here.) A `<|python_tag|>` in that text is the model's
//!   tool-call token, so the object after it is read as a call, and the text before it stays
//!   content (as SGLang does).
//! - Strings are scanned with a JSON grammar, so `}`, `;` or `{"name": ...}` inside a string
//!   argument are string text. The raw arguments JSON streams as it arrives.
//!
//! # Hold-back (forced by the format)
//! A leading `{` may or may not start a call: the object is held until both its `"name"` and
//! its arguments key have been read (`ToolCallStart` needs the name; an object without them is
//! content). When the arguments come before the name they are held until the name arrives.
//! Leading whitespace is held until the first non-whitespace byte.
//!
//! # Bad input
//! An object that is not a call (no string `name`, no arguments key, JSON broken before the
//! call started) is content with an issue, and so is everything after it. JSON broken inside
//! started arguments: the rest of the output is appended to them raw (`malformed_json`; the
//! format has no end marker to resynchronise on). Text after the calls: content,
//! `unexpected_text`. Output cut inside an object: a started call keeps what arrived
//! (`truncated`); an unstarted object is content (`truncated`).

use std::sync::Arc;

use crate::parsers::lane::Lane;
use crate::parsers::marker::{MarkerHit, MarkerSet};
use crate::parsers::types::{IssueKind, RenderError, ToolCall};
use crate::parsers::{Emitter, Format};

use crate::parsers::engines::call_objects::{CallObject, ObjEnd};
use crate::parsers::engines::call_render::render_call_objects;
use crate::parsers::engines::json_args::truncated_args;
use crate::parsers::engines::machine::{Machine, MachineFormat, Step};
use crate::parsers::json_bytes::skip_ws_into;

pub(crate) const PYTHON_TAG: &str = "<|python_tag|>";
const ARGS_KEYS: &[&str] = &["parameters", "arguments"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Start of output: whitespace, the tag, or the first object.
    Start,
    /// After `<|python_tag|>`: whitespace, then an object.
    AfterTag,
    Object,
    /// After a call: whitespace, `;`, then the next object.
    Between,
    /// After `;`: whitespace, then the next object.
    AfterSemicolon,
    /// Content: up to a `<|python_tag|>`, which introduces a call again.
    Text,
    /// Raw arguments of a call whose JSON broke, to the end.
    RawArgs,
}

struct LlamaStream {
    tag: MarkerSet,
    mode: Mode,
    /// Text read but not yet decided (leading whitespace, the tag, separators).
    pending: String,
    obj: CallObject,
    calls: usize,
}

impl LlamaStream {
    fn new() -> LlamaStream {
        LlamaStream {
            tag: MarkerSet::new(&[PYTHON_TAG]),
            mode: Mode::Start,
            pending: String::new(),
            obj: CallObject::new("name", ARGS_KEYS),
            calls: 0,
        }
    }

    /// The rest is content: first what was pending.
    fn rest_is_text(&mut self, out: &mut Emitter<'_>) {
        out.content(&std::mem::take(&mut self.pending));
        self.mode = Mode::Text;
    }

    fn begin_object(&mut self, at: usize, out: &mut Emitter<'_>) {
        let pos = out.pos(at);
        self.obj.reset(pos);
        self.mode = Mode::Object;
    }
}

impl Machine for LlamaStream {
    fn step(&mut self, rest: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> Step {
        match self.mode {
            Mode::Start | Mode::AfterTag | Mode::Between | Mode::AfterSemicolon => {
                let Some(j) = skip_ws_into(&mut self.pending, rest) else {
                    return Step::Wait(rest.len());
                };
                let after = &rest[j..];
                if after.starts_with('{') {
                    if self.calls > 0 {
                        self.pending.clear();
                    }
                    self.begin_object(base + j, out);
                    return Step::On(j);
                }
                if self.mode != Mode::AfterTag {
                    match self.tag.find(after, eof) {
                        MarkerHit::Full { at: 0, end, .. } => {
                            if self.calls > 0 {
                                self.pending.clear();
                            }
                            self.pending.push_str(PYTHON_TAG);
                            self.mode = Mode::AfterTag;
                            return Step::On(j + end);
                        }
                        MarkerHit::Partial { at: 0 } => return Step::Wait(j),
                        _ => {}
                    }
                }
                match self.mode {
                    Mode::Start => self.rest_is_text(out),
                    Mode::Between if after.starts_with(';') => {
                        self.pending.push(';');
                        self.mode = Mode::AfterSemicolon;
                        return Step::On(j + 1);
                    }
                    Mode::AfterTag => {
                        let at = out.pos(base + j);
                        out.issue(
                            IssueKind::MalformedMarkup,
                            at,
                            "<|python_tag|> not followed by a JSON tool call; kept as content",
                        );
                        self.rest_is_text(out);
                    }
                    _ => {
                        let at = out.pos(base + j);
                        out.issue(
                            IssueKind::UnexpectedText,
                            at,
                            "text after the tool calls; it is kept in content",
                        );
                        self.rest_is_text(out);
                    }
                }
                Step::On(j)
            }
            Mode::Object => {
                let (n, end) = self.obj.step(rest, base, out);
                if self.obj.started() && !self.pending.is_empty() {
                    // The call started: what was pending (tag, separators) was markup.
                    self.pending.clear();
                }
                if end == ObjEnd::NeedMore {
                    return Step::Wait(rest.len());
                }
                let at = out.pos(base + n);
                match end {
                    ObjEnd::NeedMore => {}
                    ObjEnd::Call => {
                        self.calls += 1;
                        self.pending.clear();
                        self.mode = Mode::Between;
                    }
                    ObjEnd::NotACall { kind, message } => {
                        out.issue(kind, at, message);
                        self.pending.push_str(&self.obj.take_raw());
                        self.rest_is_text(out);
                    }
                    ObjEnd::BrokenBeforeStart { message } => {
                        out.issue(
                            IssueKind::MalformedJson,
                            at,
                            message + "; the object is kept as content",
                        );
                        self.pending.push_str(&self.obj.take_raw());
                        self.rest_is_text(out);
                    }
                    ObjEnd::BrokenArgs { message } => {
                        out.issue(
                            IssueKind::MalformedJson,
                            at,
                            message + "; the rest of the output is kept in the arguments",
                        );
                        self.mode = Mode::RawArgs;
                    }
                    ObjEnd::BrokenAfterArgs { message } => {
                        self.calls += 1;
                        out.issue(IssueKind::MalformedJson, at, message + "; the rest is kept as content");
                        self.pending.clear();
                        self.mode = Mode::Text;
                    }
                }
                Step::On(n)
            }
            Mode::Text => {
                let (at, hit) = self.tag.until(rest, eof);
                out.content(&rest[..at]);
                let Some((end, _)) = hit else { return Step::Wait(at) };
                self.pending.push_str(PYTHON_TAG);
                self.mode = Mode::AfterTag;
                Step::On(end)
            }
            Mode::RawArgs => {
                out.args(rest);
                Step::Wait(rest.len())
            }
        }
    }

    fn lane(&self) -> Lane {
        match self.mode {
            Mode::Object if self.pending.is_empty() => self.obj.args_lane(),
            Mode::Text if self.pending.is_empty() => Lane::Content {
                stop: b'<',
                hold_trailing_ws: false,
            },
            _ => Lane::Off,
        }
    }

    fn resume_lane(&mut self, lane: Lane) {
        if self.mode == Mode::Object {
            self.obj.resume_lane(lane);
        }
    }

    fn end(&mut self, leftover: &str, out: &mut Emitter<'_>) {
        let end = out.pos(out.chunk_offset());
        match self.mode {
            Mode::Object if self.obj.started() => {
                let missing = self.obj.args_done().then_some("the end of its call object ('}')");
                truncated_args(out, leftover, end, missing);
            }
            Mode::Object => {
                out.issue(
                    IssueKind::Truncated,
                    end,
                    "output ended inside a tool-call object; it is kept as content",
                );
                self.pending.push_str(&self.obj.take_raw());
                self.pending.push_str(leftover);
                self.rest_is_text(out);
            }
            Mode::AfterTag | Mode::AfterSemicolon => {
                self.pending.push_str(leftover);
                let msg = if self.mode == Mode::AfterTag {
                    "output ended after <|python_tag|>"
                } else {
                    "output ended after ';'"
                };
                out.issue(IssueKind::Truncated, end, format!("{msg}; kept as content"));
                self.rest_is_text(out);
            }
            Mode::Between => {} // trailing whitespace after the calls is framing
            Mode::Start | Mode::Text => {
                self.pending.push_str(leftover);
                self.rest_is_text(out);
            }
            Mode::RawArgs => {
                out.args(leftover);
                out.end_call();
            }
        }
        self.mode = Mode::Text;
    }
}

/// `{"name": .., "parameters": ..}` per call, joined by `; `. The format has no place for text
/// next to calls.
fn render(calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    if calls.is_empty() {
        let start = content.trim_start_matches([' ', '\t', '\n', '\r']);
        // The tag introduces a call wherever it stands (after prose too).
        if start.starts_with('{') || content.contains(PYTHON_TAG) {
            return Err(RenderError(
                "content that starts with '{' or holds <|python_tag|> would be read back as a JSON tool call".into(),
            ));
        }
        return Ok(content.to_owned());
    }
    if !content.is_empty() {
        return Err(RenderError(
            "llama3_json cannot write text next to tool calls (a Llama 3 tool-call turn is only JSON); \
             pass content=None"
                .into(),
        ));
    }
    let mut out = String::new();
    render_call_objects(calls, "; ", "parameters", &mut out)?;
    Ok(out)
}

pub fn llama3_json() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: |_| LlamaStream::new(),
        render,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::parsers::test_support::untyped::{assert_all_content, every_split, marker_soup, parser};
    use crate::parsers::{IssueKind, ToolCall};

    #[test]
    fn calls_every_split_point() {
        let text =
            "\n<|python_tag|>{\"name\": \"terminal\", \"parameters\": {\"command\": \"echo '; {\\\"name\\\": 1}'\"}}; \
                    {\"parameters\": {\"q\": \"}\"}, \"name\": \"web_search\"}\n{\"name\": \"x\", \"arguments\": {}}\n";
        let r = every_split("llama3_json", text);
        assert!(r.issues.is_empty(), "{:?}", r.issues);
        assert_eq!(r.content, None);
        let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["terminal", "web_search", "x"]);
        assert_eq!(r.tool_calls[1].arguments, "{\"q\": \"}\"}");
    }

    #[test]
    fn objects_that_are_not_calls_are_content() {
        let text = "{\"parameters\": {}}; {\"name\": \"x\", \"parameters\": {}}";
        let r = every_split("llama3_json", text);
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content.as_deref(), Some(text));
        assert_eq!(r.issues[0].kind, IssueKind::MissingName);
        let r = every_split("llama3_json", "Here is JSON: {\"name\": \"x\", \"parameters\": {}}");
        assert!(r.tool_calls.is_empty() && r.issues.is_empty());
        let r = every_split("llama3_json", "{\"name\": \"x\", \"parameters\": {\"a\": [1, 2");
        assert_eq!(r.tool_calls[0].arguments, "{\"a\": [1, 2");
        assert_eq!(r.issues[0].kind, IssueKind::Truncated);
        let r = every_split("llama3_json", "{\"name\": \"sear");
        assert_eq!(r.content.as_deref(), Some("{\"name\": \"sear"));
    }

    #[test]
    fn python_tag_introduces_calls_after_prose_and_between_calls() {
        // SGLang's Llama 3.2 suite (and vLLM, which decodes every object): the tag is the
        // model's tool-call token, wherever it comes.
        let r = every_split(
            "llama3_json",
            "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}<|python_tag|>{\"name\": \"b\", \"parameters\": {}}",
        );
        let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(r.content, None);
        assert!(r.issues.is_empty(), "{:?}", r.issues);
        let r = every_split(
            "llama3_json",
            "Some intro. <|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": 1}}",
        );
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].arguments, "{\"x\": 1}");
        assert_eq!(r.content.as_deref(), Some("Some intro. "));
        assert!(r.issues.is_empty(), "{:?}", r.issues);
        // Without the tag, or with a tag not followed by a call object, prose stays prose.
        for text in [
            "Intro {\"name\": \"a\", \"parameters\": {}}",
            "Intro <|python_tag|>brave_search.call(q=1)",
            "a < b <|pyth",
        ] {
            assert_all_content(&every_split("llama3_json", text), text);
        }
    }

    #[test]
    fn render_round_trip_and_refusals() {
        let p = parser("llama4_json");
        let calls = vec![
            ToolCall {
                id: String::new(),
                name: "a".into(),
                arguments: "{\"s\": \";\"}".into(),
            },
            ToolCall {
                id: String::new(),
                name: "b".into(),
                arguments: String::new(),
            },
        ];
        let r = every_split("llama3_json", &p.render(&calls, None).unwrap());
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[1].arguments, "{}");
        assert!(p.render(&calls, Some("text")).is_err());
        assert!(p.render(&[], Some(" {\"a\": 1}")).is_err());
        // The tag after prose introduces a call (found by test_properties' round trip).
        for content in [
            "0<|python_tag|>",
            "Use <|python_tag|>{\"name\": \"a\", \"parameters\": {}}",
        ] {
            assert!(p.render(&[], Some(content)).is_err(), "{content:?}");
        }
        let prose = "Intro {\"name\": \"a\"} and <|python_ta";
        assert_eq!(
            every_split("llama3_json", &p.render(&[], Some(prose)).unwrap())
                .content
                .as_deref(),
            Some(prose)
        );
    }

    const FRAGMENTS: &[&str] = &[
        "<|python_tag|>",
        "{",
        "}",
        "\"name\"",
        "\"parameters\"",
        "\"arguments\"",
        ":",
        ",",
        ";",
        "\"x\"",
        "[",
        "]",
        " ",
        "\n",
        "1",
        "é",
    ];

    #[test]
    fn marker_soup_never_panics() {
        marker_soup(&["llama3_json"], FRAGMENTS);
    }
}
