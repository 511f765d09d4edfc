//! The table of parsers by vLLM `--tool-call-parser` name, and [`Parser`], the user-facing handle.

use std::sync::{Arc, LazyLock};

use super::format_info::{CallSyntax, Detection, FormatInfo, Recognition};
use super::formats::auto::AutoTable;
use super::formats::{
    self, deepseek, glm, granite, hermes, internlm, jamba, kimi, llama_json, mistral, pythonic, qwen3_coder, xlam,
};
use super::options::ParserOptions;
use super::parser_spec::ParserSpec;
use super::stream::{Format, Stream};
use super::tools::Tools;
use super::types::{Event, ParseResult, RenderError, ToolCall};

/// Every parser. Format authors add ONE row here, and the format's [`FormatInfo`] below (keep
/// both sorted by name for readability; `list_parsers` sorts anyway). Aliases are rows pointing
/// to the same constructor and info: vLLM's (`llama4_json`, `qwen3_xml`) and hermes-agent's
/// (`deepseek_v3_1`, from its `environments/tool_call_parsers` registry, whose other names are
/// vLLM's); `qwen` and `glm47` read their format's text and share its info too.
pub static REGISTRY: &[ParserSpec] = &[
    ParserSpec {
        name: "auto",
        make: auto,
        info: &AUTO,
    },
    ParserSpec {
        name: "deepseek_v3",
        make: formats::deepseek::deepseek_v3,
        info: &DEEPSEEK_V3,
    },
    ParserSpec {
        name: "deepseek_v31",
        make: formats::deepseek::deepseek_v31,
        info: &DEEPSEEK_V31,
    },
    ParserSpec {
        name: "deepseek_v3_1",
        make: formats::deepseek::deepseek_v31,
        info: &DEEPSEEK_V31,
    },
    ParserSpec {
        name: "glm45",
        make: formats::glm::glm45,
        info: &GLM45,
    },
    ParserSpec {
        name: "glm47",
        make: formats::glm::glm47,
        info: &GLM45,
    },
    ParserSpec {
        name: "granite",
        make: formats::granite::granite,
        info: &GRANITE,
    },
    ParserSpec {
        name: "hermes",
        make: formats::hermes::hermes,
        info: &HERMES,
    },
    ParserSpec {
        name: "internlm",
        make: formats::internlm::internlm,
        info: &INTERNLM,
    },
    ParserSpec {
        name: "jamba",
        make: formats::jamba::jamba,
        info: &JAMBA,
    },
    ParserSpec {
        name: "kimi_k2",
        make: formats::kimi::kimi_k2,
        info: &KIMI_K2,
    },
    ParserSpec {
        name: "llama3_json",
        make: formats::llama_json::llama3_json,
        info: &LLAMA3_JSON,
    },
    ParserSpec {
        name: "llama4_json",
        make: formats::llama_json::llama3_json,
        info: &LLAMA3_JSON,
    },
    ParserSpec {
        name: "llama4_pythonic",
        make: formats::pythonic::llama4_pythonic,
        info: &LLAMA4_PYTHONIC,
    },
    ParserSpec {
        name: "longcat",
        make: formats::hermes::longcat,
        info: &LONGCAT,
    },
    ParserSpec {
        name: "mistral",
        make: formats::mistral::mistral,
        info: &MISTRAL,
    },
    ParserSpec {
        name: "pythonic",
        make: formats::pythonic::pythonic,
        info: &PYTHONIC,
    },
    ParserSpec {
        name: "qwen",
        make: formats::hermes::qwen,
        info: &HERMES,
    },
    ParserSpec {
        name: "qwen3_coder",
        make: formats::qwen3_coder::qwen3_coder,
        info: &QWEN3_CODER,
    },
    ParserSpec {
        name: "qwen3_xml",
        make: formats::qwen3_coder::qwen3_coder,
        info: &QWEN3_CODER,
    },
    ParserSpec {
        name: "xlam",
        make: formats::xlam::xlam,
        info: &XLAM,
    },
];

// -- each format's facts (see `FormatInfo`); markers come from the format's own constants ------

static AUTO: FormatInfo = FormatInfo {
    name: "auto",
    special_tokens: &[],
    text_markup: &[],
    calls: CallSyntax::PerOutput,
    call_ids: false,
    recognised_by: Recognition::Never,
    detection: None,
};

