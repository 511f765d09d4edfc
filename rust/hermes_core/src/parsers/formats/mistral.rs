//! Mistral (vLLM `mistral`): both tool-call forms Mistral tokenizers produce.
//!
//! ```text
//! v11+:    [TOOL_CALLS]NAME[ARGS]{..}[TOOL_CALLS]NAME[ARGS]{..}     ([ARGS] optional: NAME{..})
//! pre-v11: [TOOL_CALLS] [{"name": "..", "arguments": {..}}, ...]
//! ```
//!
//! # Semantics
//! - Text before the first `[TOOL_CALLS]` is content; whitespace around the calls is dropped
//!   (vLLM's engine `strip()`s content when calls are found).
//! - A name is `[A-Za-z0-9_.-]+`. `[TOOL_CALLS]` followed by anything else (prose that mentions
//!   the marker) is not a call: the marker and the text stay content, with a `malformed_markup`
//!   issue (vLLM turns the following words into a tool name).
//! - The arguments are scanned as JSON, so `[TOOL_CALLS]` / `[ARGS]` inside a JSON string are
//!   string text (vLLM splits the call there). A call starts (`ToolCallStart`) at the first byte
//!   of its arguments and the raw JSON streams as it arrives.
//! - The pre-v11 array streams call by call, like the other JSON-array formats.
//!
//! # Hold-back
//! A marker's length of plain text, whitespace that may precede a marker, and the tool name
//! (until `[ARGS]` or `{`).
//!
//! # Bad input
//! Missing arguments or name: the call's text stays content (`missing_arguments` /
//! `missing_name`). JSON that breaks inside started arguments: the rest up to the next
//! `[TOOL_CALLS]` is appended raw (`malformed_json`). Text after a call's JSON other than the
//! next call: content, `unexpected_text`. Output cut inside a call: a started call keeps what
//! arrived (`truncated`), an unstarted one is content.

use std::sync::Arc;

use crate::parsers::json_scan::Status;
use crate::parsers::lane::Lane;
use crate::parsers::marker::{MarkerHit, MarkerSet};
use crate::parsers::types::{IssueKind, Pos, RenderError, ToolCall};
use crate::parsers::{Emitter, Format};

use crate::parsers::engines::call_render::{check_stripped_content, render_args};
use crate::parsers::engines::content_gate::Gate;
use crate::parsers::engines::json_args::{truncated_args, ArgsValue};
use crate::parsers::engines::json_array::{ArrayBody, ArrayRules, BodyStep};
use crate::parsers::engines::machine::{Machine, MachineFormat, Step};
use crate::parsers::json_bytes::{skip_ws, skip_ws_into};

