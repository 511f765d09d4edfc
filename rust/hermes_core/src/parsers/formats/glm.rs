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
//!   it was part of the value. So the closing quote (or a typed value) is released with the
//!   markup after `</arg_value>`;
//! - `</arg_value>` `</tool_call>` ends the call there and then: its closing `"}` and
//!   `ToolCallEnd` come with `</tool_call>`, and prose after the call streams as it arrives. (A
//!   value that holds that whole sequence is cut there, as vLLM cuts it; the rest is content,
//!   reported.)
//! - a repeated key: the first value is kept; the repeat (its markup and value) is content, with
//!   a `bad_arguments` issue (a JSON object has one value per key);
//! - plain text is held only while it may be the start of `<tool_call>` or `<arg_key>`, plus
//!   whitespace runs (see [`super::xml_content`]).
//!
//! The parser is a description (`engines/xml_params.rs`): the value streaming, end-marker lookahead,
//! parameter bookkeeping, truncation handling and value rendering are shared with qwen3_coder; this
//! file holds the markers, the name/key markup and `render`'s layout.
//!
//! Where this parser departs from vLLM on purpose:
//! - vLLM drops calls to tools that are not in the request. Here they are kept, with an
//!   `unknown_tool` issue, so nothing is lost and an environment can still count them.
//! - Inside a value only a confirmed `</arg_value>` ends it (see above), so `</tool_call>`, and
//!   `</arg_value>` followed by text, are kept as text, as the text means (vLLM ends the value or
//!   the call there). `render` refuses `</arg_value>` in a value all the same (no escaping in the
//!   format).
//! - Malformed markup never loses text: a `<tool_call>` whose name is missing, broken or cut off is
//!   returned as content with an issue. A key without a value, and stray text between pairs, are
//!   kept as content (vLLM drops them), with an issue giving the offset. A truncated call is kept with
//!   what arrived and a `truncated` issue. Text after the calls is kept as content.

use std::sync::Arc;

use crate::parsers::engines::machine::MachineFormat;
use crate::parsers::engines::xml_params::{
    ahead, args_object, cap, check_content, value_source, Ahead, Core, Dialect, Spec, St, XmlStream, MAX_NAME,
};
use crate::parsers::marker::{MarkerHit, MarkerSet};
use crate::parsers::tools::Tools;
use crate::parsers::types::{IssueKind, Pos, RenderError, ToolCall};
use crate::parsers::{Emitter, Format};

pub(crate) const TOOL_CALL: &str = "<tool_call>";
pub(crate) const TOOL_CALL_END: &str = "</tool_call>";
pub(crate) const KEY: &str = "<arg_key>";
pub(crate) const KEY_END: &str = "</arg_key>";
pub(crate) const VALUE: &str = "<arg_value>";
pub(crate) const VALUE_END: &str = "</arg_value>";

/// The format's description (indices of `args_markers` are matched in `args_marker`).
static SPEC: Spec = Spec {
    format: "glm",
    content_markers: &[TOOL_CALL, KEY],
    args_markers: &[KEY, TOOL_CALL_END, TOOL_CALL],
    value_end: VALUE_END,
    value_breaks: &[],
    framed_newlines: false,
    param_word: "argument",
    call_close: TOOL_CALL_END,
    junk: |name| format!("text in call {name:?} outside any <arg_key>/<arg_value> pair; it is kept as content"),
};

/// `glm45`: renders GLM-4.5's layout (a newline after the name and after each pair).
pub fn glm45() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: stream,
        render: |calls, content| render(calls, content, false),
    })
}

/// `glm47`: renders GLM-4.7's layout (each call on one line). Parsing is the same as `glm45`.
pub fn glm47() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: stream,
        render: |calls, content| render(calls, content, true),
    })
}

fn stream(tools: &Arc<Tools>) -> XmlStream<GlmDialect> {
    let dialect = GlmDialect {
        name_markers: MarkerSet::new(&[KEY, TOOL_CALL_END]),
        key_end: MarkerSet::new(&[KEY_END]),
    };
    XmlStream::new(&SPEC, dialect, tools)
}

/// glm's own states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sub {
    /// After `<tool_call>`: the tool name, up to `<arg_key>` or `</tool_call>`.
    Name,
    /// Inside `<arg_key>...`.
    Key,
    /// After `</arg_key>`: whitespace, then `<arg_value>`.
    AfterKey,
}

