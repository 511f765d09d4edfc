//! `auto`: the format is picked from the output itself, by the first marker of a known format
//! it carries; from that marker on, the output is parsed by that format. For a server whose
//! tokenizer does not say which format its model writes (no chat template, an unknown one).
//!
//! Each format's own marker is in its registry info ([`Recognition`]: anywhere in the output, or
//! only at its start, as for `<|python_tag|>` (`llama3_json`) and `<|python_start|>`
//! (`llama4_pythonic`)). Two markers are shared, and the text right after them decides:
//!
//! | marker | format |
//! |---|---|
//! | `<tool_call>` then `{` / `<function=` / `[` / a name | `hermes` / `qwen3_coder` / `granite` / `glm45` |
//! | `<｜tool▁calls▁begin｜>`, then after the first `<｜tool▁sep｜>` `{` / a name | `deepseek_v31` / `deepseek_v3` |
//!
//! (A marker read only at the start is text elsewhere, for `auto` too.)
//! Formats whose calls carry no marker (a bare JSON object or array, a bare Python list) are
//! not recognised: an output without a marker is content. Name the parser for those models.
//!
//! Text before the marker is content, released as it arrives except a possible marker prefix,
//! the marker's lookahead (bounded: [`MAX_LOOKAHEAD`] bytes, then `hermes` / `deepseek_v31`)
//! and a run of whitespace right before it, which goes to the chosen format with the marker
//! (formats differ on whether it is framing). So an output that is one format's text parses as
//! that format parses it, as long as text before its first call names no other format's marker.
//! `render` is refused: render with the format's own parser.

use std::sync::Arc;

use super::deepseek::{CALLS_BEGIN as DS_BEGIN, SEP as DS_SEP};
use super::hermes::HERMES;
use super::qwen3_coder::FUNCTION;
use crate::parsers::format_info::Recognition;
use crate::parsers::marker::{MarkerHit, MarkerSet};
use crate::parsers::options::ParserOptions;
use crate::parsers::parser_spec::ParserSpec;
use crate::parsers::tools::Tools;
use crate::parsers::types::{Pos, RenderError, ToolCall};
use crate::parsers::{count_chars, Emitter, Format, FormatStream};

/// Most bytes looked at after a marker before an ambiguous one is decided by default.
pub const MAX_LOOKAHEAD: usize = 512;

const TOOL_CALL: &str = HERMES.start;

/// The markers several formats write ([`Recognition::SharedMarker`]), decided here.
const SHARED: &[(&str, Rule)] = &[(TOOL_CALL, Rule::ToolCall), (DS_BEGIN, Rule::DeepSeek)];

/// The formats `auto` picks among (the registry's rows, handed over by the registry, which builds
/// `auto` itself) and each marker with how the text after it picks the format: the shared ones,
/// then every format's own from its registry info.
pub struct AutoTable {
    specs: &'static [ParserSpec],
    markers: Vec<(&'static str, Rule)>,
    marker_set: MarkerSet,
}

impl AutoTable {
    pub fn new(specs: &'static [ParserSpec]) -> Self {
        let own = specs
            .iter()
            .filter(|s| s.name == s.info.name)
            .filter_map(|s| match s.info.recognised_by {
                Recognition::Marker(m) => Some((m, Rule::Is(s.name))),
                Recognition::MarkerAtStart(m) => Some((m, Rule::AtStart(s.name))),
                Recognition::Never | Recognition::SharedMarker(_) => None,
            });
        let markers: Vec<(&'static str, Rule)> = SHARED.iter().copied().chain(own).collect();
        let marker_set = MarkerSet::new(&markers.iter().map(|(m, _)| *m).collect::<Vec<_>>());
        AutoTable {
            specs,
            markers,
            marker_set,
        }
    }

    /// The parser name whose markers `text` carries (its first marker of a known format
    /// decides), or `None` when it carries none. What `auto` would parse `text` as.
    pub fn guess(&self, text: &str) -> Option<&'static str> {
        let mut from = 0;
        while let MarkerHit::Full { at, end, marker } = self.marker_set.find(text.get(from..)?, true) {
            let rule = self.markers.get(marker)?.1;
            if !rule.counts_at(text[..from + at].trim().is_empty()) {
                from += end;
                continue;
            }
            return match rule.decide(&text[from + end..], true) {
                Decision::Format(name) => Some(name),
                Decision::NeedMore => None,
            };
        }
        None
    }
}

#[derive(Debug, Clone, Copy)]
enum Rule {
    Is(&'static str),
    /// Only at the start of the output (after whitespace): the format reads its marker nowhere
    /// else, so elsewhere it is text.
    AtStart(&'static str),
    ToolCall,
    DeepSeek,
}

/// What the text after a marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Format(&'static str),
    NeedMore,
}

impl Rule {
    /// Decide from `after` (the text after the marker; `eof`: no more will come).
    fn decide(self, after: &str, eof: bool) -> Decision {
        let undecided = |default| {
            if eof || after.len() > MAX_LOOKAHEAD {
                Decision::Format(default)
            } else {
                Decision::NeedMore
            }
        };
        match self {
            Rule::Is(name) | Rule::AtStart(name) => Decision::Format(name),
            Rule::ToolCall => {
                let rest = after.trim_start();
                match rest.as_bytes().first() {
                    None => undecided("hermes"),
                    Some(b'{') => Decision::Format("hermes"),
                    Some(b'[') => Decision::Format("granite"),
                    Some(b'<') if rest.starts_with(FUNCTION) => Decision::Format("qwen3_coder"),
                    Some(b'<') if !eof && FUNCTION.starts_with(rest) => Decision::NeedMore,
                    Some(b) if b.is_ascii_alphabetic() || *b == b'_' => Decision::Format("glm45"),
                    Some(_) => Decision::Format("hermes"),
                }
            }
            Rule::DeepSeek => match after.find(DS_SEP) {
                Some(k) => match after[k + DS_SEP.len()..].trim_start().as_bytes().first() {
                    Some(b'{') => Decision::Format("deepseek_v31"),
                    Some(_) => Decision::Format("deepseek_v3"),
                    None => undecided("deepseek_v31"),
                },
                None => undecided("deepseek_v31"),
            },
        }
    }
}

impl Rule {
    /// Whether the marker picks its format where it is (`at_start`: only whitespace before it).
    fn counts_at(self, at_start: bool) -> bool {
        !matches!(self, Rule::AtStart(_)) || at_start
    }
}

/// The `auto` parser, choosing among `table`'s formats.
pub fn auto(table: &'static AutoTable) -> Arc<dyn Format> {
    Arc::new(Auto {
        table,
        options: ParserOptions::default(),
    })
}

struct Auto {
    table: &'static AutoTable,
    /// Passed on to the format it picks.
    options: ParserOptions,
}

impl Format for Auto {
    fn stream(&self, tools: &Arc<Tools>) -> Box<dyn FormatStream> {
        Box::new(AutoStream {
            table: self.table,
            options: self.options,
            tools: Arc::clone(tools),
            held: String::new(),
            held_at: Pos::default(),
            inner: None,
        })
    }