pub(crate) const BOT: &str = "[TOOL_CALLS]";
pub(crate) const ARGS: &str = "[ARGS]";
const ARGS_KEYS: &[&str] = &["arguments"];
const ARRAY_RULES: ArrayRules = ArrayRules {
    markup_after_content: false,
    empty_message: "empty tool-call array; kept as content",
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    /// Right after `[TOOL_CALLS]`.
    AfterBot,
    Name,
    PreArgs,
    Args,
    RawArgs,
    /// A rejected call's text, up to the next `[TOOL_CALLS]`.
    RawContent,
    AfterArgs,
    /// Pre-v11 array.
    Array,
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

struct MistralStream {
    bot: MarkerSet,
    args_marker: MarkerSet,
    gate: Gate,
    mode: Mode,
    raw: String,
    name: String,
    call_at: Pos,
    args: ArgsValue,
    array: ArrayBody,
}

impl MistralStream {
    fn new() -> MistralStream {
        MistralStream {
            bot: MarkerSet::new(&[BOT]),
            args_marker: MarkerSet::new(&[ARGS]),
            gate: Gate::new(true, true),
            mode: Mode::Text,
            raw: String::new(),
            name: String::new(),
            call_at: Pos::default(),
            args: ArgsValue::new(),
            array: ArrayBody::new(ARGS_KEYS, ARRAY_RULES),
        }
    }

    /// The current call is not a call: its text is content; `then` says what follows.
    fn reject(&mut self, kind: IssueKind, at: Pos, msg: &str, then: Mode, out: &mut Emitter<'_>) {
        out.issue(kind, at, msg);
        let raw = std::mem::take(&mut self.raw);
        self.gate.text(&raw, out);
        self.mode = then;
    }

    /// Consume text up to the next `[TOOL_CALLS]` (exclusive) as arguments or content; returns
    /// bytes consumed and whether the marker was reached.
    fn raw_until_bot(&mut self, rest: &str, eof: bool, args: bool, out: &mut Emitter<'_>) -> (usize, bool) {
        let (upto, hit) = self.bot.until(rest, eof);
        if args {
            out.args(&rest[..upto]);
        } else {
            self.gate.text(&rest[..upto], out);
        }
        (upto, hit.is_some())
    }
}

impl Machine for MistralStream {
    fn step(&mut self, rest: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> Step {
        match self.mode {
            Mode::Text => {
                let (at, hit) = self.gate.until(&self.bot, rest, eof, out);
                let Some((end, _)) = hit else { return Step::Wait(at) };
                // Whether the marker is markup is known when a call starts (gate.markup then).
                self.raw.clear();
                self.raw.push_str(BOT);
                self.call_at = out.pos(base + at);
                self.mode = Mode::AfterBot;
                Step::On(end)
            }
            Mode::AfterBot => {
                let Some(j) = skip_ws_into(&mut self.raw, rest) else {
                    return Step::Wait(rest.len());
                };
                let after = &rest[j..];
                if !after.starts_with('[') {
                    // v11+: the name follows directly.
                    self.name.clear();
                    self.mode = Mode::Name;
                    return Step::On(j);
                }
                // `[ARGS]` (no name), another `[TOOL_CALLS]`, or the pre-v11 array.
                let maybe_marker = ARGS.starts_with(after) || BOT.starts_with(after);
                if maybe_marker && after.len() < BOT.len() && !eof {
                    return Step::Wait(j);
                }
                let at = out.pos(base + j);
                if after.starts_with(ARGS) {
                    self.reject(
                        IssueKind::MissingName,
                        at,
                        "[ARGS] without a tool name; kept as content",
                        Mode::RawContent,
                        out,
                    );
                } else if after.starts_with(BOT) {
                    self.reject(
                        IssueKind::MalformedMarkup,
                        at,
                        "[TOOL_CALLS] repeated; the first is kept as content",
                        Mode::Text,
                        out,
                    );
                } else {
                    self.array.reset();
                    self.mode = Mode::Array;
                }
                Step::On(j)
            }
            Mode::Name => {
                let n = rest.bytes().position(|b| !is_name_byte(b)).unwrap_or(rest.len());
                self.name.push_str(&rest[..n]);
                self.raw.push_str(&rest[..n]);
                let after = &rest[n..];
                if after.is_empty() {
                    return Step::Wait(n);
                }
                let at = out.pos(base + n);
                if self.name.is_empty() {
                    self.reject(
                        IssueKind::MalformedMarkup,
                        at,
                        "[TOOL_CALLS] not followed by a tool name; kept as content",
                        Mode::Text,
                        out,
                    );
                    return Step::On(n);
                }
                match self.args_marker.find(after, eof) {
                    MarkerHit::Full { at: 0, end, .. } => {
                        self.raw.push_str(ARGS);
                        self.mode = Mode::PreArgs;
                        return Step::On(n + end);
                    }
                    MarkerHit::Partial { at: 0 } => return Step::Wait(n),
                    _ if after.starts_with('{') => self.mode = Mode::PreArgs,
                    _ => {
                        let msg = "[TOOL_CALLS] NAME not followed by [ARGS] or a JSON object; kept as content";
                        self.reject(IssueKind::MalformedMarkup, at, msg, Mode::Text, out);
                    }
                }
                Step::On(n)
            }
            Mode::PreArgs => {
                let Some(j) = skip_ws_into(&mut self.raw, rest) else {
                    return Step::Wait(rest.len());
                };
                match self.bot.find(&rest[j..], eof) {
                    MarkerHit::Partial { at: 0 } => return Step::Wait(j),
                    MarkerHit::Full { at: 0, .. } => {
                        let at = out.pos(base + j);
                        self.reject(
                            IssueKind::MissingArguments,
                            at,
                            "tool call without arguments; kept as content",
                            Mode::Text,
                            out,
                        );
                    }
                    _ => {
                        self.gate.markup(out);
                        out.start_call(&self.name, None, self.call_at);
                        self.raw.clear();
                        self.args.reset();
                        self.mode = Mode::Args;
                    }
                }
                Step::On(j)
            }
            Mode::Args => {
                let (n, status) = self.args.feed(rest, base, out);
                match status {
                    Status::NeedMore => return Step::Wait(rest.len()),
                    Status::Complete => {
                        self.gate.end_call(out);
                        self.mode = Mode::AfterArgs;
                    }
                    Status::Error(_) => self.mode = Mode::RawArgs,
                }
                Step::On(n)
            }
            Mode::RawArgs | Mode::RawContent => {
                let args = self.mode == Mode::RawArgs;
                let (n, found) = self.raw_until_bot(rest, eof, args, out);
                if !(found || eof) {
                    return Step::Wait(n);
                }
                if args {
                    self.gate.end_call(out);
                }
                self.mode = Mode::Text;
                Step::On(n)
            }
            Mode::AfterArgs => {
                let Some(j) = skip_ws(rest) else {
                    return Step::Wait(rest.len());
                };
                match self.bot.find(&rest[j..], eof) {
                    MarkerHit::Full { at: 0, .. } => self.mode = Mode::Text,
                    MarkerHit::Partial { at: 0 } => return Step::Wait(j),
                    _ => {
                        let at = out.pos(base + j);
                        out.issue(
                            IssueKind::UnexpectedText,
                            at,
                            "text after a tool call; it is kept in content",
                        );
                        self.mode = Mode::Text;
                    }
                }
                Step::On(j)
            }
            Mode::Array => {
                let (n, step) = self.array.step(rest, base, &mut self.raw, &mut self.gate, out);
                match step {
                    BodyStep::NeedMore => return Step::Wait(rest.len()),
                    BodyStep::More => {}
                    BodyStep::Done => {
                        if self.array.calls() > 0 {
                            // Nothing closes the array: its `]` ends the markup.
                            self.gate.markup(out);
                        }
                        // Unlike the regions' arrays, another `[TOOL_CALLS]` may follow.
                        self.mode = Mode::AfterArgs;
                    }
                    BodyStep::RawContent => self.mode = Mode::RawContent,
                    BodyStep::RawArgs => self.mode = Mode::RawArgs,
                }
                Step::On(n)
            }
        }
    }

    fn lane(&self) -> Lane {
        match self.mode {
            Mode::Args => self.args.string_lane(),
            Mode::Array if self.raw.is_empty() => self.array.args_lane(),
            Mode::Text => self.gate.content_lane(self.bot.first_byte()),
            _ => Lane::Off,
        }
    }

    fn resume_lane(&mut self, lane: Lane) {
        match self.mode {
            Mode::Args => self.args.resume_lane(lane),
            Mode::Array => self.array.resume_lane(lane),
            _ => {}
        }
    }

    fn end(&mut self, leftover: &str, out: &mut Emitter<'_>) {
        let end = out.pos(out.chunk_offset());
        match self.mode {
            Mode::Text | Mode::AfterArgs => self.gate.text(leftover, out),
            Mode::AfterBot | Mode::Name | Mode::PreArgs => {
                self.raw.push_str(leftover);
                self.reject(
                    IssueKind::Truncated,
                    end,
                    "output ended inside a tool call's name; kept as content",
                    Mode::Text,
                    out,
                );
            }
            Mode::Args if self.args.end() != Status::Complete => truncated_args(out, leftover, end, None),
            Mode::Args | Mode::RawArgs => {
                out.args(leftover);
                out.end_call();
            }
            Mode::RawContent => self.gate.text(leftover, out),
            Mode::Array => self.array.end(leftover, end, &mut self.raw, &mut self.gate, out),
        }
        self.gate.finish(out);
        self.mode = Mode::Text;
    }
}

/// Writes the v11+ form (`[TOOL_CALLS]NAME[ARGS]{..}` per call).
fn render(calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    if content.contains(BOT) {
        return Err(RenderError(format!(
            "content contains {BOT:?}, which would be read back as a tool call"
        )));
    }
    check_stripped_content(content, !calls.is_empty(), "mistral")?;
    let mut out = String::from(content);
    for (i, call) in calls.iter().enumerate() {
        if call.name.is_empty() || !call.name.bytes().all(is_name_byte) {
            return Err(RenderError(format!(
                "call {i}: tool name {:?} cannot be written in the Mistral format (use letters, digits, '_', '-', '.')",
                call.name
            )));
        }
        out.push_str(BOT);
        out.push_str(&call.name);
        out.push_str(ARGS);
        out.push_str(render_args(i, call)?);
    }
    Ok(out)
}

pub fn mistral() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: |_| MistralStream::new(),
        render,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::parsers::test_support::untyped::{every_split, marker_soup, parser};
    use crate::parsers::{IssueKind, ToolCall};

    #[test]
    fn v11_forms_every_split_point() {
        let text = "Sure — on it.\n\n[TOOL_CALLS]read_file[ARGS]{\"path\": \"[TOOL_CALLS]x[ARGS]\"}\n\
                    [TOOL_CALLS]list_processes[ARGS] {}[TOOL_CALLS]web_search{\"query\": \"é😀\"}\n";
        let r = every_split("mistral", text);
        assert!(r.issues.is_empty(), "{:?}", r.issues);
        assert_eq!(r.content.as_deref(), Some("Sure — on it."));
        let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["read_file", "list_processes", "web_search"]);
        assert_eq!(r.tool_calls[0].arguments, "{\"path\": \"[TOOL_CALLS]x[ARGS]\"}");
        assert_eq!(r.tool_calls[1].arguments, "{}");
    }

    #[test]
    fn pre_v11_array_every_split_point() {
        let text =
            "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"x\": \"]\"}}, {\"arguments\": {}, \"name\": \"b\"}]";
        let r = every_split("mistral", text);
        assert!(r.issues.is_empty(), "{:?}", r.issues);
        assert_eq!(r.content, None);
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments, "{\"x\": \"]\"}");
        assert_eq!(
            (r.tool_calls[1].name.as_str(), r.tool_calls[1].arguments.as_str()),
            ("b", "{}")
        );
    }

    #[test]
    fn prose_mentioning_the_marker_is_content() {
        let text = "To call a tool the model writes [TOOL_CALLS] around the request.";
        let r = every_split("mistral", text);
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content.as_deref(), Some(text));
        assert_eq!(r.issues[0].kind, IssueKind::MalformedMarkup);
    }

    #[test]
    fn bad_input_keeps_text() {
        let r = every_split("mistral", "[TOOL_CALLS]t[ARGS]{\"a\": 1,}[TOOL_CALLS]u[ARGS]{}");
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments, "{\"a\": 1,}");
        assert_eq!(r.issues[0].kind, IssueKind::MalformedJson);
        let r = every_split("mistral", "[TOOL_CALLS]t[ARGS]{\"a\": 1} and that's it");
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.content.as_deref(), Some("and that's it"));
        assert_eq!(r.issues[0].kind, IssueKind::UnexpectedText);
        let r = every_split("mistral", "[TOOL_CALLS]search_files[ARGS]");
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content.as_deref(), Some("[TOOL_CALLS]search_files[ARGS]"));
    }

    #[test]
    fn render_round_trip_and_refusals() {
        let p = parser("mistral");
        let calls = vec![ToolCall {
            id: String::new(),
            name: "read_file".into(),
            arguments: "{\"p\": \"[ARGS]\"}".into(),
        }];
        let r = every_split("mistral", &p.render(&calls, Some("Hi")).unwrap());
        assert_eq!(r.tool_calls[0].arguments, calls[0].arguments);
        assert_eq!(r.content.as_deref(), Some("Hi"));
        let bad = vec![ToolCall {
            name: "two words".into(),
            ..calls[0].clone()
        }];
        assert!(p.render(&bad, None).is_err());
    }

    const FRAGMENTS: &[&str] = &[
        "[TOOL_CALLS]",
        "[ARGS]",
        "read_file",
        "[",
        "]",
        "{",
        "}",
        "\"name\"",
        "\"arguments\"",
        ":",
        ",",
        "\"",
        " ",
        "\n",
        "x",
        "1",
        "é",
    ];

    #[test]
    fn marker_soup_never_panics() {
        marker_soup(&["mistral"], FRAGMENTS);
    }
}
