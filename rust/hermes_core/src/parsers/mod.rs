//! Streaming tool-call parsers.
//!
//! A model's raw output goes in, chunk by chunk; OpenAI-style content and tool calls come out as
//! [`Event`]s and, at the end, a [`ParseResult`]. `parse(text)` is literally one `feed` plus
//! `finish` of the same [`Stream`], so whole-text and streamed results cannot drift apart.
//!
//! # Layout
//! Every module is private; what other crates use is the `pub use` list at the end of this file.
//! The core (of these, only `registry`, the table of format constructors, imports `formats`):
//! - `types`: [`ToolCall`], [`ParseIssue`]/[`IssueKind`], [`Event`], [`ParseResult`], [`Pos`].
//! - `tools`: [`Tools`], the request's tool schemas (names, per-parameter JSON-schema types).
//! - `stream`: the [`FormatStream`] / [`Format`] traits every format implements and the
//!   [`Stream`] driver; `emitter`: the [`Emitter`] formats write to; `call_ids`: ids for calls
//!   whose format has none; `utf8`: [`count_chars`].
//! - `event_sink`: [`EventSink`], where events go: `Vec<Event>`, [`ForwardSink`], or a consumer
//!   that forwards text without building event strings.
//! - `lane`: [`Lane`], text the driver passes on without calling the format while the format
//!   says its state allows (inside argument strings, plain prose, text a format holds whole).
//! - `marker`: [`MarkerSet`], marker search with bounded hold-back (memchr-fast).
//! - `json_scan`: [`JsonScanner`] (one JSON value, incrementally, grammar-checked, no
//!   recursion) and [`ObjectWalker`] (an object's members, raw value text as it arrives);
//!   `json_escape`: JSON string escaping.
//! - `registry`: the name table, [`list_parsers`], [`get_parser`], [`Parser`], and each format's
//!   [`FormatInfo`] (`format_info`: markup, call syntax, how `auto` and `detect_parser` know it).
//!
//! On top of it:
//! - `engines`: the machinery formats share, one engine per kind of markup (`json_in_markers`:
//!   [`JsonInMarkers`], "a JSON object `{name, arguments}` between a start and an end marker";
//!   `xml_params`; `sectioned`; `json_array`; `python_literal`; `shared`: the `Machine` trait
//!   (a format's states, one `step` each), `Driven`, which runs every machine's stepping loop
//!   over "held tail + chunk", and `MachineFormat`, a machine plus a render function as a
//!   [`Format`]).
//! - `formats`: one file per format family (constants, dialect, render), each exposing
//!   `fn <name>() -> Arc<dyn Format>`.
//! - `test_support` (tests only): run a parser over every chunking of a text and check the
//!   streaming invariants.
//!
//! # Adding a format
//! A format is its file, its registry row and its conformance cases:
//! 1. `formats/<name>.rs` (and `pub(crate) mod <name>;` in `formats/mod.rs`) with
//!    `pub fn <name>() -> Arc<dyn Format>` and its markers as `pub(crate) const`s. Describe it to
//!    the engine for its kind of markup where one fits: a [`JsonInMarkers`] constant (a JSON
//!    object between two markers), `engines::xml_params` (parameters as raw text in XML-ish tags),
//!    `engines::json_array` (a JSON call array after a marker), `engines::sectioned` (a section of
//!    calls, each a header and JSON arguments). Otherwise write its states as an
//!    `engines::machine::Machine` (`step` consumes what the current state can decide, or waits)
//!    and make it a format with `MachineFormat { machine, render }`; the rules below hold for
//!    it as for a hand-written [`Format`] and [`FormatStream`].
//! 2. In `registry.rs`, one [`ParserSpec`] row under vLLM's `--tool-call-parser` name (aliases:
//!    more rows with the same constructor and info) and the format's [`FormatInfo`]: its markup
//!    (special tokens, other text markup), call syntax, the marker `auto` recognises it by, and
//!    the markers or template strings `detect_parser` recognises its tokenizers by (with a rank
//!    before any format whose markers its templates also contain). Python reads these through
//!    `_core.parser_info`: `detect_parser`, the benchmark tokenizer's marker tokens, the tests'
//!    markup for the nothing-lost check.
//! 3. `tests/data/conformance/<name>.jsonl` (vLLM's answers; see its README). Every test that
//!    iterates over `list_parsers()` then covers it: conformance (where the parser deliberately
//!    answers the text's `intended` over vLLM's `expected`, list the categories in
//!    `INTENDED_OVER_EXPECTED` in `tests/parsers/test_conformance.py`), hypothesis properties,
//!    promptness, lanes, and the Rust proptests in `tests/parsers.rs`.
//! 4. Add the name to the README's parser list (a test compares it with the registry).
//!
//! Only where strings cannot decide is there code to add: a start marker another format also
//! writes (`SharedMarker`: decide by the text after it in `formats/auto.rs`), a tokenizer that
//! markers cannot tell from another's (`_REFINE` in `hermes_env/parsers/detect.py`). A renderer
//! in `benches/workloads.py` adds the format to the benchmarks.
//!
//! # Writing a FormatStream
//! - keep a small `held: String` of unconsumed input; process `held + chunk` (take the String
//!   with `std::mem::take`, push the chunk only when `held` is non-empty) and store back the
//!   unconsumed tail. Everything you do not hold must be consumed now: O(chunk) per feed;
//! - find markers with [`MarkerSet::find`] (`Full`: act; `Partial`: hold from `at`; `None`:
//!   release everything). Release text with [`Emitter::content`] as soon as `find` says it
//!   cannot start a marker;
//! - scan JSON with [`JsonScanner`] / [`ObjectWalker`]: they consume chunk by chunk, tell you
//!   when a value is complete, and give an error kind + offset for malformed JSON;
//! - emit calls with [`Emitter::start_call`] (once the name is known; pass `Some(id)` when the
//!   format carries its own call id, like kimi_k2), [`Emitter::args`] (argument text as it
//!   arrives; the concatenation must be the final `arguments`), [`Emitter::end_call`];
//! - report problems with [`Emitter::issue`] at [`Emitter::pos`]`(absolute_byte)`. Absolute
//!   offset of your input's first byte = `out.chunk_offset() - held_len_before_this_chunk`.
//!   `pos` is exact for the current chunk and the text you hold; for older text keep the `Pos`
//!   from when you saw it. Override `FormatStream::holds_text` (optional, a speed-up);
//! - stay O(chunk) per feed, and cheap per feed: at the end of a feed, open a [`Lane`] with
//!   [`Emitter::set_lane`] for the states a long output spends its time in (inside a JSON string
//!   of the arguments, a raw string value, plain prose, text you hold until a byte arrives), so
//!   the driver passes the next chunks on without calling you; take over a lane's state with
//!   [`Emitter::resumed_lane`] at the start of the next feed (see `Machine::lane` and
//!   `Machine::resume_lane` in `engines::shared`). `tests/lanes.rs` checks every format opens one;
//!   `cargo run --release -p hermes_core --example stream_vs_parse -- NAME FILE` measures it;
//! - never lose text: whatever is not returned as a call (name/arguments) or consumed as the
//!   format's own markup (its [`FormatInfo`] markup) must reach `content`, also on malformed and
//!   truncated input (`finish` flushes). Never panic (no indexing that can fail; use `get`);
//! - be prompt: end a call ([`Emitter::end_call`]) in the feed that brings its end
//!   marker (or the end of its call object), with its arguments complete; never hold a finished
//!   call, or prose after it, for `finish`. `tests/parsers/test_promptness.py` checks it.
//!
//! Unknown-tool issues, ids, event merging and the result are handled by the driver.