static DEEPSEEK_V3: FormatInfo = FormatInfo {
    name: "deepseek_v3",
    special_tokens: DEEPSEEK_TOKENS,
    text_markup: &["```json", "```", "function"],
    calls: CallSyntax::NameThenJson,
    call_ids: false,
    recognised_by: Recognition::SharedMarker(deepseek::CALLS_BEGIN),
    // `detect_parser` tells V3 from V3.1 by the template's call layout or the vocabulary.
    detection: Some(Detection {
        rank: 20,
        looks_for: "<｜tool▁calls▁begin｜> with function<｜tool▁sep｜> / ```json (DeepSeek-V3)",
        markers: &[&[deepseek::CALLS_BEGIN]],
        template: &[],
    }),
};

static DEEPSEEK_V31: FormatInfo = FormatInfo {
    name: "deepseek_v31",
    special_tokens: DEEPSEEK_TOKENS,
    text_markup: &[],
    calls: CallSyntax::NameThenJson,
    call_ids: false,
    recognised_by: Recognition::SharedMarker(deepseek::CALLS_BEGIN),
    detection: Some(Detection {
        rank: 30,
        looks_for: "<｜tool▁calls▁begin｜> with NAME<｜tool▁sep｜> (DeepSeek-V3.1+)",
        markers: &[&[deepseek::CALLS_BEGIN, deepseek::SEP]],
        template: &[],
    }),
};

const DEEPSEEK_TOKENS: &[&str] = &[
    deepseek::CALLS_BEGIN,
    deepseek::CALL_BEGIN,
    deepseek::SEP,
    deepseek::CALL_END,
    deepseek::CALLS_END,
];

static GLM45: FormatInfo = FormatInfo {
    name: "glm45",
    special_tokens: &[
        glm::TOOL_CALL,
        glm::TOOL_CALL_END,
        glm::KEY,
        glm::KEY_END,
        glm::VALUE,
        glm::VALUE_END,
    ],
    text_markup: &[],
    calls: CallSyntax::XmlParameters,
    call_ids: false,
    recognised_by: Recognition::SharedMarker(glm::TOOL_CALL),
    // GLM-4.5 and 4.7 differ only in spacing, which the one glm45 parser accepts.
    detection: Some(Detection {
        rank: 100,
        looks_for: "<arg_key>/<arg_value> (GLM-4.5 / 4.7)",
        markers: &[&[glm::KEY]],
        template: &[],
    }),
};

static GRANITE: FormatInfo = FormatInfo {
    name: "granite",
    special_tokens: &[granite::TOKEN],
    text_markup: &[granite::TEXT_TAG],
    calls: CallSyntax::JsonObject,
    call_ids: false,
    recognised_by: Recognition::Marker(granite::TOKEN),
    detection: Some(Detection {
        rank: 80,
        looks_for: "<|tool_call|> or <tool_call> in a <|start_of_role|> template (Granite)",
        markers: &[&[granite::TOKEN]],
        template: &[&["<|start_of_role|>", granite::TEXT_TAG]],
    }),
};

static HERMES: FormatInfo = FormatInfo {
    name: "hermes",
    special_tokens: &[hermes::HERMES.start, hermes::HERMES.end],
    text_markup: &[],
    calls: CallSyntax::JsonObject,
    call_ids: false,
    recognised_by: Recognition::SharedMarker(hermes::HERMES.start),
    detection: Some(Detection {
        rank: 150,
        looks_for: "<tool_call> (Hermes / Qwen)",
        markers: &[&[hermes::HERMES.start]],
        template: &[],
    }),
};

static INTERNLM: FormatInfo = FormatInfo {
    name: "internlm",
    // The start marker is two tokens.
    special_tokens: &["<|action_start|>", "<|plugin|>", internlm::END],
    text_markup: &[],
    calls: CallSyntax::JsonObject,
    call_ids: false,
    recognised_by: Recognition::Marker(internlm::START),
    detection: Some(Detection {
        rank: 50,
        looks_for: "<|action_start|><|plugin|> (InternLM2)",
        markers: &[&["<|action_start|>", "<|plugin|>"]],
        template: &[],
    }),
};

static JAMBA: FormatInfo = FormatInfo {
    name: "jamba",
    special_tokens: &[jamba::START, jamba::END],
    text_markup: &[],
    calls: CallSyntax::JsonObject,
    call_ids: false,
    recognised_by: Recognition::Marker(jamba::START),
    detection: Some(Detection {
        rank: 70,
        looks_for: "<tool_calls> (Jamba)",
        markers: &[&[jamba::START]],
        template: &[],
    }),
};

