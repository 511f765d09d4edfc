//! The described format "a section of calls, each a header and raw JSON arguments between
//! special tokens" — DeepSeek-V3, DeepSeek-V3.1 and Kimi-K2 are rows of it:
//!
//! ```text
//! SECTION_BEGIN ( CALL_BEGIN header SEP arguments CALL_END )* SECTION_END
//! ```
//!
//! # Semantics
//! - The arguments are scanned with a real JSON grammar, so marker text inside a JSON string is
//!   string text (the corpus's `intended`; vLLM's regexes cut such calls short). The call starts
//!   (`ToolCallStart`) at the first byte of its arguments and the raw JSON text streams as it
//!   arrives, byte-exact. Non-object arguments are passed on as written with `bad_arguments`.
//! - Content is the text outside sections; see [`Gate`] for the whitespace policy each row uses.
//! - Hold-back: a marker's length of plain text; inside a call, its header (the tool name / call
//!   id, until the separator marker).
//!
//! # Bad input (never raises, never loses text)
//! - A call whose header is broken (a marker other than the separator comes first, empty name)
//!   or that has no arguments is returned as content, markers included, with an issue; so is a
//!   section with no call in it.
//! - JSON that breaks inside started arguments: the rest up to the call's end marker is appended
//!   verbatim (`arguments` is then the raw text) with `malformed_json`; once the JSON is broken
//!   the end marker is recognised anywhere.
//! - Text where only markers may appear (inside a section, after a call's arguments) is kept in
//!   content with `unexpected_text`.
//! - The output ending inside a call: a started call keeps the arguments received so far
//!   (`truncated`); an unstarted one is returned as content (`truncated`).

use crate::parsers::json_scan::Status;
use crate::parsers::lane::Lane;
use crate::parsers::marker::{MarkerHit, MarkerSet};
use crate::parsers::types::{IssueKind, Pos};
use crate::parsers::Emitter;

use super::content_gate::Gate;
use super::json_args::ArgsValue;
use super::machine::{Machine, Step};
use crate::parsers::json_bytes::{skip_ws, skip_ws_into};

/// How a call's header names the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Header {
    /// `NAME SEP` (DeepSeek-V3.1).
    Name,
    /// `functions.NAME:IDX SEP`: the whole header is the call id (Kimi-K2).
    KimiId,
    /// `TYPE SEP NAME\n```json\n{..}\n``` ` (DeepSeek-V3): the name is on the line after the
    /// separator and the arguments may be fenced.
    TypeThenNameLine,
}

/// The description of one row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SectionSpec {
    pub section_begin: &'static str,
    pub section_end: &'static str,
    pub call_begin: &'static str,
    pub sep: &'static str,
    pub call_end: &'static str,
    pub header: Header,
    /// [`Gate`] policy: drop whitespace at the edges of the markup.
    pub strip_edges: bool,
    /// [`Gate`] policy: drop trailing whitespace after the calls.
    pub drop_tail_ws: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    /// Inside a section, between calls.
    Section,
    /// After CALL_BEGIN, reading the header up to SEP.
    Header,
    /// DeepSeek-V3: after SEP, reading the name line.
    NameLine,
    /// Before the arguments' first byte (whitespace, DeepSeek-V3's opening fence).
    PreArgs,
    Args,
    /// After broken JSON in started arguments: raw text up to the call's end marker.
    RawArgs,
    /// A call that is not a call: raw text up to (and including) its end marker is content.
    RawContent,
    /// After the arguments: whitespace, DeepSeek-V3's closing fence, then CALL_END.
    AfterArgs,
}

// Marker indices in `inner`.
const M_CALL_BEGIN: usize = 0;
const M_SECTION_END: usize = 1;
const M_SEP: usize = 2;
const M_CALL_END: usize = 3;

pub(crate) struct Sectioned {
    spec: SectionSpec,
    text_markers: MarkerSet,
    /// call_begin, section_end, sep, call_end (in that index order).
    inner: MarkerSet,
    gate: Gate,
    mode: Mode,
    /// Markup of the current section not yet accounted for (returned as content if the section
    /// turns out to hold no call).
    section_raw: String,
    section_calls: usize,
    /// Raw text of the current call while it has not started.
    raw: String,
    header: String,
    name: String,
    call_at: Pos,
    fence_open: bool,
    args: ArgsValue,
    /// Whitespace between markers in a section (framing unless other text follows).
    gap_ws: String,
    gap_reported: bool,
}

