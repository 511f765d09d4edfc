//! [`ParserOptions`]: what a caller may choose about a parser beyond its format. Below the
//! registry and the formats, which both read it.

/// What a caller may choose about a parser beyond its format; the defaults are hermes_env's
/// documented behaviour, each option gives vLLM's where they differ on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParserOptions {
    /// `pythonic`, `llama4_pythonic` (and `auto` reading them): with the request's tools given,
    /// a list of their calls after prose is extracted (false: only a list that starts the
    /// output, as vLLM does).
    pub calls_after_prose: bool,
}

impl Default for ParserOptions {
    fn default() -> Self {
        ParserOptions {
            calls_after_prose: true,
        }
    }
}
