//! InternLM2 (vLLM `internlm`): `<|action_start|><|plugin|>\n{"name": .., "parameters": {..}}<|action_end|>`.
//!
//! Parsing is P1's described [`JsonInMarkers`] format with InternLM2's markers and keys
//! (`parameters`, or `arguments`): text before the block is content verbatim, the call object is
//! scanned as JSON (so `<|action_end|>` inside a string argument is text; vLLM's split raises
//! there), and the arguments stream raw as they arrive. vLLM raises on two action blocks; here
//! both are parsed. Hold-back: a marker's length of plain text, and the call object until its
//! name and arguments key are known (see [`JsonInMarkers`]).
//!
//! `render` writes one action block: InternLM2 makes one call per turn, so several calls are
//! refused.

use std::sync::Arc;

use crate::parsers::engines::json_in_markers::JsonInMarkers;
use crate::parsers::tools::Tools;
use crate::parsers::types::{RenderError, ToolCall};
use crate::parsers::{Format, FormatStream};

use crate::parsers::engines::call_render::render_call_objects;

pub(crate) const START: &str = "<|action_start|><|plugin|>";
pub(crate) const END: &str = "<|action_end|>";

const INTERNLM: JsonInMarkers = JsonInMarkers {
    start: START,
    end: END,
    name_key: "name",
    args_keys: &["parameters", "arguments"],
};

struct InternLm;

impl Format for InternLm {
    fn stream(&self, tools: &Arc<Tools>) -> Box<dyn FormatStream> {
        INTERNLM.stream(tools)
    }

    fn render(&self, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
        let content = content.unwrap_or("");
        if content.contains(START) {
            return Err(RenderError(format!(
                "content contains {START:?}, which would be read back as a tool call"
            )));
        }
        if calls.len() > 1 {
            return Err(RenderError(format!(
                "internlm writes one tool call per turn (one action block), got {}; render them as separate turns",
                calls.len()
            )));
        }
        let mut out = String::from(content);
        if let Some(call) = calls.first() {
            out.push_str(START);
            out.push('\n');
            render_call_objects(std::slice::from_ref(call), "", "parameters", &mut out)?;
            out.push_str(END);
        }
        Ok(out)
    }
}

pub fn internlm() -> Arc<dyn Format> {
    Arc::new(InternLm)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::parsers::test_support::untyped::{every_split, marker_soup, parser};
    use crate::parsers::ToolCall;

    #[test]
    fn one_call_every_split_point() {
        let text = "Let me look.\n<|action_start|><|plugin|>\n{\"name\": \"read_file\", \"parameters\": {\"p\": \"<|action_end|>\"}}<|action_end|>";
        let r = every_split("internlm", text);
        assert!(r.issues.is_empty(), "{:?}", r.issues);
        assert_eq!(r.content.as_deref(), Some("Let me look.\n"));
        assert_eq!(r.tool_calls[0].arguments, "{\"p\": \"<|action_end|>\"}");
    }

    #[test]
    fn render_refuses_parallel_calls() {
        let p = parser("internlm");
        let call = ToolCall {
            id: String::new(),
            name: "a".into(),
            arguments: "{\"x\": 1}".into(),
        };
        let r = every_split("internlm", &p.render(std::slice::from_ref(&call), Some("Hi")).unwrap());
        assert_eq!(r.tool_calls[0].arguments, call.arguments);
        let err = p.render(&[call.clone(), call], None).unwrap_err();
        assert!(err.0.contains("one tool call per turn"));
    }

    const FRAGMENTS: &[&str] = &[
        "<|action_start|>",
        "<|plugin|>",
        "<|action_end|>",
        "{",
        "}",
        "\"name\"",
        "\"parameters\"",
        ":",
        "\"x\"",
        ",",
        "\n",
        " ",
    ];

    #[test]
    fn marker_soup_never_panics() {
        marker_soup(&["internlm"], FRAGMENTS);
    }
}