impl Sectioned {
    pub(crate) fn new(spec: SectionSpec) -> Sectioned {
        Sectioned {
            spec,
            text_markers: MarkerSet::new(&[spec.section_begin]),
            inner: MarkerSet::new(&[spec.call_begin, spec.section_end, spec.sep, spec.call_end]),
            gate: Gate::new(spec.strip_edges, spec.drop_tail_ws),
            mode: Mode::Text,
            section_raw: String::new(),
            section_calls: 0,
            raw: String::new(),
            header: String::new(),
            name: String::new(),
            call_at: Pos::default(),
            fence_open: false,
            args: ArgsValue::new(),
            gap_ws: String::new(),
            gap_reported: false,
        }
    }

    /// Content found inside a section: the section's own markup so far goes out first.
    fn section_text(&mut self, s: &str, out: &mut Emitter<'_>) {
        if s.is_empty() {
            return;
        }
        let raw = std::mem::take(&mut self.section_raw);
        self.gate.text(&raw, out);
        self.gate.text(s, out);
    }

    fn begin_call(&mut self, at: usize, out: &mut Emitter<'_>) {
        self.call_at = out.pos(at);
        self.raw.clear();
        self.raw.push_str(self.spec.call_begin);
        self.header.clear();
        self.name.clear();
        self.fence_open = false;
        self.args.reset();
        self.mode = Mode::Header;
    }

    /// The current call is not a call: its text so far is content; `then` is the next mode.
    fn reject_call(&mut self, kind: IssueKind, at: Pos, msg: String, then: Mode, out: &mut Emitter<'_>) {
        out.issue(kind, at, msg);
        let raw = std::mem::take(&mut self.raw);
        self.section_text(&raw, out);
        self.mode = then;
    }

    /// Name (and id) from the header, once the separator (or, for V3, the name line) is read.
    fn name_and_id(&self) -> (String, Option<String>) {
        match self.spec.header {
            Header::Name => (self.header.trim().to_owned(), None),
            Header::TypeThenNameLine => (self.name.trim().to_owned(), None),
            Header::KimiId => {
                let id = self.header.trim();
                let without_prefix = id.strip_prefix("functions.").unwrap_or(id);
                let name = match without_prefix.rfind(':') {
                    Some(colon) => without_prefix.get(..colon).unwrap_or_default(),
                    None => without_prefix,
                };
                (name.trim().to_owned(), Some(id.to_owned()))
            }
        }
    }

    /// Handle a marker met where only markers are expected (between calls).
    fn section_marker(&mut self, marker: usize, at: usize, base: usize, out: &mut Emitter<'_>) {
        match marker {
            M_CALL_BEGIN => self.begin_call(base + at, out),
            M_SECTION_END => {
                if self.section_calls == 0 {
                    let pos = out.pos(base + at);
                    out.issue(
                        IssueKind::MalformedMarkup,
                        pos,
                        "tool-call section without any call; its markers are kept as content",
                    );
                    let mut raw = std::mem::take(&mut self.section_raw);
                    raw.push_str(self.spec.section_end);
                    self.gate.text(&raw, out);
                } else {
                    self.gate.markup(out);
                }
                self.section_raw.clear();
                self.mode = Mode::Text;
            }
            _ => {
                // A stray separator or call end between calls: keep it as text.
                let pos = out.pos(base + at);
                out.issue(
                    IssueKind::MalformedMarkup,
                    pos,
                    "marker out of place in the tool-call section; kept as content",
                );
                let stray = self.inner.marker(marker).to_vec();
                self.section_text(&String::from_utf8_lossy(&stray), out);
            }
        }
    }

    /// Issues for a header that still names a tool but is not as the format writes it.
    fn check_header(&mut self, at: Pos, out: &mut Emitter<'_>) {
        let header = self.header.trim();
        match self.spec.header {
            Header::TypeThenNameLine if header != "function" => {
                let msg = format!("tool call type {header:?} where \"function\" was expected; the call is kept");
                out.issue(IssueKind::MalformedMarkup, at, msg);
            }
            Header::KimiId if !header.is_empty() && !header.contains(':') => {
                let msg = format!("tool call id {header:?} lacks its \":IDX\" suffix; the call is kept");
                out.issue(IssueKind::MalformedMarkup, at, msg);
            }
            _ => {}
        }
    }

    fn start_call(&mut self, out: &mut Emitter<'_>) {
        if self.section_calls == 0 {
            self.gate.markup(out);
        }
        let (name, id) = self.name_and_id();
        out.start_call(&name, id, self.call_at);
        self.raw.clear();
        self.section_calls += 1;
        self.section_raw.clear();
    }
}

