//! Kimi-K2 (vLLM `kimi_k2`): a row of the [`sectioned`](super::sectioned) format.
//!
//! ```text
//! <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{..}<|tool_call_end|>...<|tool_calls_section_end|>
//! ```
//!
//! The header `functions.NAME:IDX` is Kimi's call id and is kept as the call's `id`; the name is
//! the part before the last `:` with the `functions.` prefix removed (both optional). Content is
//! the text outside the section, with whitespace around the markup dropped: it is the template's
//! framing (vLLM 0.33 keeps the whitespace before the section in its whole-text answer, and drops
//! text after the section; here that text is content, reported; see the README's list of
//! differences). Arguments are scanned as JSON, so the markers
//! inside a JSON string are text (vLLM cuts the arguments there and passes them on unvalidated).
//!
//! Hold-back: a marker's length of plain text, whitespace that may turn out to precede markup,
//! and a call's header until `<|tool_call_argument_begin|>`.

use std::sync::Arc;

use crate::parsers::types::{RenderError, ToolCall};
use crate::parsers::Format;

use crate::parsers::engines::call_render::{check_stripped_content, render_args};
use crate::parsers::engines::machine::MachineFormat;
use crate::parsers::engines::sectioned::{Header, SectionSpec, Sectioned};

pub(crate) const SECTION_BEGIN: &str = "<|tool_calls_section_begin|>";
pub(crate) const SECTION_END: &str = "<|tool_calls_section_end|>";
pub(crate) const CALL_BEGIN: &str = "<|tool_call_begin|>";
pub(crate) const ARGS_BEGIN: &str = "<|tool_call_argument_begin|>";
pub(crate) const CALL_END: &str = "<|tool_call_end|>";

const KIMI: SectionSpec = SectionSpec {
    section_begin: SECTION_BEGIN,
    section_end: SECTION_END,
    call_begin: CALL_BEGIN,
    sep: ARGS_BEGIN,
    call_end: CALL_END,
    header: Header::KimiId,
    strip_edges: true,
    drop_tail_ws: true,
};

/// The tool name a Kimi call id stands for (`functions.NAME:IDX` -> `NAME`).
fn name_of_id(id: &str) -> &str {
    let id = id.trim();
    let id = id.strip_prefix("functions.").unwrap_or(id);
    match id.rfind(':') {
        Some(colon) => id.get(..colon).unwrap_or_default().trim(),
        None => id.trim(),
    }
}

fn render(calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    if content.contains(SECTION_BEGIN) {
        return Err(RenderError(format!(
            "content contains {SECTION_BEGIN:?}, which would be read back as tool calls"
        )));
    }
    check_stripped_content(content, !calls.is_empty(), "kimi_k2")?;
    let mut out = String::from(content);
    if calls.is_empty() {
        return Ok(out);
    }
    out.push_str(SECTION_BEGIN);
    for (i, call) in calls.iter().enumerate() {
        let name = call.name.as_str();
        if name.is_empty() || name.trim() != name || name.contains("<|") {
            return Err(RenderError(format!(
                "call {i}: tool name {name:?} cannot be written in a Kimi call id (it must be non-empty, \
                 without surrounding whitespace or '<|')"
            )));
        }
        let args = render_args(i, call)?;
        out.push_str(CALL_BEGIN);
        // Keep the call's own Kimi id when it names the same tool; otherwise make one.
        if !call.id.contains("<|") && call.id.contains(':') && name_of_id(&call.id) == name {
            out.push_str(call.id.trim());
        } else {
            out.push_str("functions.");
            out.push_str(name);
            out.push(':');
            out.push_str(&i.to_string());
        }
        out.push_str(ARGS_BEGIN);
        out.push_str(args);
        out.push_str(CALL_END);
    }
    out.push_str(SECTION_END);
    Ok(out)
}

pub fn kimi_k2() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: |_| Sectioned::new(KIMI),
        render,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::parsers::test_support::untyped::{every_split, marker_soup, parser};
    use crate::parsers::{IssueKind, ToolCall};

    #[test]
    fn ids_are_kept_every_split_point() {
        let text = "我先看一下。\n<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>\
            {\"path\": \"<|tool_call_end|>\"}<|tool_call_end|><|tool_call_begin|> web_search:1 <|tool_call_argument_begin|>\
            {\"query\": \"q\"}<|tool_call_end|><|tool_calls_section_end|>\n";
        let r = every_split("kimi_k2", text);
        assert!(r.issues.is_empty(), "{:?}", r.issues);
        assert_eq!(r.content.as_deref(), Some("我先看一下。"));
        assert_eq!(r.tool_calls[0].id, "functions.read_file:0");
        assert_eq!(r.tool_calls[0].name, "read_file");
        assert_eq!(r.tool_calls[0].arguments, "{\"path\": \"<|tool_call_end|>\"}");
        assert_eq!(r.tool_calls[1].id, "web_search:1");
        assert_eq!(r.tool_calls[1].name, "web_search");
    }

    #[test]
    fn malformed_sections() {
        let r = every_split("kimi_k2", "<|tool_calls_section_begin|><|tool_calls_section_end|>");
        assert!(r.tool_calls.is_empty());
        assert_eq!(
            r.content.as_deref(),
            Some("<|tool_calls_section_begin|><|tool_calls_section_end|>")
        );
        assert_eq!(r.issues[0].kind, IssueKind::MalformedMarkup);
        let text = "<|tool_calls_section_begin|>thinking<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}\
            <|tool_call_end|><|tool_calls_section_end|>";
        let r = every_split("kimi_k2", text);
        assert_eq!(r.tool_calls.len(), 1);
        assert!(r.content.as_deref().unwrap().contains("thinking"));
        // Content after the section: whitespace next to the markup is dropped, as vLLM strips.
        let text = "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}\
            <|tool_call_end|><|tool_calls_section_end|>\n\nThanks. \n";
        assert_eq!(every_split("kimi_k2", text).content.as_deref(), Some("Thanks."));
        assert_eq!(r.issues[0].kind, IssueKind::UnexpectedText);
    }

    #[test]
    fn render_keeps_kimi_ids() {
        let p = parser("kimi_k2");
        let calls = vec![
            ToolCall {
                id: "functions.read_file:7".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            },
            ToolCall {
                id: "call_x".into(),
                name: "terminal".into(),
                arguments: "{\"c\": 1}".into(),
            },
        ];
        let text = p.render(&calls, Some("Hi")).unwrap();
        let r = every_split("kimi_k2", &text);
        assert_eq!(r.tool_calls[0].id, "functions.read_file:7");
        assert_eq!(r.tool_calls[1].id, "functions.terminal:1");
        assert_eq!(r.content.as_deref(), Some("Hi"));
        assert!(
            p.render(&calls, Some("Hi\n")).is_err(),
            "trailing whitespace would be stripped"
        );
    }

    const FRAGMENTS: &[&str] = &[
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_end|>",
        "<|tool_call_argument_begin|>",
        "functions.f:0",
        "{\"a\": 1}",
        "{",
        "\"",
        "\n",
        " ",
        "x",
        "<|",
        "😀",
    ];

    #[test]
    fn marker_soup_never_panics() {
        marker_soup(&["kimi_k2"], FRAGMENTS);
    }
}
