//! [`ParserSpec`]: one row of the parser registry. Below the registry, so that `auto`, which
//! picks among the rows, is handed them by the registry instead of importing it.

use std::sync::Arc;

use super::format_info::FormatInfo;
use super::stream::Format;

/// One row of the registry.
pub struct ParserSpec {
    /// vLLM's `--tool-call-parser` name, or an alias (hermes-agent's names), or `auto`.
    pub name: &'static str,
    /// Builds the format (called once per [`get_parser`](super::get_parser)).
    pub make: fn() -> Arc<dyn Format>,
    /// What else is known about the format (markup, detection); aliases share their format's.
    pub info: &'static FormatInfo,
}
