//! IBM Granite 3.x (vLLM `granite`): `<|tool_call|>[{"name": .., "arguments": {..}}, ...]`
//! (Granite 3.0's special token) or the plain text `<tool_call>[...]` (3.1), with no closing
//! marker; a row of the [`json_array`](super::json_array) format.
//!
//! Content is the text around the array with the whitespace next to the calls dropped (vLLM's
//! engine `strip()`s content when calls are found). Text after the array is kept in content
//! with an `unexpected_text` issue. The array is scanned as JSON, in one pass (vLLM's granite
//! extraction time grows super-linearly with the argument length). Hold-back: see the
//! `json_array` module.

use std::sync::Arc;

use crate::parsers::types::{RenderError, ToolCall};
use crate::parsers::Format;

use crate::parsers::engines::call_render::{check_stripped_content, render_call_array};
use crate::parsers::engines::json_array::{ArrayRegions, ArraySpec, Region};
use crate::parsers::engines::machine::MachineFormat;

pub(crate) const TOKEN: &str = "<|tool_call|>";
pub(crate) const TEXT_TAG: &str = "<tool_call>";

const GRANITE: ArraySpec = ArraySpec {
    regions: &[
        Region {
            start: TOKEN,
            end: None,
            fence: false,
        },
        Region {
            start: TEXT_TAG,
            end: None,
            fence: false,
        },
    ],
    bare: false,
    think_end: None,
    args_keys: &["arguments"],
    strip_edges: true,
    drop_tail_ws: true,
    one_region: true,
    lone_space: false,
};

/// Content, then `<|tool_call|>` and the call array (the array ends the output).
fn render(calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    if content.contains(TOKEN) || content.contains(TEXT_TAG) {
        return Err(RenderError(format!(
            "content contains {TOKEN:?} or {TEXT_TAG:?}, which would be read back as tool calls"
        )));
    }
    check_stripped_content(content, !calls.is_empty(), "granite")?;
    let mut out = String::from(content);
    if !calls.is_empty() {
        out.push_str(TOKEN);
        render_call_array(calls, &mut out)?;
    }
    Ok(out)
}

pub fn granite() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: |_| ArrayRegions::new(GRANITE),
        render,
    })
}
