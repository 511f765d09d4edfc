//! The Hermes family: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, repeated.
//! All three are rows of the described [`JsonInMarkers`] format; see its docs for semantics.

use std::sync::Arc;

use crate::parsers::engines::json_in_markers::JsonInMarkers;
use crate::parsers::Format;

/// NousResearch Hermes 2/3 (vLLM `hermes`).
pub const HERMES: JsonInMarkers = JsonInMarkers {
    start: "<tool_call>",
    end: "</tool_call>",
    name_key: "name",
    args_keys: &["arguments"],
};

/// Meituan LongCat (vLLM `longcat`).
pub const LONGCAT: JsonInMarkers = JsonInMarkers {
    start: "<longcat_tool_call>",
    end: "</longcat_tool_call>",
    name_key: "name",
    args_keys: &["arguments"],
};

pub fn hermes() -> Arc<dyn Format> {
    Arc::new(HERMES)
}

/// Qwen2.5 / Qwen3 emit exactly the Hermes format (vLLM serves them with `hermes`).
pub fn qwen() -> Arc<dyn Format> {
    Arc::new(HERMES)
}

pub fn longcat() -> Arc<dyn Format> {
    Arc::new(LONGCAT)
}
