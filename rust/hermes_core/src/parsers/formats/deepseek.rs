//! DeepSeek-V3 (vLLM `deepseek_v3`) and DeepSeek-V3.1 (vLLM `deepseek_v31`): rows of the
//! [`sectioned`](super::sectioned) format.
//!
//! ```text
//! V3:   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{..}\n```<｜tool▁call▁end｜>\n...<｜tool▁calls▁end｜>
//! V3.1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{..}<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
//! ```
//!
//! Content, as vLLM returns it: V3 keeps the text before the section and any text after it
//! verbatim; V3.1 keeps the text before verbatim and drops whitespace after the calls (other
//! text after them is kept, vLLM drops it). Arguments are scanned as JSON, so the markers inside
//! a JSON string are text (vLLM's regex cuts V3.1 arguments there). The V3 fence may be
//! missing (`NAME\n{..}`); the call then still parses.
//!
//! Hold-back: a marker's length of plain text, and a call's header (type and name) until the
//! arguments begin. vLLM reports `tools_called: true` with no calls when the section marker
//! appears without a complete call; here that text stays content with a `truncated` /
//! `malformed_markup` issue.

use std::sync::Arc;

use crate::parsers::types::{RenderError, ToolCall};
use crate::parsers::Format;

use crate::parsers::engines::call_render::render_args;
use crate::parsers::engines::machine::MachineFormat;
use crate::parsers::engines::sectioned::{Header, SectionSpec, Sectioned};

pub(crate) const CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
pub(crate) const CALLS_END: &str = "<｜tool▁calls▁end｜>";
pub(crate) const CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
pub(crate) const CALL_END: &str = "<｜tool▁call▁end｜>";
pub(crate) const SEP: &str = "<｜tool▁sep｜>";

const V3: SectionSpec = SectionSpec {
    section_begin: CALLS_BEGIN,
    section_end: CALLS_END,
    call_begin: CALL_BEGIN,
    sep: SEP,
    call_end: CALL_END,
    header: Header::TypeThenNameLine,
    strip_edges: false,
    drop_tail_ws: false,
};

const V31: SectionSpec = SectionSpec {
    header: Header::Name,
    drop_tail_ws: true,
    ..V3
};

fn render(spec: SectionSpec, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    if content.contains(CALLS_BEGIN) {
        return Err(RenderError(format!(
            "content contains {CALLS_BEGIN:?}, which would be read back as tool calls"
        )));
    }
    let mut out = String::from(content);
    if calls.is_empty() {
        return Ok(out);
    }
    out.push_str(CALLS_BEGIN);
    for (i, call) in calls.iter().enumerate() {
        let name = call.name.as_str();
        let v3 = spec.header == Header::TypeThenNameLine;
        let bad_char = if v3 {
            name.contains(['\n', '`', '{', '<'])
        } else {
            name.contains('<')
        };
        if name.trim().is_empty() || name.trim() != name || bad_char {
            return Err(RenderError(format!(
                "call {i}: tool name {name:?} cannot be written in this format (it must be non-empty, \
                 without surrounding whitespace{})",
                if v3 { ", newlines, '`', '{' or '<'" } else { " or '<'" }
            )));
        }
        let args = render_args(i, call)?;
        if i > 0 && v3 {
            out.push('\n');
        }
        out.push_str(CALL_BEGIN);
        if v3 {
            out.push_str("function");
            out.push_str(SEP);
            out.push_str(name);
            out.push_str("\n```json\n");
            out.push_str(args);
            out.push_str("\n```");
        } else {
            out.push_str(name);
            out.push_str(SEP);
            out.push_str(args);
        }
        out.push_str(CALL_END);
    }
    out.push_str(CALLS_END);
    Ok(out)
}

pub fn deepseek_v3() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: |_| Sectioned::new(V3),
        render: |calls, content| render(V3, calls, content),
    })
}

