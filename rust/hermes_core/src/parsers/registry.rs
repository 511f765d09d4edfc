//! The table of parsers by vLLM `--tool-call-parser` name, and [`Parser`], the user-facing handle.

use std::sync::Arc;

use super::formats;
use super::stream::{Format, Stream};
use super::tools::Tools;
use super::types::{Event, ParseResult, RenderError, ToolCall};

/// One row of the registry.
pub struct ParserSpec {
    /// vLLM's `--tool-call-parser` name, or an alias (hermes-agent's names), or `auto`.
    pub name: &'static str,
    /// Builds the format (called once per [`get_parser`]).
    pub make: fn() -> Arc<dyn Format>,
}

/// Every parser. Format authors add ONE row here (keep it sorted by name for readability;
/// `list_parsers` sorts anyway). Aliases are rows pointing to the same constructor: vLLM's
/// (`llama4_json`, `qwen3_xml`) and hermes-agent's (`deepseek_v3_1`, from its
/// `environments/tool_call_parsers` registry, whose other names are vLLM's).
pub static REGISTRY: &[ParserSpec] = &[
    ParserSpec {
        name: "auto",
        make: formats::auto::auto,
    },
    ParserSpec {
        name: "deepseek_v3",
        make: formats::deepseek::deepseek_v3,
    },
    ParserSpec {
        name: "deepseek_v31",
        make: formats::deepseek::deepseek_v31,
    },
    ParserSpec {
        name: "deepseek_v3_1",
        make: formats::deepseek::deepseek_v31,
    },
    ParserSpec {
        name: "glm45",
        make: formats::glm::glm45,
    },
    ParserSpec {
        name: "glm47",
        make: formats::glm::glm47,
    },
    ParserSpec {
        name: "granite",
        make: formats::granite::granite,
    },
    ParserSpec {
        name: "hermes",
        make: formats::hermes::hermes,
    },
    ParserSpec {
        name: "internlm",
        make: formats::internlm::internlm,
    },
    ParserSpec {
        name: "jamba",
        make: formats::jamba::jamba,
    },
    ParserSpec {
        name: "kimi_k2",
        make: formats::kimi::kimi_k2,
    },
    ParserSpec {
        name: "llama3_json",
        make: formats::llama_json::llama3_json,
    },
    ParserSpec {
        name: "llama4_json",
        make: formats::llama_json::llama3_json,
    },
    ParserSpec {
        name: "llama4_pythonic",
        make: formats::pythonic::llama4_pythonic,
    },
    ParserSpec {
        name: "longcat",
        make: formats::hermes::longcat,
    },
    ParserSpec {
        name: "mistral",
        make: formats::mistral::mistral,
    },
    ParserSpec {
        name: "pythonic",
        make: formats::pythonic::pythonic,
    },
    ParserSpec {
        name: "qwen",
        make: formats::hermes::qwen,
    },
    ParserSpec {
        name: "qwen3_coder",
        make: formats::qwen3_coder::qwen3_coder,
    },
    ParserSpec {
        name: "qwen3_xml",
        make: formats::qwen3_coder::qwen3_coder,
    },
    ParserSpec {
        name: "xlam",
        make: formats::xlam::xlam,
    },
];

/// Names of all registered parsers, sorted.
pub fn list_parsers() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = REGISTRY.iter().map(|s| s.name).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// No parser of that name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownParserError {
    pub name: String,
    pub available: Vec<&'static str>,
}

impl std::fmt::Display for UnknownParserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown tool-call parser {:?}; use one of: {} (vLLM --tool-call-parser names)",
            self.name,
            self.available.join(", ")
        )
    }
}

impl std::error::Error for UnknownParserError {}

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

/// The parser `name` for a request with `tools` (use [`Tools::none`] when there are none).
pub fn get_parser(name: &str, tools: Tools) -> Result<Parser, UnknownParserError> {
    get_parser_with(name, tools, ParserOptions::default())
}

/// [`get_parser`] with [`ParserOptions`].
pub fn get_parser_with(name: &str, tools: Tools, options: ParserOptions) -> Result<Parser, UnknownParserError> {
    let spec = REGISTRY
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| UnknownParserError {
            name: name.to_owned(),
            available: list_parsers(),
        })?;
    let format = (spec.make)();
    Ok(Parser {
        name: spec.name,
        format: format.with_options(&options).unwrap_or(format),
        tools: Arc::new(tools),
    })
}

/// A parser for one format and one request's tools. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Parser {
    name: &'static str,
    format: Arc<dyn Format>,
    tools: Arc<Tools>,
}

impl Parser {
    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// A fresh incremental parser for one output.
    pub fn stream(&self) -> Stream {
        Stream::new(self.format.stream(&self.tools), Arc::clone(&self.tools))
    }

    /// The whole output at once: exactly one `feed` and `finish` of a stream (no events built).
    pub fn parse(&self, text: &str) -> ParseResult {
        let mut s = self.stream();
        s.feed_into(text, None, None);
        s.finish_into(None);
        s.into_result()
    }

    /// Parse with the events a single-chunk stream would give (tests, demos).
    pub fn parse_events(&self, text: &str) -> (ParseResult, Vec<Event>) {
        let mut s = self.stream();
        let mut events = s.feed(text);
        events.extend(s.finish());
        (s.into_result(), events)
    }

    /// Raw model output meaning `content` followed by `calls`.
    pub fn render(&self, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
        self.format.render(calls, content)
    }
}