static KIMI_K2: FormatInfo = FormatInfo {
    name: "kimi_k2",
    special_tokens: &[
        kimi::SECTION_BEGIN,
        kimi::CALL_BEGIN,
        kimi::ARGS_BEGIN,
        kimi::CALL_END,
        kimi::SECTION_END,
    ],
    text_markup: &[],
    calls: CallSyntax::NameThenJson,
    call_ids: true,
    recognised_by: Recognition::Marker(kimi::SECTION_BEGIN),
    detection: Some(Detection {
        rank: 10,
        looks_for: "<|tool_calls_section_begin|> (Kimi K2)",
        markers: &[&[kimi::SECTION_BEGIN]],
        template: &[],
    }),
};

static LLAMA3_JSON: FormatInfo = FormatInfo {
    name: "llama3_json",
    special_tokens: &[llama_json::PYTHON_TAG],
    text_markup: &[],
    calls: CallSyntax::JsonObject,
    call_ids: false,
    recognised_by: Recognition::MarkerAtStart(llama_json::PYTHON_TAG),
    // Llama 3.1/3.2 templates describe a bare JSON object with "parameters"; <|python_tag|> opens
    // built-in tool calls.
    detection: Some(Detection {
        rank: 130,
        looks_for: "<|python_tag|> or a Llama-3 template asking for \"parameters\" (Llama 3.x JSON)",
        markers: &[&[llama_json::PYTHON_TAG]],
        template: &[&["<|start_header_id|>", "\"parameters\"", "<|eot_id|>"]],
    }),
};

static LLAMA4_PYTHONIC: FormatInfo = FormatInfo {
    name: "llama4_pythonic",
    special_tokens: &[pythonic::PY_START, pythonic::PY_END],
    text_markup: &[],
    calls: CallSyntax::PythonCalls,
    call_ids: false,
    recognised_by: Recognition::MarkerAtStart(pythonic::PY_START),
    detection: Some(Detection {
        rank: 120,
        looks_for: "<|python_start|> / <|header_start|> (Llama 4)",
        markers: &[&[pythonic::PY_START], &["<|header_start|>"]],
        template: &[],
    }),
};

static LONGCAT: FormatInfo = FormatInfo {
    name: "longcat",
    special_tokens: &[hermes::LONGCAT.start, hermes::LONGCAT.end],
    text_markup: &[],
    calls: CallSyntax::JsonObject,
    call_ids: false,
    recognised_by: Recognition::Marker(hermes::LONGCAT.start),
    detection: Some(Detection {
        rank: 60,
        looks_for: "<longcat_tool_call> (LongCat)",
        markers: &[&[hermes::LONGCAT.start]],
        template: &[],
    }),
};

static MISTRAL: FormatInfo = FormatInfo {
    name: "mistral",
    special_tokens: &[mistral::BOT, mistral::ARGS],
    text_markup: &[],
    calls: CallSyntax::JsonObject,
    call_ids: false,
    recognised_by: Recognition::Marker(mistral::BOT),
    // `detect_parser` leaves xLAM templates, which may mention [TOOL_CALLS] too, to xlam.
    detection: Some(Detection {
        rank: 40,
        looks_for: "[TOOL_CALLS] (Mistral)",
        markers: &[&[mistral::BOT]],
        template: &[],
    }),
};

static PYTHONIC: FormatInfo = FormatInfo {
    name: "pythonic",
    special_tokens: &[],
    text_markup: &[],
    calls: CallSyntax::PythonCalls,
    call_ids: false,
    recognised_by: Recognition::Never,
    // vLLM's pythonic example templates describe "[func_name1(params_name1=params_value1, ...)]".
    detection: Some(Detection {
        rank: 140,
        looks_for: "[func_name1(params_name1=...)] (pythonic list)",
        markers: &[],
        template: &[&["[func_name1("], &["func_name(param1="]],
    }),
};

static QWEN3_CODER: FormatInfo = FormatInfo {
    name: "qwen3_coder",
    special_tokens: &[qwen3_coder::TOOL_CALL, qwen3_coder::TOOL_CALL_END],
    text_markup: &[
        qwen3_coder::FUNCTION_END,
        qwen3_coder::PARAMETER_END,
        qwen3_coder::FUNCTION,
        qwen3_coder::PARAMETER,
    ],
    calls: CallSyntax::XmlParameters,
    call_ids: false,
    recognised_by: Recognition::Marker(qwen3_coder::FUNCTION),
    detection: Some(Detection {
        rank: 90,
        looks_for: "<function= inside <tool_call> (Qwen3-Coder XML)",
        markers: &[&[qwen3_coder::FUNCTION, qwen3_coder::TOOL_CALL]],
        template: &[],
    }),
};

