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
//! streams as JSON-string fragments while it arrives; only a possible `</parameter>` (or
//! line-starting `<parameter=KEY>`, `</function>`) prefix and one trailing newline (framing if
//! `</parameter>` follows) are held back. A value of any other type is held until it is
//! complete, because its conversion needs the whole text.
//! - `</parameter>` ends a value only when markup follows it (after whitespace); other text means
//!   it was part of the value (`echo '</parameter>'`). So the closing quote (or a typed value)
//!   is released with the markup after `</parameter>`;
//! - `</parameter>` `</function>` ends the call there and then: its closing `"}` and
//!   `ToolCallEnd` come with `</function>`, and prose after the call streams as it arrives. (A
//!   value that holds that whole sequence, as a file of Qwen3-Coder transcripts would, is cut
//!   there, as vLLM cuts it; the rest is content, reported.)
//! - a missing `</parameter>`: a line of a value that starts with `<parameter=KEY>` or
//!   `</function>` is read as that markup; the value ends at the line before and a
//!   `malformed_markup` issue says so (vLLM and SGLang end the value there too);
//! - a repeated parameter: the first value is kept; the repeat (its markup and value) is
//!   content, with a `bad_arguments` issue (a JSON object has one value per key);
//! - plain text is held only while it may be the start of `<tool_call>` or `<function=`, plus
//!   whitespace runs (see [`super::xml_content`]).
//!
//! The parser is a description (`engines/xml_params.rs`): the value streaming, end-marker lookahead,
//! parameter bookkeeping, truncation handling and value rendering are shared with glm45/glm47;
//! this file holds the markers, the name/key markup and `render`'s layout.
//!
//! Where this parser departs from vLLM on purpose:
//! - Inside a value only a confirmed `</parameter>` (or a line-starting break, above) ends it, so
//!   `</tool_call>`, `</function>` and `<parameter=` inside a line, and `</parameter>` followed
//!   by text, are kept as text, as the text means (vLLM cuts the value or the call there).
//!   `render` refuses `</parameter>` in a value, and a value line starting with `<parameter=` or
//!   `</function>`: the format has no escaping and those placements are ambiguous.
//! - Calls to tools not in the request are kept, with an `unknown_tool` issue.
//! - Malformed markup never loses text: a `<tool_call>` that is not followed by `<function=NAME>`,
//!   an unclosed or empty name, and a truncated name are returned as content with an issue.
//!   Non-whitespace text between the parameters of a call (also a `<parameter>` without a name,
//!   and its value) is kept as content (vLLM drops it), with an issue giving its offset. A
//!   truncated call is kept with what arrived and a `truncated` issue.
//! - Text after the calls is kept as content (vLLM drops it).

use std::sync::Arc;

use crate::parsers::engines::machine::MachineFormat;
use crate::parsers::engines::xml_params::{
    ahead, args_object, cap, check_content, value_source, Ahead, Core, Dialect, Spec, St, XmlStream,
};
use crate::parsers::marker::MarkerHit;
use crate::parsers::types::{IssueKind, Pos, RenderError, ToolCall};
use crate::parsers::{Emitter, Format};

pub(crate) const TOOL_CALL: &str = "<tool_call>";
pub(crate) const TOOL_CALL_END: &str = "</tool_call>";
pub(crate) const FUNCTION: &str = "<function=";
pub(crate) const FUNCTION_END: &str = "</function>";
pub(crate) const PARAMETER: &str = "<parameter=";
pub(crate) const PARAMETER_END: &str = "</parameter>";

/// The format's description (indices of `args_markers` are matched in `args_marker`).
static SPEC: Spec = Spec {
    format: "qwen3_coder",
    content_markers: &[TOOL_CALL, FUNCTION],
    args_markers: &[PARAMETER, FUNCTION_END, TOOL_CALL_END, FUNCTION, TOOL_CALL],
    value_end: PARAMETER_END,
    value_breaks: &[PARAMETER, FUNCTION_END],
    framed_newlines: true,
    param_word: "parameter",
    call_close: FUNCTION_END,
    junk: |name| {
        format!("text between the parameters of call {name:?} is not part of any parameter; it is kept as content")
    },
};

/// The `qwen3_coder` format.
pub fn qwen3_coder() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: |tools| XmlStream::new(&SPEC, Qwen3 { via_tool_call: false }, tools),
        render,
    })
}

