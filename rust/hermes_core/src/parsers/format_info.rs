//! [`FormatInfo`]: what the rest of hermes_env needs to know about a format besides how to parse
//! it. Each registry row points to its format's one `FormatInfo`; `auto`, `detect_parser`, the
//! benchmark tokenizer and the tests read these facts from there instead of repeating them.

/// Facts about one format, shared by its registry rows (the format's own name and its aliases).
#[derive(Debug)]
pub struct FormatInfo {
    /// The format's own registry name; aliases and variants (`qwen`, `glm47`) point to the info of
    /// the format they read, so this is also the name of the conformance file they share.
    pub name: &'static str,
    /// The markup the model family's tokenizer has as single special tokens.
    pub special_tokens: &'static [&'static str],
    /// Other markup the format consumes, written as plain text (fences, keywords). A marker
    /// ending in `=` opens a tag whose name runs to the next `>` (`<function=NAME>`).
    pub text_markup: &'static [&'static str],
    /// How the calls between the markers are written.
    pub calls: CallSyntax,
    /// The format writes its own call ids (kimi_k2's `functions.NAME:IDX`).
    pub call_ids: bool,
    /// How `auto` and `guess_parser` recognise the format in an output.
    pub recognised_by: Recognition,
    /// How `detect_parser` recognises the format from a tokenizer, or `None` when it never
    /// picks it.
    pub detection: Option<Detection>,
}

impl FormatInfo {
    /// Every marker and keyword the format may consume: its special tokens, then its text markup.
    pub fn markup(&self) -> impl Iterator<Item = &'static str> {
        self.special_tokens.iter().chain(self.text_markup).copied()
    }
}

/// How a format writes one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallSyntax {
    /// A JSON object with the name and the arguments (`{"name": .., "arguments": {..}}`).
    JsonObject,
    /// The name in the markup, then the arguments as a JSON object.
    NameThenJson,
    /// The name and each parameter in XML-ish tags, values as raw text.
    XmlParameters,
    /// A Python list of calls with keyword arguments.
    PythonCalls,
    /// `auto`: the syntax of the format each output turns out to be in.
    PerOutput,
}

impl CallSyntax {
    pub fn as_str(self) -> &'static str {
        match self {
            CallSyntax::JsonObject => "json_object",
            CallSyntax::NameThenJson => "name_then_json",
            CallSyntax::XmlParameters => "xml_parameters",
            CallSyntax::PythonCalls => "python_calls",
            CallSyntax::PerOutput => "per_output",
        }
    }
}

/// How `auto` recognises a format in an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recognition {
    /// Not at all: its calls carry no marker of their own (a bare JSON value or Python list).
    Never,
    /// By this marker anywhere in the output.
    Marker(&'static str),
    /// By this marker at the start of the output only: the format reads it nowhere else.
    MarkerAtStart(&'static str),
    /// By a marker other formats write too; `formats/auto.rs` decides by the text after it.
    SharedMarker(&'static str),
}

/// How `detect_parser` recognises a format from a tokenizer's added tokens and chat template.
///
/// The format matches when every string of one of the `markers` sets is an added token or in
/// the template, or every string of one of the `template` sets is in the template. Formats are
/// tried by ascending `rank`, the first match wins: a format whose markers another format's
/// tokenizers also have (Hermes' `<tool_call>`, in Qwen3-Coder's and GLM's templates too) ranks
/// after it. `detect_parser` adds code where strings cannot decide (DeepSeek V3 vs V3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detection {
    pub rank: u8,
    /// What it looks for, in words (for the error when nothing matches).
    pub looks_for: &'static str,
    pub markers: &'static [&'static [&'static str]],
    pub template: &'static [&'static [&'static str]],
}