static XLAM: FormatInfo = FormatInfo {
    name: "xlam",
    special_tokens: &[],
    // The wrappers it accepts around its call array.
    text_markup: &[
        "```json",
        xlam::FENCE,
        "<tool_call>",
        "</tool_call>",
        "[TOOL_CALLS]",
        "</think>",
    ],
    calls: CallSyntax::JsonObject,
    call_ids: false,
    recognised_by: Recognition::Never,
    // xLAM templates ask for a JSON array of {"name", "arguments"} objects in a "tool_calls" list.
    detection: Some(Detection {
        rank: 110,
        looks_for: "a JSON array [{\"name\": \"func_name1\", \"arguments\": ...}] (xLAM)",
        markers: &[],
        template: &[
            &["[{\"name\": \"func_name1\""],
            &["\"tool_calls\"", "func_name1"],
            &["xLAM"],
        ],
    }),
};

/// The facts about the format parser `name` reads (aliases: their format's), or `None` for an
/// unknown name.
pub fn parser_info(name: &str) -> Option<&'static FormatInfo> {
    REGISTRY.iter().find(|s| s.name == name).map(|s| s.info)
}

/// Names of all registered parsers, sorted.
pub fn list_parsers() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = REGISTRY.iter().map(|s| s.name).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// What `auto` chooses among: the formats of [`REGISTRY`] and their markers (built once).
static AUTO_TABLE: LazyLock<AutoTable> = LazyLock::new(|| AutoTable::new(REGISTRY));

/// The `auto` parser's constructor: `auto` is handed the registry rather than reading it.
fn auto() -> Arc<dyn Format> {
    formats::auto::auto(&AUTO_TABLE)
}

/// The parser name whose markers `text` carries (its first marker of a known format decides),
/// or `None` when it carries none. What `auto` would parse `text` as.
pub fn guess_parser(text: &str) -> Option<&'static str> {
    AUTO_TABLE.guess(text)
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::parsers::guess_parser;

    fn formats() -> impl Iterator<Item = &'static ParserSpec> {
        REGISTRY.iter().filter(|s| s.name == s.info.name)
    }

    #[test]
    fn aliases_share_the_info_of_a_registered_format() {
        for spec in REGISTRY {
            let own = parser_info(spec.info.name).unwrap();
            assert!(
                std::ptr::eq(own, spec.info),
                "{}: info of {}",
                spec.name,
                spec.info.name
            );
        }
        assert!(parser_info("nope").is_none());
    }

    #[test]
    fn detection_ranks_are_distinct() {
        let mut ranks: Vec<u8> = formats().filter_map(|s| s.info.detection.map(|d| d.rank)).collect();
        let n = ranks.len();
        ranks.sort_unstable();
        ranks.dedup();
        assert_eq!(ranks.len(), n, "two formats with one detection rank");
        for spec in formats().filter(|s| s.name != "auto") {
            let d = spec
                .info
                .detection
                .unwrap_or_else(|| panic!("{} has no detection", spec.name));
            assert!(!d.markers.is_empty() || !d.template.is_empty(), "{}", spec.name);
        }
    }

    /// The marker `auto` recognises a format by is markup of that format, and what the format
    /// writes is recognised as that format.
    #[test]
    fn recognition_markers_are_the_formats_own() {
        let call = ToolCall {
            id: "functions.read_file:0".into(),
            name: "read_file".into(),
            arguments: r#"{"path": "a.py"}"#.into(),
        };
        for spec in formats() {
            let info = spec.info;
            let marker = match info.recognised_by {
                Recognition::Never => continue,
                Recognition::Marker(m) | Recognition::MarkerAtStart(m) | Recognition::SharedMarker(m) => m,
            };
            assert!(
                info.markup().any(|t| marker.starts_with(t)),
                "{}: {marker:?}",
                spec.name
            );
            let p = get_parser(spec.name, Tools::none()).unwrap();
            let text = p.render(std::slice::from_ref(&call), None).unwrap();
            if text.contains(marker) {
                assert_eq!(guess_parser(&text), Some(spec.name), "{text:?}");
            }
        }
    }
}