    fn render(&self, _calls: &[ToolCall], _content: Option<&str>) -> Result<String, RenderError> {
        Err(RenderError(
            "auto picks a format per output and has none to write; render with the format's own parser".into(),
        ))
    }

    fn with_options(&self, options: &ParserOptions) -> Option<Arc<dyn Format>> {
        Some(Arc::new(Auto {
            table: self.table,
            options: *options,
        }))
    }
}

struct AutoStream {
    table: &'static AutoTable,
    options: ParserOptions,
    tools: Arc<Tools>,
    /// Undecided text (whitespace before a possible marker, the marker and its lookahead): a
    /// verbatim copy of the output from `held_at`.
    held: String,
    held_at: Pos,
    /// The chosen format's stream, once a marker decided it.
    inner: Option<Box<dyn FormatStream>>,
}

impl AutoStream {
    /// Run over `buf` (held text, then the chunk, which starts at `buf[chunk_at..]`).
    fn run(&mut self, buf: &str, chunk_at: usize, eof: bool, out: &mut Emitter<'_>) {
        let pos_of = |this: &Self, out: &mut Emitter<'_>, k: usize| -> Pos {
            if k < chunk_at {
                Pos {
                    byte: this.held_at.byte + k,
                    char: this.held_at.char + count_chars(buf.as_bytes().get(..k).unwrap_or_default()),
                }
            } else {
                out.pos(out.chunk_offset() + (k - chunk_at))
            }
        };
        let mut i = 0;
        loop {
            let rest = &buf[i..];
            let (text_end, hit) = match self.table.marker_set.find(rest, eof) {
                MarkerHit::Full { at, end, marker } => (at, Some((end, marker))),
                MarkerHit::Partial { at } => (at, None),
                MarkerHit::None => (rest.len(), None),
            };
            // Whitespace right before a (possible) marker waits to go with it.
            let keep = if hit.is_some() || !eof {
                rest[..text_end].trim_end().len()
            } else {
                text_end
            };
            self.prose(buf, i, i + keep, chunk_at, out);
            let Some((end, marker)) = hit else {
                // A possible marker prefix (or trailing whitespace) waits for the next feed.
                self.hold(buf, i + keep, chunk_at, out);
                return;
            };
            let Some(&(_, rule)) = self.table.markers.get(marker) else {
                return;
            };
            if !rule.counts_at(keep == 0 && !out.content_emitted()) {
                // This format reads its marker only at the start of the output: here it is text.
                self.prose(buf, i + keep, i + end, chunk_at, out);
                i += end;
                continue;
            }
            match rule.decide(&rest[end..], eof) {
                Decision::NeedMore => self.hold(buf, i + keep, chunk_at, out),
                Decision::Format(name) => {
                    let at = pos_of(self, out, i + keep);
                    self.start_inner(name, &buf[i + keep..], at, out);
                    self.held.clear();
                }
            }
            return;
        }
    }

