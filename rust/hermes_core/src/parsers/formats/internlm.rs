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

use crate::parsers::json_in_markers::JsonInMarkers;
use crate::parsers::stream::{Format, FormatStream};
use crate::parsers::tools::Tools;
use crate::parsers::types::{RenderError, ToolCall};

use super::shared::{json_string, render_args};

const START: &str = "<|action_start|><|plugin|>";
const END: &str = "<|action_end|>";

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
            out.push_str("\n{\"name\": ");
            out.push_str(&json_string(&call.name));
            out.push_str(", \"parameters\": ");
            out.push_str(render_args(0, call)?);
            out.push('}');
            out.push_str(END);
        }
        Ok(out)
    }
}

pub fn internlm() -> Arc<dyn Format> {
    Arc::new(InternLm)
}