/// qwen3_coder's own states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sub {
    /// After `<tool_call>`: whitespace, then `<function=`.
    Preamble,
    /// Inside `<function=...`, up to `>`.
    Name,
    /// Inside `<parameter=...`, up to `>`.
    ParamName,
    /// After `</function>`: whitespace, then `</tool_call>`.
    AfterFunction,
}

type X = Core<Sub>;

struct Qwen3 {
    /// The open call was opened by `<tool_call>` (so `</tool_call>` is expected after it).
    via_tool_call: bool,
}

impl Dialect for Qwen3 {
    type Sub = Sub;

    fn content(&mut self, x: &mut X, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        match x.content_markers.find(rest, eof) {
            MarkerHit::Full { at, end, marker } => {
                x.prose(out, &rest[..at], i);
                let raw_at = out.pos(i + at);
                x.begin_markup(raw_at, &rest[at..end]);
                if marker == 0 {
                    x.st = St::Markup(Sub::Preamble);
                    self.via_tool_call = true;
                } else {
                    x.st = St::Markup(Sub::Name);
                    self.via_tool_call = false;
                    out.issue(
                        IssueKind::MalformedMarkup,
                        raw_at,
                        "<function=...> without <tool_call>; read as a call",
                    );
                }
                Some(end)
            }
            MarkerHit::Partial { at } => {
                x.prose(out, &rest[..at], i);
                Some(at).filter(|&n| n > 0)
            }
            MarkerHit::None => {
                x.prose(out, rest, i);
                Some(rest.len()).filter(|&n| n > 0)
            }
        }
    }

    fn args_marker(&mut self, x: &mut X, marker: usize, text: &str, i: usize, out: &mut Emitter<'_>) {
        x.st = match marker {
            0 => {
                x.name.clear();
                St::Markup(Sub::ParamName)
            }
            1 => {
                x.end_call(out);
                St::Markup(Sub::AfterFunction)
            }
            2 => {
                x.cut_call(out, i, "</tool_call> before </function>; the call ends here");
                St::Content
            }
            _ => {
                x.call_in_call(
                    out,
                    i,
                    text,
                    "a new call starts before </function>; the open call ends here",
                );
                self.via_tool_call = marker != 3;
                St::Markup(if marker == 3 { Sub::Name } else { Sub::Preamble })
            }
        };
    }

    fn markup(&mut self, x: &mut X, sub: Sub, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        match sub {
            Sub::Preamble => on_preamble(x, rest, i, eof, out),
            Sub::Name => on_name(x, rest, i, out),
            Sub::ParamName => on_param_name(x, rest, i, out),
            Sub::AfterFunction => self.on_after_function(x, rest, i, eof, out),
        }
    }

    fn finish(&mut self, sub: Sub, x: &mut X, left: &str, end: Pos, out: &mut Emitter<'_>) -> bool {
        match sub {
            Sub::Preamble | Sub::Name => {
                let why = "the output ends inside a <tool_call> before the function name is complete; kept as content";
                x.truncated_name(out, left, end, why);
                true
            }
            Sub::ParamName => {
                // A parameter name cut off by the end: its markup is content, the call is truncated.
                let key = std::mem::take(&mut x.name);
                x.content.text(out, &format!("{PARAMETER}{key}{left}"));
                false
            }
            Sub::AfterFunction => {
                if self.via_tool_call {
                    out.issue(IssueKind::Truncated, end, "the output ends before </tool_call>");
                }
                true
            }
        }
    }
}

impl Qwen3 {
    fn on_after_function(
        &mut self,
        x: &mut X,
        rest: &str,
        i: usize,
        eof: bool,
        out: &mut Emitter<'_>,
    ) -> Option<usize> {
        match ahead(rest, eof, &[TOOL_CALL_END]) {
            Ahead::Space(ws) => return Some(ws),
            Ahead::More => return None,
            Ahead::Literal(_) => {
                x.st = St::Content;
                return Some(TOOL_CALL_END.len());
            }
            Ahead::Other => {}
        }
        if self.via_tool_call {
            x.malformed(out, i, "</function> is not followed by </tool_call>");
        }
        x.st = St::Content;
        Some(0)
    }
}

