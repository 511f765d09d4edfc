//! AI21 Jamba (vLLM `jamba`): `<tool_calls>[{"name": .., "arguments": {..}}, ...]</tool_calls>`,
//! a row of the [`json_array`](super::json_array) format.
//!
//! Content is the text before `<tool_calls>`, verbatim as vLLM returns it (a lone space there is
//! the template's and gives `None`, as in vLLM); whitespace after the calls is dropped (vLLM drops all text after them; other text is kept here). The array is
//! scanned as JSON, so `</tool_calls>` inside a string argument is text (vLLM's regex loses all
//! calls then). Hold-back: see the `json_array` module.

use std::sync::Arc;

use crate::parsers::types::{RenderError, ToolCall};
use crate::parsers::Format;

use crate::parsers::engines::call_render::render_call_array;
use crate::parsers::engines::json_array::{ArrayRegions, ArraySpec, Region};
use crate::parsers::engines::machine::MachineFormat;

pub(crate) const START: &str = "<tool_calls>";
pub(crate) const END: &str = "</tool_calls>";

const JAMBA: ArraySpec = ArraySpec {
    regions: &[Region {
        start: START,
        end: Some(END),
        fence: false,
    }],
    bare: false,
    think_end: None,
    args_keys: &["arguments"],
    strip_edges: false,
    drop_tail_ws: true,
    one_region: true,
    lone_space: true,
};

fn render(calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    if content.contains(START) {
        return Err(RenderError(format!(
            "content contains {START:?}, which would be read back as tool calls"
        )));
    }
    if content == " " && !calls.is_empty() {
        return Err(RenderError(
            "content of a single space before tool calls reads as the template's framing (no content)".into(),
        ));
    }
    let mut out = String::from(content);
    if !calls.is_empty() {
        out.push_str(START);
        render_call_array(calls, &mut out)?;
        out.push_str(END);
    }
    Ok(out)
}

pub fn jamba() -> Arc<dyn Format> {
    Arc::new(MachineFormat {
        machine: |_| ArrayRegions::new(JAMBA),
        render,
    })
}