/// What the start of a DeepSeek-V3 argument fence looks like.
enum Fence {
    /// "```", an optional alphanumeric tag of at most 16 bytes and a newline: `len` bytes.
    Line(usize),
    /// Could still become a fence line with more input.
    Undecided,
    Invalid,
}

fn fence_line(b: &[u8]) -> Fence {
    const MAX_TAG: usize = 16;
    let ticks = b.iter().take(3).take_while(|&&c| c == b'`').count();
    if ticks < 3 {
        return if ticks == b.len() {
            Fence::Undecided
        } else {
            Fence::Invalid
        };
    }
    let tag = b
        .iter()
        .skip(3)
        .take(MAX_TAG + 1)
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    if tag > MAX_TAG {
        return Fence::Invalid;
    }
    let at = 3 + tag;
    match (b.get(at), b.get(at + 1)) {
        (None, _) | (Some(b'\r'), None) => Fence::Undecided,
        (Some(b'\n'), _) => Fence::Line(at + 1),
        (Some(b'\r'), Some(b'\n')) => Fence::Line(at + 2),
        _ => Fence::Invalid,
    }
}

impl Machine for Sectioned {
    fn step(&mut self, rest: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> Step {
        match self.mode {
            Mode::Text => {
                let (at, hit) = self.gate.until(&self.text_markers, rest, eof, out);
                let Some((end, _)) = hit else { return Step::Wait(at) };
                // The marker is markup once a call of the section starts (gate.markup then).
                self.section_raw.clear();
                self.section_raw.push_str(self.spec.section_begin);
                self.section_calls = 0;
                self.close_gap();
                self.mode = Mode::Section;
                Step::On(end)
            }
            Mode::Section => {
                let (at, hit) = self.inner.until(rest, eof);
                self.section_gap(&rest[..at], base, out);
                let Some((end, marker)) = hit else {
                    return Step::Wait(at);
                };
                self.close_gap();
                self.section_marker(marker, at, base, out);
                Step::On(end)
            }
            Mode::Header => match self.inner.find(rest, eof) {
                MarkerHit::Full { at, end, marker: M_SEP } => {
                    self.header.push_str(&rest[..at]);
                    self.raw.push_str(&rest[..end]);
                    let sep_at = out.pos(base + at);
                    self.check_header(sep_at, out);
                    if self.spec.header == Header::TypeThenNameLine {
                        self.mode = Mode::NameLine;
                    } else if self.name_and_id().0.is_empty() {
                        let pos = out.pos(base + end);
                        let msg = "tool call without a name; the call is kept as content".to_owned();
                        self.reject_call(IssueKind::MissingName, pos, msg, Mode::RawContent, out);
                    } else {
                        self.mode = Mode::PreArgs;
                    }
                    Step::On(end)
                }
                MarkerHit::Full { at, marker, .. } => {
                    // Another marker before the separator: the header is broken.
                    self.header.push_str(&rest[..at]);
                    self.raw.push_str(&rest[..at]);
                    let pos = out.pos(base + at);
                    let msg = format!(
                        "tool call header without {:?} before {:?}; the call is kept as content",
                        self.spec.sep,
                        String::from_utf8_lossy(self.inner.marker(marker))
                    );
                    self.reject_call(IssueKind::MalformedMarkup, pos, msg, Mode::Section, out);
                    if marker == M_CALL_END {
                        // The broken call's own end marker belongs to it.
                        self.section_text(self.spec.call_end, out);
                        return Step::On(at + self.spec.call_end.len());
                    }
                    Step::On(at)
                }
                MarkerHit::Partial { at } => {
                    self.header.push_str(&rest[..at]);
                    self.raw.push_str(&rest[..at]);
                    Step::Wait(at)
                }
                MarkerHit::None => {
                    self.header.push_str(rest);
                    self.raw.push_str(rest);
                    Step::Wait(rest.len())
                }
            },
            Mode::NameLine => {
                // The name runs to the end of its line (or to a fence / the JSON itself).
                let stop = rest.bytes().position(|b| matches!(b, b'\n' | b'`' | b'{' | b'<'));
                let Some(j) = stop else {
                    self.name.push_str(rest);
                    self.raw.push_str(rest);
                    return Step::Wait(rest.len());
                };
                self.name.push_str(&rest[..j]);
                self.raw.push_str(&rest[..j]);
                if self.name.trim().is_empty() {
                    let pos = out.pos(base + j);
                    let msg = "tool call without a name; the call is kept as content".to_owned();
                    self.reject_call(IssueKind::MissingName, pos, msg, Mode::RawContent, out);
                } else {
                    self.mode = Mode::PreArgs;
                }
                Step::On(j)
            }
            Mode::PreArgs => {
                let Some(j) = skip_ws_into(&mut self.raw, rest) else {
                    return Step::Wait(rest.len());
                };
                let args = &rest[j..];
                if self.spec.header == Header::TypeThenNameLine && !self.fence_open && args.starts_with('`') {
                    // ```json (the language tag is optional) then a newline; decided within
                    // the first few bytes, whatever the chunking.
                    return match fence_line(args.as_bytes()) {
                        Fence::Line(len) => {
                            self.raw.push_str(&args[..len]);
                            self.fence_open = true;
                            Step::On(j + len)
                        }
                        Fence::Undecided if !eof => Step::Wait(j),
                        _ => {
                            let pos = out.pos(base + j);
                            let msg = "malformed ``` fence line in a tool call; the call is kept as content";
                            self.reject_call(IssueKind::MalformedMarkup, pos, msg.into(), Mode::RawContent, out);
                            Step::On(j)
                        }
                    };
                }
                match self.inner.find(args, eof) {
                    MarkerHit::Partial { at: 0 } => return Step::Wait(j),
                    MarkerHit::Full { at: 0, .. } => {
                        let pos = out.pos(base + j);
                        let msg = "tool call without arguments; the call is kept as content".to_owned();
                        self.reject_call(IssueKind::MissingArguments, pos, msg, Mode::RawContent, out);
                    }
                    _ => {
                        if self.spec.header == Header::TypeThenNameLine && !self.fence_open {
                            let pos = out.pos(base + j);
                            let msg = "tool call arguments without their ```json fence; the call is kept";
                            out.issue(IssueKind::MalformedMarkup, pos, msg);
                        }
                        self.start_call(out);
                        self.mode = Mode::Args;
                    }
                }
                Step::On(j)
            }
            Mode::Args => {
                let (n, status) = self.args.feed(rest, base, out);
                self.mode = match status {
                    Status::NeedMore => return Step::Wait(rest.len()),
                    Status::Complete => Mode::AfterArgs,
                    Status::Error(_) => Mode::RawArgs,
                };
                Step::On(n)
            }
            Mode::RawArgs | Mode::RawContent => {
                let is_args = self.mode == Mode::RawArgs;
                let (take, next, done) = match self.inner.find(rest, eof) {
                    // The call's own end marker: raw arguments stop before it; a rejected
                    // call's content includes it.
                    MarkerHit::Full {
                        at,
                        end,
                        marker: M_CALL_END,
                    } => (if is_args { at } else { end }, end, true),
                    // The next call or the section end: the broken call stops here.
                    MarkerHit::Full {
                        at,
                        marker: M_CALL_BEGIN | M_SECTION_END,
                        ..
                    } => (at, at, true),
                    // A separator inside raw text is just text.
                    MarkerHit::Full { end, .. } => (end, end, false),
                    MarkerHit::Partial { at } => {
                        self.raw_text(is_args, &rest[..at], out);
                        return Step::Wait(at);
                    }
                    MarkerHit::None => (rest.len(), rest.len(), false),
                };
                self.raw_text(is_args, &rest[..take], out);
                if done {
                    if is_args {
                        self.gate.end_call(out);
                    }
                    self.mode = Mode::Section;
                }
                Step::On(next)
            }
            Mode::AfterArgs => {
                let Some(j) = skip_ws(rest) else {
                    return Step::Wait(rest.len());
                };
                let after = &rest[j..];
                if self.spec.header == Header::TypeThenNameLine && self.fence_open && after.starts_with('`') {
                    let ticks = after.bytes().take_while(|&b| b == b'`').count();
                    if ticks == after.len() && ticks < 3 && !eof {
                        return Step::Wait(j);
                    }
                    if ticks >= 3 {
                        self.fence_open = false;
                        return Step::On(j + 3);
                    }
                }
                match self.inner.find(after, eof) {
                    MarkerHit::Full {
                        at: 0,
                        end,
                        marker: M_CALL_END,
                    } => {
                        if self.fence_open {
                            let pos = out.pos(base + j);
                            out.issue(
                                IssueKind::MalformedMarkup,
                                pos,
                                "tool call arguments' ``` fence is not closed; the call is kept",
                            );
                        }
                        self.gate.end_call(out);
                        self.mode = Mode::Section;
                        return Step::On(j + end);
                    }
                    MarkerHit::Partial { at: 0 } => return Step::Wait(j),
                    MarkerHit::Full { at: 0, .. } => {
                        // The next call or the section end without this call's end marker.
                        let pos = out.pos(base + j);
                        let msg = format!("tool call without {:?}; the call is kept", self.spec.call_end);
                        out.issue(IssueKind::MalformedMarkup, pos, msg);
                        self.gate.end_call(out);
                        self.mode = Mode::Section;
                    }
                    _ => {
                        let pos = out.pos(base + j);
                        let msg = "text after a tool call's arguments; it is kept in content".to_owned();
                        out.issue(IssueKind::UnexpectedText, pos, msg);
                        self.gate.end_call(out);
                        // The rest of the call, up to its end marker, is content.
                        self.mode = Mode::RawContent;
                    }
                }
                Step::On(j)
            }
        }
    }

    fn lane(&self) -> Lane {
        match self.mode {
            Mode::Args => self.args.string_lane(),
            Mode::Text => self.gate.content_lane(self.text_markers.first_byte()),
            _ => Lane::Off,
        }
    }

    fn resume_lane(&mut self, lane: Lane) {
        if self.mode == Mode::Args {
            self.args.resume_lane(lane);
        }
    }

    fn end(&mut self, leftover: &str, out: &mut Emitter<'_>) {
        let end = out.pos(out.chunk_offset());
        match self.mode {
            Mode::Text => self.gate.text(leftover, out),
            Mode::Section => {
                self.section_gap(leftover, out.chunk_offset().saturating_sub(leftover.len()), out);
                if self.section_calls == 0 {
                    let msg = format!(
                        "output ended in a tool-call section without calls; {:?} is kept as content",
                        self.spec.section_begin
                    );
                    out.issue(IssueKind::Truncated, end, msg);
                    let mut raw = std::mem::take(&mut self.section_raw);
                    raw.push_str(&self.gap_ws);
                    self.gate.text(&raw, out);
                } else {
                    let msg = format!(
                        "output ended before {:?}; the calls are complete and kept",
                        self.spec.section_end
                    );
                    out.issue(IssueKind::Truncated, end, msg);
                }
            }
            Mode::Header | Mode::NameLine | Mode::PreArgs => {
                self.raw.push_str(leftover);
                let msg = "output ended inside a tool call's header; the call is kept as content".to_owned();
                self.reject_call(IssueKind::Truncated, end, msg, Mode::Text, out);
            }
            Mode::Args => {
                out.args(leftover);
                if self.args.end() != Status::Complete {
                    let msg = "output ended inside a tool call's arguments; they are incomplete".to_owned();
                    out.issue(IssueKind::Truncated, end, msg);
                } else {
                    let msg = format!(
                        "output ended before {:?}; the call is complete and kept",
                        self.spec.call_end
                    );
                    out.issue(IssueKind::Truncated, end, msg);
                }
                out.end_call();
            }
            Mode::RawArgs => {
                out.args(leftover);
                out.end_call();
            }
            Mode::RawContent => self.section_text(leftover, out),
            Mode::AfterArgs => {
                out.end_call();
                if skip_ws(leftover).is_some() {
                    self.section_text(leftover, out);
                }
                let msg = format!(
                    "output ended before {:?}; the call is complete and kept",
                    self.spec.call_end
                );
                out.issue(IssueKind::Truncated, end, msg);
            }
        }
        self.gate.finish(out);
        self.mode = Mode::Text;
    }
}

impl Sectioned {
    fn raw_text(&mut self, is_args: bool, s: &str, out: &mut Emitter<'_>) {
        if is_args {
            out.args(s);
        } else {
            self.section_text(s, out);
        }
    }

    /// Text between markers inside a section: whitespace is framing, anything else is content
    /// (whitespace is held until that is decided).
    fn section_gap(&mut self, s: &str, at: usize, out: &mut Emitter<'_>) {
        if s.is_empty() {
            return;
        }
        if self.gap_reported {
            self.section_text(s, out);
            return;
        }
        match skip_ws(s) {
            None => self.gap_ws.push_str(s),
            Some(j) => {
                let pos = out.pos(at + j);
                out.issue(
                    IssueKind::UnexpectedText,
                    pos,
                    "text inside the tool-call section, where only calls may appear; it is kept in content",
                );
                self.gap_reported = true;
                let ws = std::mem::take(&mut self.gap_ws);
                self.section_text(&ws, out);
                self.section_text(s, out);
            }
        }
    }

    /// A marker ends the gap: held whitespace was framing.
    fn close_gap(&mut self) {
        self.gap_ws.clear();
        self.gap_reported = false;
    }
}