    /// `buf[from..to]` is content.
    fn prose(&mut self, buf: &str, from: usize, to: usize, chunk_at: usize, out: &mut Emitter<'_>) {
        let text = buf.get(from..to).unwrap_or_default();
        if text.is_empty() {
            return;
        }
        if from >= chunk_at {
            // A slice of the chunk: recorded as its span of the output.
            out.content(text);
        } else {
            out.content_from(self.held_at.byte + from, text);
        }
    }

    /// Keep `buf[from..]` for the next feed.
    fn hold(&mut self, buf: &str, from: usize, chunk_at: usize, out: &mut Emitter<'_>) {
        let tail = buf.get(from..).unwrap_or_default();
        let at = if from < chunk_at {
            Pos {
                byte: self.held_at.byte + from,
                char: self.held_at.char + count_chars(buf.as_bytes().get(..from).unwrap_or_default()),
            }
        } else {
            out.pos(out.chunk_offset() + (from - chunk_at))
        };
        self.held = tail.to_owned();
        self.held_at = at;
    }

    /// The format `name` takes over from `text`, which is the output's bytes from `at`.
    fn start_inner(&mut self, name: &str, text: &str, at: Pos, out: &mut Emitter<'_>) {
        let Some(spec) = self.table.specs.iter().find(|s| s.name == name) else {
            out.content(text);
            return;
        };
        let format = (spec.make)();
        let format = format.with_options(&self.options).unwrap_or(format);
        let mut inner = format.stream(&self.tools);
        out.as_chunk(at, text, |sub| inner.feed(text, sub));
        self.inner = Some(inner);
    }
}

impl FormatStream for AutoStream {
    fn feed(&mut self, chunk: &str, out: &mut Emitter<'_>) {
        if let Some(inner) = self.inner.as_mut() {
            inner.feed(chunk, out);
            return;
        }
        if self.held.is_empty() {
            self.run(chunk, 0, false, out);
        } else {
            let mut buf = std::mem::take(&mut self.held);
            let chunk_at = buf.len();
            buf.push_str(chunk);
            self.run(&buf, chunk_at, false, out);
        }
    }

    fn finish(&mut self, out: &mut Emitter<'_>) {
        if self.inner.is_none() && !self.held.is_empty() {
            let buf = std::mem::take(&mut self.held);
            let len = buf.len();
            self.run(&buf, len, true, out);
        }
        if let Some(inner) = self.inner.as_mut() {
            inner.finish(out);
        }
    }

    fn holds_text(&self) -> bool {
        !self.held.is_empty() || self.inner.as_ref().is_some_and(|i| i.holds_text())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::parsers::test_support::{args, every_split};
    use crate::parsers::{guess_parser, REGISTRY};
    use serde_json::json;

    #[test]
    fn every_marker_is_decided_once() {
        for spec in REGISTRY {
            if let Recognition::SharedMarker(m) = spec.info.recognised_by {
                assert!(SHARED.iter().any(|(s, _)| *s == m), "{}: no rule for {m:?}", spec.name);
            }
        }
        let table = AutoTable::new(REGISTRY);
        let mut markers: Vec<&str> = table.markers.iter().map(|(m, _)| *m).collect();
        let n = markers.len();
        markers.sort_unstable();
        markers.dedup();
        assert_eq!(markers.len(), n, "a marker claimed twice");
    }

    #[test]
    fn guesses_by_the_first_marker() {
        let cases = [
            (
                "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
                Some("hermes"),
            ),
            (
                "<tool_call>\n<function=f>\n</function>\n</tool_call>",
                Some("qwen3_coder"),
            ),
            ("<tool_call>f\n<arg_key>a</arg_key>", Some("glm45")),
            ("<function=f>\n</function>", Some("qwen3_coder")),
            ("[TOOL_CALLS]f[ARGS]{}", Some("mistral")),
            (
                "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{}",
                Some("deepseek_v31"),
            ),
            (
                "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}",
                Some("deepseek_v3"),
            ),
            ("<|tool_calls_section_begin|>", Some("kimi_k2")),
            ("no markers here, [just](a link) and <b>html</b>", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(guess_parser(text), want, "{text:?}");
        }
    }

    #[test]
    fn parses_as_the_chosen_format_in_every_chunking() {
        let text = "Let me look.\n\n<tool_call>\n<function=read_file>\n<parameter=path>\na.rs\n</parameter>\n</function>\n</tool_call>";
        let r = every_split("auto", text);
        assert_eq!(r.content.as_deref(), Some("Let me look."));
        assert_eq!(args(&r, 0), json!({"path": "a.rs"}));
        let r = every_split(
            "auto",
            "Hi <tool_call> {\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}</tool_call>",
        );
        assert_eq!(r.content.as_deref(), Some("Hi "));
        assert_eq!(args(&r, 0), json!({"path": "x"}));
        let r = every_split("auto", "plain <tool text, nothing [TOOL] to see ");
        assert_eq!(r.content.as_deref(), Some("plain <tool text, nothing [TOOL] to see "));
        assert!(r.tool_calls.is_empty() && r.issues.is_empty());
    }
}