pub fn deepseek_v31() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: |_| Sectioned::new(V31),
        render: |calls, content| render(V31, calls, content),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::parsers::test_support::untyped::{every_split, marker_soup};
    use crate::parsers::IssueKind;

    const V3_TEXT: &str = "Let me check é😀.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n\
        {\"path\": \"a<｜tool▁call▁end｜>b```\", \"n\": [1, -2.5e3]}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function\
        <｜tool▁sep｜>list_processes\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>\nDone.";

    #[test]
    fn v3_every_split_point() {
        let r = every_split("deepseek_v3", V3_TEXT);
        assert!(r.issues.is_empty(), "{:?}", r.issues);
        assert_eq!(r.content.as_deref(), Some("Let me check é😀.\nDone."));
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].name, "read_file");
        // The end marker inside the JSON string is string text.
        assert_eq!(
            r.tool_calls[0].arguments,
            "{\"path\": \"a<｜tool▁call▁end｜>b```\", \"n\": [1, -2.5e3]}"
        );
        assert_eq!(r.tool_calls[1].arguments, "{}");
    }

    #[test]
    fn v31_every_split_point() {
        let text = "Hi\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>terminal<｜tool▁sep｜>{\"command\": \"echo '<｜tool▁calls▁end｜>'\"}\
            <｜tool▁call▁end｜><｜tool▁call▁begin｜>web_search<｜tool▁sep｜>{\"query\": \"x\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>\n";
        let r = every_split("deepseek_v31", text);
        assert!(r.issues.is_empty(), "{:?}", r.issues);
        assert_eq!(r.content.as_deref(), Some("Hi\n"));
        let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["terminal", "web_search"]);
        assert_eq!(
            r.tool_calls[0].arguments,
            "{\"command\": \"echo '<｜tool▁calls▁end｜>'\"}"
        );
    }

    #[test]
    fn broken_calls_keep_their_text() {
        // No separator: the call is content, with an issue at the stray end marker.
        let text =
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>web_search{\"q\": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        let r = every_split("deepseek_v31", text);
        assert!(r.tool_calls.is_empty());
        assert!(r.content.as_deref().unwrap().contains("web_search{\"q\": 1}"));
        assert_eq!(r.issues[0].kind, IssueKind::MalformedMarkup);
        // Broken JSON inside started arguments: raw arguments up to the end marker.
        let text = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>t<｜tool▁sep｜>{\"a\": 1,}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        let r = every_split("deepseek_v31", text);
        assert_eq!(r.tool_calls[0].arguments, "{\"a\": 1,}");
        assert_eq!(r.issues[0].kind, IssueKind::MalformedJson);
        assert_eq!(&text[r.issues[0].offset..r.issues[0].offset + 1], "}");
        // Cut inside the header: content, truncated.
        let r = every_split(
            "deepseek_v3",
            "x<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_fi",
        );
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.issues.last().unwrap().kind, IssueKind::Truncated);
        // Cut inside the arguments: the call stays with what arrived.
        let r = every_split(
            "deepseek_v31",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>t<｜tool▁sep｜>{\"a\": \"b",
        );
        assert_eq!(r.tool_calls[0].arguments, "{\"a\": \"b");
        assert_eq!(r.issues.last().unwrap().kind, IssueKind::Truncated);
    }

    #[test]
    fn render_round_trip_and_refusals() {
        use crate::parsers::ToolCall;
        let calls = vec![ToolCall {
            id: String::new(),
            name: "read_file".into(),
            arguments: "{\"path\": \"```\"}".into(),
        }];
        for name in ["deepseek_v3", "deepseek_v31"] {
            let p = crate::parsers::test_support::untyped::parser(name);
            let text = p.render(&calls, Some("Hi ")).unwrap();
            let r = every_split(name, &text);
            assert_eq!(r.content.as_deref(), Some("Hi "));
            assert_eq!(r.tool_calls[0].arguments, calls[0].arguments);
            let bad = vec![ToolCall {
                name: "a\nb".into(),
                ..calls[0].clone()
            }];
            assert!(p.render(&bad, None).is_err() || name == "deepseek_v31");
            assert!(p.render(&calls, Some("<｜tool▁calls▁begin｜>")).is_err());
        }
    }

    const FRAGMENTS: &[&str] = &[
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁calls▁end｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁call▁end｜>",
        "<｜tool▁sep｜>",
        "function",
        "read_file",
        "\n",
        "```json\n",
        "```",
        "{",
        "}",
        "\"a\"",
        ":",
        "1",
        "\"<｜tool▁call▁end｜>\"",
        " ",
        "x",
        "é",
        "<｜",
    ];

    #[test]
    fn marker_soup_never_panics() {
        marker_soup(&["deepseek_v3", "deepseek_v31"], FRAGMENTS);
    }
}
