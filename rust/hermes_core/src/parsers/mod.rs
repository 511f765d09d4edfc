//! Streaming tool-call parsers (DESIGN.md §1).
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
//! - `registry`: the name table, [`list_parsers`], [`get_parser`], [`Parser`].
//!
//! On top of it:
//! - `engines`: the machinery formats share, one engine per kind of markup (`json_in_markers`:
//!   [`JsonInMarkers`], "a JSON object `{name, arguments}` between a start and an end marker";
//!   `xml_params`; `sectioned`; `json_array`; `python_literal`; `shared`).
//! - `formats`: one file per format family (constants, dialect, render), each exposing
//!   `fn <name>() -> Arc<dyn Format>`.
//! - `test_support` (tests only): run a parser over every chunking of a text and check the
//!   streaming invariants.
//!
//! # Adding a format (e.g. `glm45`)
//! 1. Create `formats/<name>.rs` and add `pub(crate) mod <name>;` to `formats/mod.rs`.
//! 2. If the format is "JSON object between markers", it is a [`JsonInMarkers`] constant: write
//!    `pub fn <name>() -> Arc<dyn Format> { Arc::new(JsonInMarkers { .. }) }` and you are done.
//!    If it is "parameters as raw text between XML-ish tags" (qwen3_coder, glm45), describe it to
//!    `engines::xml_params`: a `Spec` (markers, wording) and a `Dialect` for the call-name and
//!    key markup; value streaming, end-marker lookahead and truncation are written there once.
//! 3. Otherwise implement [`Format`] (`stream` builds your state machine, `render` writes calls
//!    back as raw text or returns a [`RenderError`] saying what the format cannot express) and
//!    [`FormatStream`] (`feed`/`finish`). Inside `feed`:
//!    - keep a small `held: String` of unconsumed input; process `held + chunk` (take the
//!      String with `std::mem::take`, push the chunk only when `held` is non-empty) and store back
//!      the unconsumed tail. Everything you do not hold must be consumed now: O(chunk) per feed;
//!    - find markers with [`MarkerSet::find`] (`Full`: act; `Partial`: hold from `at`;
//!      `None`: release everything). Release text with [`Emitter::content`] as soon as `find`
//!      says it cannot start a marker;
//!    - scan JSON with [`JsonScanner`] / [`ObjectWalker`]: they consume chunk by chunk, tell you
//!      when a value is complete, and give an error kind + offset for malformed JSON;
//!    - emit calls with [`Emitter::start_call`] (once the name is known; pass `Some(id)` when
//!      the format carries its own call id, like kimi_k2), [`Emitter::args`] (argument text as
//!      it arrives; the concatenation must be the final `arguments`), [`Emitter::end_call`];
//!    - report problems with [`Emitter::issue`] at [`Emitter::pos`]`(absolute_byte)`. Absolute
//!      offset of your input's first byte = `out.chunk_offset() - held_len_before_this_chunk`.
//!      `pos` is exact for the current chunk and the text you hold; for older text keep the
//!      `Pos` from when you saw it. Override `FormatStream::holds_text` (optional, a speed-up);
//!    - stay O(chunk) per feed, and cheap per feed: at the end of a feed, open a [`Lane`] with
//!      [`Emitter::set_lane`] for the states a long output spends its time in (inside a JSON string
//!      of the arguments, a raw string value, plain prose, text you hold until a byte arrives), so
//!      the driver passes the next chunks on without calling you; take over a lane's state with
//!      [`Emitter::resumed_lane`] at the start of the next feed (see `JimStream` or
//!      `engines::shared::Driven`'s `Machine::lane`). `tests/lanes.rs` checks every format opens one;
//!      `cargo run --release -p hermes_core --example stream_vs_parse -- NAME FILE` measures it.
//!    - never lose text: whatever is not returned as a call (name/arguments) or consumed as the
//!      format's own markup must reach `content`, also on malformed and truncated input
//!      (`finish` flushes). Never panic (no indexing that can fail; use `get`).
//!    - be prompt (DESIGN.md §1): end a call ([`Emitter::end_call`]) in the feed that brings its
//!      end marker (or the end of its call object), with its arguments complete; never hold a
//!      finished call, or prose after it, for `finish`. `tests/parsers/test_promptness.py`
//!      checks it for every registered format.
//!
//!    Unknown-tool issues, ids, event merging and the result are handled by the driver.
//! 4. Register: add one [`ParserSpec`] row to [`REGISTRY`] under vLLM's
//!    `--tool-call-parser` name (aliases are extra rows pointing to the same constructor). If its
//!    output carries a distinctive start marker, add it to `formats/auto.rs` so `auto` and
//!    `guess_parser` recognise it.
//! 5. Tests pick it up automatically: `tests/parsers/test_conformance.py` runs every registered
//!    parser with a `../shared/conformance/<name>.jsonl` (alias map `CONFORMANCE_FILE` in
//!    `tests/parsers/parser_checks.py` for names sharing a file; where a parser deliberately
//!    answers the text's `intended` instead of vLLM's `expected`, add its categories to
//!    `INTENDED_OVER_EXPECTED` in test_conformance.py), and `tests/parsers/test_properties.py` runs round trip and split
//!    invariance for every name in `list_parsers()`. The Rust proptests in
//!    `rust/hermes_core/tests/parsers.rs` iterate over `list_parsers()` too.

mod call_ids;
mod emitter;
mod engines;
mod event_sink;
mod format_info;
mod formats;
mod json_escape;
mod json_scan;
mod lane;
mod marker;
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
pub use formats::auto::guess_parser;
pub use json_scan::{JsonError, JsonErrorKind, JsonScanner, ObjectWalker, Status, Walk};
pub use lane::Lane;
pub use marker::{MarkerHit, MarkerSet};
pub use registry::{
    get_parser, get_parser_with, list_parsers, parser_info, Parser, ParserOptions, ParserSpec, UnknownParserError,
    REGISTRY,
};
pub use stream::{Format, FormatStream, Stream};
pub use tools::{ParamSpec, ParamType, ToolSpec, Tools, ToolsError};
pub use types::{Event, IssueKind, ParseIssue, ParseResult, Pos, RenderError, ToolCall, MAX_ISSUES};
pub use utf8::count_chars;
