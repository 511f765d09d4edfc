//! The machinery formats share: each engine reads one *kind* of markup, and a format file
//! describes its markers and dialect to one of them (see the module doc of `parsers`).
//!
//! - [`json_in_markers`]: a JSON object `{name, arguments}` between a start and an end marker.
//! - [`machine`]: the `Machine` driver (every state machine's stepping loop) and `MachineFormat`.
//! - [`content_gate`]: the whitespace policy for content around call markup.
//! - [`json_args`]: one call's JSON arguments as they stream; [`call_objects`]: calls written as
//!   JSON objects, alone or in an array; [`call_render`]: writing calls back into raw text.
//! - [`json_array`]: a JSON array of call objects inside marked regions.
//! - [`sectioned`]: a section of calls, each with a header and JSON arguments.
//! - [`xml_params`]: parameters as raw text between XML-ish tags; [`xml_content`] the prose
//!   around them; [`schema_values`] turns raw values into JSON by the tool's schema.
//! - [`python_literal`]: Python call syntax, for the pythonic formats.

pub(crate) mod call_objects;
pub(crate) mod call_render;
pub(crate) mod content_gate;
pub(crate) mod json_args;
pub(crate) mod json_array;
pub(crate) mod json_in_markers;
pub(crate) mod machine;
pub(crate) mod python_literal;
pub(crate) mod schema_values;
pub(crate) mod sectioned;
pub(crate) mod xml_content;
pub(crate) mod xml_params;