mod call_ids;
mod emitter;
mod engines;
mod event_sink;
mod format_info;
mod formats;
mod json_bytes;
mod json_escape;
mod json_scan;
mod lane;
mod marker;
mod options;
mod parser_spec;
mod registry;
mod stream;
#[cfg(test)]
mod test_support;
mod tools;
mod types;
mod utf8;

pub use emitter::Emitter;
pub use engines::json_in_markers::JsonInMarkers;
pub use event_sink::{EventSink, ForwardSink};
pub use format_info::{CallSyntax, Detection, FormatInfo, Recognition};
pub use json_scan::{JsonError, JsonErrorKind, JsonScanner, ObjectWalker, Status, Walk};
pub use lane::Lane;
pub use marker::{MarkerHit, MarkerSet};
pub use options::ParserOptions;
pub use parser_spec::ParserSpec;
pub use registry::{
    get_parser, get_parser_with, guess_parser, list_parsers, parser_info, Parser, UnknownParserError, REGISTRY,
};
pub use stream::{Format, FormatStream, Stream};
pub use tools::{ParamSpec, ParamType, ToolSpec, Tools, ToolsError};
pub use types::{Event, IssueKind, ParseIssue, ParseResult, Pos, RenderError, ToolCall, MAX_ISSUES};
pub use utf8::count_chars;