type X = Core<Sub>;

struct GlmDialect {
    name_markers: MarkerSet,
    key_end: MarkerSet,
}

impl Dialect for GlmDialect {
    type Sub = Sub;

    fn content(&mut self, x: &mut X, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let (text_end, next) = match x.content_markers.find(rest, eof) {
            MarkerHit::Full { at, end, marker: 1 } => {
                // `<arg_key>` outside a call: kept as text, but it is broken call markup.
                x.prose(out, &rest[..end], i);
                x.malformed(out, i + at, "<arg_key> outside a <tool_call>; kept as content");
                return Some(end);
            }
            MarkerHit::Full { at, end, .. } => (at, Some(end)),
            MarkerHit::Partial { at } => (at, None),
            MarkerHit::None => (rest.len(), None),
        };
        x.prose(out, &rest[..text_end], i);
        match next {
            Some(end) => {
                let at = out.pos(i + text_end);
                x.begin_markup(at, TOOL_CALL);
                x.st = St::Markup(Sub::Name);
                Some(end)
            }
            None => Some(text_end).filter(|&n| n > 0),
        }
    }

    fn args_marker(&mut self, x: &mut X, marker: usize, _text: &str, i: usize, out: &mut Emitter<'_>) {
        x.st = match marker {
            0 => {
                x.name.clear();
                x.raw.clear();
                St::Markup(Sub::Key)
            }
            1 => {
                x.end_call(out);
                St::Content
            }
            _ => {
                x.call_in_call(out, i, TOOL_CALL, "<tool_call> inside a call; the open call ends here");
                St::Markup(Sub::Name)
            }
        };
    }

    fn markup(&mut self, x: &mut X, sub: Sub, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        match sub {
            Sub::Name => self.on_name(x, rest, i, eof, out),
            Sub::Key => self.on_key(x, rest, i, eof, out),
            Sub::AfterKey => on_after_key(x, rest, i, eof, out),
        }
    }

    fn finish(&mut self, sub: Sub, x: &mut X, left: &str, end: Pos, out: &mut Emitter<'_>) -> bool {
        if sub != Sub::Name {
            // A key cut off by the end (`<arg_key>k`, `<arg_key>k</arg_key>`): its markup is
            // content; the call is truncated.
            let key = std::mem::take(&mut x.name);
            let gap = std::mem::take(&mut x.raw);
            let close = if sub == Sub::AfterKey { KEY_END } else { "" };
            x.content.text(out, &format!("{KEY}{key}{close}{gap}{left}"));
            return false;
        }
        let why = "the output ends inside <tool_call> before the tool name is complete; kept as content";
        x.truncated_name(out, left, end, why);
        true
    }
}

