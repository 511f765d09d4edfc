//! Salesforce xLAM (vLLM `xlam`): a JSON array of `{"name": .., "arguments": {..}}` call
//! objects, a row of the [`json_array`](super::json_array) format. The array may be
//!
//! - the whole output (a bare `[` at its start),
//! - after a reasoning block: `...</think>[...]` (the reasoning stays content),
//! - in a Markdown fence: ```` ```json\n[...]\n``` ```` (or without the language tag),
//! - in `<tool_call>[...]</tool_call>`, or after `[TOOL_CALLS]`.
//!
//! Content is the text around the array, with the whitespace next to the calls dropped. A fenced
//! block that does not hold a call array (code in prose) is ordinary content. Hold-back: see the
//! `json_array` module; a leading `[` is held until its first element decides.

use std::sync::Arc;

use crate::parsers::types::{RenderError, ToolCall};
use crate::parsers::Format;

use crate::parsers::engines::call_render::{check_stripped_content, render_call_array};
use crate::parsers::engines::json_array::{ArrayRegions, ArraySpec, Region};
use crate::parsers::engines::machine::MachineFormat;

pub(crate) const FENCE: &str = "```";

const XLAM: ArraySpec = ArraySpec {
    regions: &[
        Region {
            start: FENCE,
            end: Some(FENCE),
            fence: true,
        },
        Region {
            start: "<tool_call>",
            end: Some("</tool_call>"),
            fence: false,
        },
        Region {
            start: "[TOOL_CALLS]",
            end: None,
            fence: false,
        },
    ],
    bare: true,
    think_end: Some("</think>"),
    args_keys: &["arguments"],
    strip_edges: true,
    drop_tail_ws: true,
    one_region: false,
    lone_space: false,
};

/// The bare array when there is no content, else content and a ```` ```json ```` fenced array.
fn render(calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    for marker in [FENCE, "<tool_call>", "[TOOL_CALLS]", "</think>"] {
        if content.contains(marker) {
            return Err(RenderError(format!(
                "content contains {marker:?}, which xlam would read as the start of a tool-call array"
            )));
        }
    }
    if content.trim_start_matches([' ', '\t', '\n', '\r']).starts_with('[') {
        return Err(RenderError(
            "content starting with '[' would be read back as a tool-call array".into(),
        ));
    }
    check_stripped_content(content, !calls.is_empty(), "xlam")?;
    let mut out = String::from(content);
    if calls.is_empty() {
        return Ok(out);
    }
    if content.is_empty() {
        render_call_array(calls, &mut out)?;
    } else {
        out.push_str("\n\n```json\n");
        render_call_array(calls, &mut out)?;
        out.push_str("\n```");
    }
    Ok(out)
}

pub fn xlam() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: |_| ArrayRegions::new(XLAM),
        render,
    })
}