fn on_preamble(x: &mut X, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
    match ahead(rest, eof, &[FUNCTION, TOOL_CALL_END]) {
        Ahead::Space(ws) => {
            x.raw.push_str(&rest[..ws]);
            return Some(ws);
        }
        Ahead::More => return None,
        Ahead::Literal(0) => {
            x.raw.push_str(FUNCTION);
            x.name.clear();
            x.st = St::Markup(Sub::Name);
            return Some(FUNCTION.len());
        }
        Ahead::Literal(_) => {
            x.raw.push_str(TOOL_CALL_END);
            let raw = std::mem::take(&mut x.raw);
            x.content.text(out, &raw);
            out.issue(
                IssueKind::MalformedMarkup,
                x.raw_at,
                "empty <tool_call></tool_call> block (no <function=NAME>); kept as content",
            );
            x.st = St::Content;
            return Some(TOOL_CALL_END.len());
        }
        Ahead::Other => {}
    }
    let raw = std::mem::take(&mut x.raw);
    x.content.text(out, &raw);
    x.malformed(
        out,
        i,
        "<tool_call> is not followed by <function=NAME>; the text is kept as content",
    );
    x.st = St::Content;
    Some(0)
}

/// How reading a `<function=NAME` / `<parameter=KEY` name up to its `>` went.
enum NameStep {
    /// No stop byte yet: the step's result (the text was added to the name).
    More(Option<usize>),
    /// The name passes [`MAX_NAME`](xml_params::MAX_NAME) at this offset (nothing was added).
    TooLong(usize),
    /// A stop byte at this offset: `>` (true) or `<` / newline (false).
    Stop(usize, bool),
}

fn read_name(x: &mut X, rest: &str) -> NameStep {
    let stop = memchr::memchr3(b'>', b'<', b'\n', rest.as_bytes());
    let take = stop.unwrap_or(rest.len());
    if let Some(cut) = cap(rest, x.name.len(), take) {
        return NameStep::TooLong(cut);
    }
    x.name.push_str(&rest[..take]);
    match stop {
        None => NameStep::More(Some(take).filter(|&n| n > 0)),
        Some(s) => NameStep::Stop(s, rest.as_bytes().get(s) == Some(&b'>')),
    }
}

fn on_name(x: &mut X, rest: &str, i: usize, out: &mut Emitter<'_>) -> Option<usize> {
    let (at, why) = match read_name(x, rest) {
        NameStep::More(step) => return step,
        NameStep::Stop(s, true) => {
            if x.name.trim().is_empty() {
                x.name.push('>');
                let at = out.pos(i + s);
                x.broken_name(out, at, IssueKind::MalformedMarkup, "<function=> has an empty name");
                return Some(s + 1);
            }
            x.start_call(out);
            x.st = St::Args;
            return Some(s + 1);
        }
        NameStep::TooLong(cut) => {
            x.name.push_str(&rest[..cut]);
            (cut, "the function name runs on without a closing '>'")
        }
        NameStep::Stop(s, false) => (s, "the function name is not closed by '>'"),
    };
    let pos = out.pos(i + at);
    x.broken_name(out, pos, IssueKind::MalformedMarkup, why);
    Some(at)
}

fn on_param_name(x: &mut X, rest: &str, i: usize, out: &mut Emitter<'_>) -> Option<usize> {
    let (at, why) = match read_name(x, rest) {
        NameStep::More(step) => return step,
        NameStep::Stop(s, true) => {
            let key = x.name.trim().to_owned();
            if key.is_empty() {
                x.name.push('>');
                x.broken_param(out, i + s, "<parameter=> has an empty name; it is kept as content");
            } else {
                let markup = format!("{PARAMETER}{}>", x.name);
                x.name.clear();
                x.open_param(out, key, &markup, i + s);
            }
            return Some(s + 1);
        }
        NameStep::TooLong(cut) => {
            x.name.push_str(&rest[..cut]);
            (
                cut,
                "a parameter name runs on without a closing '>'; it is kept as content",
            )
        }
        NameStep::Stop(s, false) => (s, "a parameter name is not closed by '>'; it is kept as content"),
    };
    x.broken_param(out, i + at, why);
    Some(at)
}

