//! The machinery formats share: each engine reads one *kind* of markup, and a format file
//! describes its markers and dialect to one of them (see the module doc of `parsers`).
//!
//! - [`json_in_markers`]: a JSON object `{name, arguments}` between a start and an end marker.
//! - [`shared`]: the `Machine` driver (every state machine's stepping loop), `MachineFormat`, and
//!   the JSON call-object helpers the JSON formats use.
//! - [`json_array`]: a JSON array of call objects inside marked regions.
//! - [`sectioned`]: a section of calls, each with a header and JSON arguments.
//! - [`xml_params`]: parameters as raw text between XML-ish tags; [`xml_content`] the prose
//!   around them; [`schema_values`] turns raw values into JSON by the tool's schema.
//! - [`python_literal`]: Python call syntax, for the pythonic formats.

pub(crate) mod json_array;
pub(crate) mod json_in_markers;
pub(crate) mod python_literal;
pub(crate) mod schema_values;
pub(crate) mod sectioned;
pub(crate) mod shared;
pub(crate) mod xml_content;
pub(crate) mod xml_params;