impl GlmDialect {
    fn on_name(&mut self, x: &mut X, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let lt = memchr::memchr(b'<', rest.as_bytes());
        let take = lt.unwrap_or(rest.len());
        // A name is one word: whitespace inside it, or a name longer than MAX_NAME, means this
        // is not a call. Decided at a fixed position, whatever the chunking.
        let mut had_word = !x.name.trim().is_empty();
        let mut ws_after_word = had_word && x.name.ends_with(char::is_whitespace);
        let mut bad = None;
        for (k, c) in rest[..take].char_indices() {
            if x.name.len() + k >= MAX_NAME {
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
            x.name.push_str(&rest[..k]);
            let at = x.raw_at;
            x.broken_name(
                out,
                at,
                IssueKind::MalformedMarkup,
                "the text after <tool_call> is not a tool name",
            );
            return Some(k);
        }
        x.name.push_str(&rest[..take]);
        let Some(lt) = lt else {
            return Some(take).filter(|&n| n > 0);
        };
        match self.name_markers.find(&rest[lt..], eof) {
            MarkerHit::Full { at: 0, end, marker } => {
                if x.name.trim().is_empty() {
                    let at = out.pos(i + lt);
                    x.broken_name(out, at, IssueKind::MissingName, "<tool_call> has no tool name");
                    return Some(lt);
                }
                x.start_call(out);
                if marker == 0 {
                    x.st = St::Markup(Sub::Key);
                } else {
                    x.end_call(out);
                    x.st = St::Content;
                }
                Some(lt + end)
            }
            MarkerHit::Partial { at: 0 } => Some(lt).filter(|&n| n > 0),
            _ => {
                let at = out.pos(i + lt);
                x.broken_name(
                    out,
                    at,
                    IssueKind::MalformedMarkup,
                    "the tool name is not followed by <arg_key> or </tool_call>",
                );
                Some(lt)
            }
        }
    }

    fn on_key(&mut self, x: &mut X, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let (take, next) = self.key_end.until(rest, eof);
        if let Some(cut) = cap(rest, x.name.len(), take) {
            x.name.push_str(&rest[..cut]);
            x.broken_param(
                out,
                i + cut,
                "<arg_key> is not closed by </arg_key> within 256 bytes; it is kept as content",
            );
            return Some(cut);
        }
        x.name.push_str(&rest[..take]);
        match next {
            Some((end, _)) => {
                x.st = St::Markup(Sub::AfterKey);
                Some(end)
            }
            None => Some(take).filter(|&n| n > 0),
        }
    }
}

fn on_after_key(x: &mut X, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
    match ahead(rest, eof, &[VALUE]) {
        Ahead::Space(ws) => {
            // Kept for a repeated key, whose markup is content (`raw` is free inside a call).
            x.raw.push_str(&rest[..ws]);
            return Some(ws);
        }
        Ahead::Literal(_) => {
            let key = x.name.trim().to_owned();
            let markup = format!("{KEY}{}{KEY_END}{}{VALUE}", x.name, x.raw);
            x.name.clear();
            x.raw.clear();
            x.open_param(out, key, &markup, i);
            return Some(VALUE.len());
        }
        Ahead::More => return None,
        Ahead::Other => {}
    }
    x.malformed(
        out,
        i,
        format!(
            "<arg_key>{}</arg_key> is not followed by <arg_value>; the key is kept as content",
            x.name.trim()
        ),
    );
    // Not a parameter: the key's markup goes back to content (nothing is lost; vLLM drops it).
    let key = std::mem::take(&mut x.name);
    let gap = std::mem::take(&mut x.raw);
    x.content.text(out, &format!("{KEY}{key}{KEY_END}{gap}"));
    x.st = St::Args;
    Some(0)
}

fn render(calls: &[ToolCall], content: Option<&str>, compact: bool) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    check_content(
        &SPEC,
        content,
        !calls.is_empty(),
        &[TOOL_CALL, KEY],
        "(broken) tool-call markup",
    )?;
    let nl = if compact { "" } else { "\n" };
    let mut s = String::from(content);
    for (n, call) in calls.iter().enumerate() {
        let name = call.name.as_str();
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains('<') {
            return Err(RenderError(format!(
                "glm cannot render tool name {name:?} (call {n}): it must be non-empty, without whitespace or '<'"
            )));
        }
        let map = args_object(n, call, "<arg_key>/<arg_value> pairs")?;
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
            let text = value_source(&SPEC, n, name, key, value)?;
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
    use super::*;
    use crate::parsers::test_support::{args, every_prefix, every_split, kinds, marker_soup, parser};
    use crate::parsers::Event;
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
        // `</arg_value>` followed by other text is value text; followed by markup it ends the
        // value, and `</tool_call>` after it ends the call there and then (a streaming client
        // gets the call's end with its closing markup, not when the output ends).
        let text = "<tool_call>terminal<arg_key>command</arg_key><arg_value>echo '</tool_call>' '</arg_value>' \
                    x</arg_value>\n</tool_call> mean</arg_value></tool_call>";
        let r = every_split("glm47", text);
        assert_eq!(args(&r, 0), json!({"command": "echo '</tool_call>' '</arg_value>' x"}));
        assert_eq!(r.content.as_deref(), Some(" mean</arg_value></tool_call>"));
        assert_eq!(kinds(&r), ["unexpected_text"]);
        let close = text.find("\n</tool_call>").unwrap() + "\n</tool_call>".len();
        let mut s = parser("glm47").stream();
        let events = s.feed(&text[..close]);
        assert_eq!(events.last(), Some(&Event::ToolCallEnd { index: 0 }));
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
        every_prefix("glm45", GLM45, |end| end / 3, |_, _| {});
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

    #[test]
    fn fragments_never_panic_and_split_invariant() {
        marker_soup("glm45", FRAGMENTS);
    }
}