/// Raw qwen3_coder text for `content` followed by `calls`.
fn render(calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    check_content(&SPEC, content, !calls.is_empty(), &[TOOL_CALL, FUNCTION], "a tool call")?;
    let mut s = String::from(content);
    for (n, call) in calls.iter().enumerate() {
        let name = call.name.as_str();
        if name.trim() != name || name.is_empty() || name.contains(['>', '<', '\n']) {
            return Err(RenderError(format!(
                "qwen3_coder cannot render tool name {name:?} (call {n}): it must be non-empty, without '<', '>', newlines or surrounding whitespace"
            )));
        }
        let map = args_object(n, call, "<parameter=...> tags")?;
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
            let text = value_source(&SPEC, n, name, key, value)?;
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
    use super::*;
    use crate::parsers::test_support::{args, every_prefix, every_split, kinds, marker_soup, parser};
    use crate::parsers::{get_parser, Event, Tools};
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

    /// Feed `pieces` one by one; the events of each feed.
    fn feeds(p: &crate::parsers::Parser, pieces: &[&str]) -> Vec<Vec<Event>> {
        let mut s = p.stream();
        pieces.iter().map(|piece| s.feed(piece)).collect()
    }

    #[test]
    fn a_call_ends_at_its_closing_markup_and_prose_after_it_streams() {
        // Typed (object, integer) values are released with the markup that ends them, and the
        // call's `"}` and ToolCallEnd with `</function>`, not when the output ends.
        let p = parser("qwen3_coder");
        let events = feeds(
            &p,
            &[
                "<tool_call>\n<function=terminal>\n<parameter=env>\n{\"A\": [1, 2]}\n</parameter>\n",
                "<parameter=timeout>\n30\n</parameter>\n</function>",
                "\n</tool_call>\nDone, the build is green",
            ],
        );
        let args: String = events[..2]
            .concat()
            .iter()
            .filter_map(|e| match e {
                Event::ToolCallArgsDelta { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(args, "{\"env\": {\"A\":[1,2]}, \"timeout\": 30}");
        assert_eq!(events[1].last(), Some(&Event::ToolCallEnd { index: 0 }));
        assert_eq!(events[2], [Event::Content("\nDone, the build is green".into())]);
    }

    #[test]
    fn missing_end_marker_before_the_next_parameter() {
        // vLLM and SGLang read the next `<parameter=` as the end of the value; so does this parser
        // when it starts a line, and says so.
        let text = "<tool_call>\n<function=terminal>\n<parameter=city>\nDallas\n<parameter=state>\nTX\n\
                    </parameter>\n<parameter=unit>\nF\n</function>\n</tool_call>";
        let r = every_split("qwen3_coder", text);
        assert_eq!(args(&r, 0), json!({"city": "Dallas", "state": "TX", "unit": "F"}));
        assert_eq!(kinds(&r), ["malformed_markup", "malformed_markup"]);
        assert!(r.issues[0].message.contains("\"city\""), "{}", r.issues[0].message);
        assert!(r.content.is_none());
        // Not at the start of a line, or without a name closed by '>', it is value text.
        let r = every_split(
            "qwen3_coder",
            "<tool_call>\n<function=terminal>\n<parameter=q>\nwhat does <parameter=x> mean\n<parameter=\n</parameter>\n</function>\n</tool_call>",
        );
        assert_eq!(args(&r, 0), json!({"q": "what does <parameter=x> mean\n<parameter="}));
        assert!(r.issues.is_empty(), "{:?}", r.issues);
    }

    #[test]
    fn a_repeated_parameter_is_content_and_the_first_value_stays() {
        // Found by hypothesis: the second `path` used to overwrite the first in the arguments
        // object (`{"path": "\u001b", "path": ""}` loses "\u001b" for any JSON reader).
        let r = every_split(
            "qwen3_coder",
            "<function=terminal><parameter=path>\x1b\n</parameter><parameter=path>\n",
        );
        assert_eq!(r.tool_calls[0].arguments, "{\"path\": \"\\u001b\"}");
        assert_eq!(r.content.as_deref(), Some("<parameter=path>"));
        assert_eq!(kinds(&r), ["malformed_markup", "bad_arguments", "truncated"]);
        let r = every_split(
            "qwen3_coder",
            "<tool_call>\n<function=terminal>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n</function>\n</tool_call>",
        );
        assert_eq!(args(&r, 0), json!({"a": "1"}));
        assert_eq!(r.content.as_deref(), Some("<parameter=a>\n2\n</parameter>"));
        assert_eq!(kinds(&r), ["bad_arguments"]);
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
        every_prefix(
            "qwen3_coder",
            TWO_CALLS,
            |end| end / 2,
            |_, r| {
                for c in &r.tool_calls {
                    assert!(serde_json::from_str::<serde_json::Value>(&c.arguments)
                        .unwrap()
                        .is_object());
                }
            },
        );
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

    #[test]
    fn fragments_never_panic_and_split_invariant() {
        marker_soup("qwen3_coder", FRAGMENTS);
    }
}
