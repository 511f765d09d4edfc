//! The generic streaming driver: wraps any format's state machine, tracks positions, assigns
//! call ids, checks tool names and accumulates the [`ParseResult`] from the same calls that
//! produce the events, so `Stream::result()` and `Parser::parse()` cannot disagree.

use std::sync::Arc;

use super::call_ids::CallIds;
use super::emitter::{Accum, Emitter};
use super::event_sink::EventSink;
use super::json_bytes::json_string_pass;
use super::lane::{content_pass, defer_pass, push_short, raw_string_pass, write_raw_string, Lane};
use super::options::ParserOptions;
use super::tools::Tools;
use super::types::{Event, IssueKind, ParseResult, Pos, RenderError, ToolCall};
use super::utf8::count_chars;

/// A format's incremental state machine for one model output.
///
/// Contract (checked for every format by the shared tests):
/// - `feed` is called with consecutive pieces of the output (any split, even inside a UTF-8
///   character's Python-level neighbours: chunks are always whole `str`s) and must cost
///   amortised O(chunk.len()): never re-scan text it already consumed. It may hold back a
///   bounded tail (e.g. a possible marker prefix) and must document any unbounded hold-back.
/// - `finish` flushes everything held back: after it, every byte of the output has been reported
///   either as content, as call name/arguments, or consumed as the format's own markup.
/// - Never panic, whatever the input. Report problems with [`Emitter::issue`].
pub trait FormatStream: Send {
    fn feed(&mut self, chunk: &str, out: &mut Emitter<'_>);
    fn finish(&mut self, out: &mut Emitter<'_>);

    /// Whether text fed so far is still held back (not yet consumed). Only an optimisation:
    /// when false after a feed, the driver need not keep the recent text that makes
    /// [`Emitter::pos`] exact for offsets before the next chunk. The default (true) is always
    /// correct; override it only if you never ask for positions of text you did not hold.
    fn holds_text(&self) -> bool {
        true
    }
}

/// A tool-call format: builds stream state machines and renders calls back into raw text.
pub trait Format: Send + Sync {
    /// A fresh state machine for one output. `tools` may be empty (no request tools).
    fn stream(&self, tools: &Arc<Tools>) -> Box<dyn FormatStream>;
    /// The raw model output that means `content` followed by `calls` (arguments are JSON text).
    /// Errors when the format cannot express them (the message says what and why).
    fn render(&self, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError>;
    /// This format with `options` applied, when any of them concerns it (`None`: unchanged).
    fn with_options(&self, _options: &ParserOptions) -> Option<Arc<dyn Format>> {
        None
    }
}

const WINDOW_KEEP: usize = 128;

/// One output being parsed incrementally.
///
/// `repr(C)` keeps `end_byte` and `end_char` apart: updated separately at the end of each feed
/// and read together at the start of the next, adjacent fields were loaded as one 16-byte word,
/// which x86 cannot forward from two 8-byte stores (a stall that cost a third of a small feed).
#[repr(C)]
pub struct Stream {
    format: Box<dyn FormatStream>,
    /// Bytes fed so far.
    end_byte: usize,
    acc: Accum,
    /// Code points fed so far.
    end_char: usize,
    /// The last bytes of the output (at least `WINDOW_KEEP` once that many were fed), in a fixed
    /// buffer: a `Vec` here cost a store-forwarding stall per feed.
    window: [u8; 2 * WINDOW_KEEP],
    window_len: usize,
    finished: bool,
    /// Text a [`Lane::Defer`] collected (the last bytes fed), not yet seen by the format, and
    /// its code points when every piece came with its count (then included in `end_char`;
    /// `None`: not counted yet, nor in `end_char`, to be counted once with the format's run).
    deferred: String,
    deferred_chars: Option<usize>,
    /// Text a [`Lane::JsonString`] appended verbatim to call `.0`'s arguments from byte `.1`
    /// whose code points are not in `end_char` yet: counted in one pass when a position is
    /// needed ([`Stream::settle_chars`]), not a few bytes at a time.
    uncounted: Option<(usize, usize)>,
}

impl Stream {
    fn end(&self) -> Pos {
        Pos {
            byte: self.end_byte,
            char: self.end_char,
        }
    }

    pub fn new(format: Box<dyn FormatStream>, tools: Arc<Tools>) -> Stream {
        Stream {
            format,
            acc: Accum {
                content: String::new(),
                spans: Vec::new(),
                spans_exact: true,
                calls: Vec::new(),
                issues: Vec::new(),
                issues_omitted: 0,
                open: None,
                tools,
                ids: CallIds::new(),
                lane: Lane::Off,
                resumed: Lane::Off,
            },
            end_byte: 0,
            end_char: 0,
            window: [0; 2 * WINDOW_KEEP],
            window_len: 0,
            finished: false,
            deferred: String::new(),
            deferred_chars: Some(0),
            uncounted: None,
        }
    }

    /// Feed the next piece of output; returns the events it completes.
    pub fn feed(&mut self, chunk: &str) -> Vec<Event> {
        let mut events = Vec::new();
        self.feed_into(chunk, None, Some(&mut events));
        events
    }

    /// Feed with the chunk's code-point count already known (Python gives it for free), appending
    /// events to `events` when given (`None`: only the result is accumulated, as `parse` does).
    pub fn feed_into(&mut self, chunk: &str, chars: Option<usize>, events: Option<&mut Vec<Event>>) {
        self.feed_sink(chunk, chars, events.map(|e| e as &mut dyn EventSink));
    }

    /// [`Stream::feed_into`] with any [`EventSink`]. `#[inline]`: a caller feeding small chunks in
    /// a loop runs an open lane (see [`Lane`]) without a call.
    #[inline]
    pub fn feed_sink(&mut self, chunk: &str, chars: Option<usize>, mut events: Option<&mut dyn EventSink>) {
        if self.acc.lane != Lane::Off && self.pass_lane(chunk, chars, events.as_deref_mut()) {
            return;
        }
        self.feed_format(chunk, chars, events);
    }

    /// A feed through the format. Out of line: the lane's fast path above then keeps its few
    /// registers to itself in a caller's loop.
    #[inline(never)]
    fn feed_format(&mut self, chunk: &str, chars: Option<usize>, events: Option<&mut dyn EventSink>) {
        if self.finished {
            self.fed_after_finish(chunk);
            return;
        }
        if self.deferred.is_empty() {
            self.run_format(chunk, chars, events);
            return;
        }
        // The collected text and this chunk go to the format as one piece.
        let (mut text, deferred_chars) = self.take_deferred();
        text.push_str(chunk);
        let chars = chars.zip(deferred_chars).map(|(a, b)| a + b);
        self.run_format(&text, chars, events);
        text.clear();
        self.deferred = text;
    }

    /// The deferred text, with the counters moved back to where it starts (the format has not
    /// seen it yet).
    fn take_deferred(&mut self) -> (String, Option<usize>) {
        let text = std::mem::take(&mut self.deferred);
        self.end_byte -= text.len();
        let chars = self.deferred_chars.replace(0);
        self.end_char -= chars.unwrap_or(0);
        (text, chars)
    }

    /// Add the code points of text a lane left uncounted to `end_char`.
    #[cold]
    fn settle_chars(&mut self) {
        if let Some((index, start)) = self.uncounted.take() {
            let text = self
                .acc
                .calls
                .get(index)
                .and_then(|c| c.arguments.as_bytes().get(start..));
            self.end_char += count_chars(text.unwrap_or_default());
        }
    }

    /// Feed `chunk` (which starts at the end of what the format has seen) to the format.
    fn run_format<'e>(&mut self, chunk: &str, chars: Option<usize>, events: Option<&mut (dyn EventSink + 'e)>) {
        if self.uncounted.is_some() {
            self.settle_chars();
        }
        let (base, window) = (self.end(), self.window.get(..self.window_len).unwrap_or_default());
        let mut out = Emitter::new(&mut self.acc, events, chunk.as_bytes(), window, base);
        self.format.feed(chunk, &mut out);
        let counted = match chars {
            Some(n) => n,
            None if out.cursor.0 == chunk.len() => out.cursor.1,
            None => out.cursor.1 + count_chars(chunk.as_bytes().get(out.cursor.0..).unwrap_or_default()),
        };
        self.end_byte += chunk.len();
        self.end_char += counted;
        // A format that opened a lane passing text on holds none (see `Lane`): no need to ask.
        let holds = match self.acc.lane {
            Lane::JsonString { .. } | Lane::RawString { .. } | Lane::Content { .. } => false,
            Lane::Off | Lane::Defer { .. } => self.format.holds_text(),
        };
        if holds {
            self.remember(chunk.as_bytes());
        } else {
            self.window_len = 0;
        }
    }

    /// The open lane's fast path: when the lane accepts `chunk`, append it to the open call's
    /// arguments (as the format would have) and return true without calling the format.
    #[inline(always)]
    fn pass_lane<'e>(&mut self, chunk: &str, chars: Option<usize>, events: Option<&mut (dyn EventSink + 'e)>) -> bool {
        // Each lane's fields are read and written one by one: copying and comparing the whole
        // `Lane` cost a dozen instructions a feed.
        match self.acc.lane {
            Lane::JsonString { escaped } => {
                let Some(after) = json_string_pass(escaped, chunk.as_bytes()) else {
                    return false;
                };
                if after != escaped {
                    self.acc.lane = Lane::JsonString { escaped: after };
                }
                self.pass_args(chunk, None, chars, events);
            }
            Lane::RawString {
                stop,
                framed,
                newline_held,
            } => {
                let Some((after, escapes)) = raw_string_pass(stop, framed, newline_held, chunk.as_bytes()) else {
                    return false;
                };
                if after != newline_held {
                    self.acc.lane = Lane::RawString {
                        stop,
                        framed,
                        newline_held: after,
                    };
                }
                self.pass_args(chunk, Some((framed, newline_held, escapes)), chars, events);
            }
            Lane::Defer { until } => {
                if !defer_pass(until, chunk.as_bytes()) {
                    return false;
                }
                self.defer(chunk, chars);
            }
            Lane::Content { stop, hold_trailing_ws } => {
                if !content_pass(stop, hold_trailing_ws, chunk.as_bytes()) {
                    return false;
                }
                self.pass_content(chunk, hold_trailing_ws, chars, events);
            }
            Lane::Off => return false,
        }
        true
    }

    /// `chunk` passed an arguments lane: append it to the open call's arguments, verbatim or
    /// (`raw`: a raw-string lane's `framed` and `newline_held`) JSON-escaped.
    #[inline]
    fn pass_args<'e>(
        &mut self,
        chunk: &str,
        raw: Option<(bool, bool, bool)>,
        chars: Option<usize>,
        events: Option<&mut (dyn EventSink + 'e)>,
    ) {
        // A format opens these lanes only with a call open (see `Emitter::set_lane`).
        let mut counted = chars;
        if let Some(index) = self.acc.open {
            if let Some(call) = self.acc.calls.get_mut(index) {
                let written = match raw {
                    None => {
                        if counted.is_none() {
                            // The text stays in the arguments as it is: count it later, in bulk.
                            self.uncounted.get_or_insert((index, call.arguments.len()));
                            counted = Some(0);
                        }
                        push_short(&mut call.arguments, chunk);
                        chunk
                    }
                    Some((framed, newline_held, escapes)) => {
                        write_raw_string(framed, newline_held, escapes, chunk, &mut call.arguments)
                    }
                };
                if let Some(events) = events {
                    events.args(index, written);
                }
            }
        }
        self.end_byte += chunk.len();
        self.end_char += counted.unwrap_or_else(|| count_chars(chunk.as_bytes()));
        // A format opens a lane only while it holds no text, so it asks no positions before
        // its next chunk.
        self.window_len = 0;
    }

    /// `chunk` is content as it is ([`Lane::Content`]): what [`Emitter::content`] does for a
    /// slice of the chunk. Out of line: prose is a small part of a long output, and inlined it
    /// slowed the argument lanes' loop.
    #[inline(never)]
    fn pass_content<'e>(
        &mut self,
        chunk: &str,
        hold_trailing_ws: bool,
        chars: Option<usize>,
        mut events: Option<&mut (dyn EventSink + 'e)>,
    ) {
        // With `hold_trailing_ws`, the chunk's trailing whitespace waits in `deferred` (the lane
        // accepted the chunk, so the split is clear); whitespace waiting there goes out first
        // when text follows.
        let body_end = if hold_trailing_ws {
            super::lane::trailing_ws_start(chunk.as_bytes()).unwrap_or(chunk.len())
        } else {
            chunk.len()
        };
        let (body, ws) = chunk.split_at(body_end);
        if !body.is_empty() {
            if !self.deferred.is_empty() {
                let ws = std::mem::take(&mut self.deferred);
                let start = self.end_byte - ws.len();
                if self.deferred_chars.replace(0).is_none() {
                    self.end_char += ws.len();
                }
                self.push_lane_content(start, &ws, events.as_deref_mut());
                self.deferred = ws;
                self.deferred.clear();
            }
            self.push_lane_content(self.end_byte, body, events);
        }
        self.end_byte += body.len();
        // The whitespace is ASCII: the body's characters are the chunk's less its bytes.
        self.end_char += chars.map_or_else(|| count_chars(body.as_bytes()), |n| n - ws.len());
        if !ws.is_empty() {
            // ASCII: its characters are its bytes.
            self.defer(ws, Some(ws.len()));
        }
        self.window_len = 0;
    }

    /// Content `text` that is the output's bytes from `start`, passed by a lane.
    fn push_lane_content<'e>(&mut self, start: usize, text: &str, events: Option<&mut (dyn EventSink + 'e)>) {
        self.acc.content.push_str(text);
        if self.acc.spans_exact {
            match self.acc.spans.last_mut() {
                Some(last) if last.1 == start => last.1 += text.len(),
                _ => self.acc.spans.push((start, start + text.len())),
            }
        }
        if let Some(events) = events {
            events.content(text);
        }
    }

    /// Collect `chunk` for a [`Lane::Defer`]: counted as fed, seen by the format later.
    #[inline]
    fn defer(&mut self, chunk: &str, chars: Option<usize>) {
        push_short(&mut self.deferred, chunk);
        self.end_byte += chunk.len();
        match (chars, self.deferred_chars) {
            (Some(n), Some(d)) => {
                self.deferred_chars = Some(d + n);
                self.end_char += n;
            }
            // Counted once, over the whole deferred text, when the format runs.
            (None, Some(d)) => {
                self.deferred_chars = None;
                self.end_char -= d;
            }
            (_, None) => {}
        }
    }

    /// Kept out of line: a feed's hot path then needs fewer registers saved and restored.
    #[cold]
    #[inline(never)]
    fn fed_after_finish(&mut self, chunk: &str) {
        if !chunk.is_empty() {
            let at = self.end();
            let msg = "text fed after finish() was ignored; start a new stream for a new output";
            self.acc.push_issue(IssueKind::UnexpectedText, at, msg);
        }
    }

    /// Keep the last bytes of the output so positions of held-back text stay exact.
    #[inline(never)]
    fn remember(&mut self, chunk: &[u8]) {
        let n = chunk.len();
        if n >= WINDOW_KEEP {
            self.window[..WINDOW_KEEP].copy_from_slice(&chunk[n - WINDOW_KEEP..]);
            self.window_len = WINDOW_KEEP;
            return;
        }
        if self.window_len + n > 2 * WINDOW_KEEP {
            // Keep the newest WINDOW_KEEP - n bytes, so the window holds WINDOW_KEEP after the copy.
            let keep = WINDOW_KEEP - n;
            self.window.copy_within(self.window_len - keep..self.window_len, 0);
            self.window_len = keep;
        }
        self.window[self.window_len..self.window_len + n].copy_from_slice(chunk);
        self.window_len += n;
    }

    /// End of output: flush what is held back and report unfinished calls. Idempotent.
    pub fn finish(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        self.finish_into(Some(&mut events));
        events
    }

    pub fn finish_into(&mut self, events: Option<&mut Vec<Event>>) {
        self.finish_sink(events.map(|e| e as &mut dyn EventSink));
    }

    pub fn finish_sink(&mut self, mut events: Option<&mut dyn EventSink>) {
        if self.finished {
            return;
        }
        self.settle_chars();
        if !self.deferred.is_empty() {
            let (text, chars) = self.take_deferred();
            self.run_format(&text, chars, events.as_deref_mut());
        }
        self.finished = true;
        let (base, window) = (self.end(), self.window.get(..self.window_len).unwrap_or_default());
        let mut out = Emitter::new(&mut self.acc, events, &[], window, base);
        self.format.finish(&mut out);
        out.end_call();
    }

    /// Report a problem found outside the format (e.g. the binding replaced invalid Unicode in the
    /// chunk about to be fed); `rel_byte` is relative to the next chunk, `rel_char` likewise.
    pub fn report_ahead(&mut self, kind: IssueKind, rel_byte: usize, rel_char: usize, message: impl Into<String>) {
        self.settle_chars();
        let uncounted = match self.deferred_chars {
            Some(_) => 0,
            None => count_chars(self.deferred.as_bytes()),
        };
        let at = Pos {
            byte: self.end_byte + rel_byte,
            char: self.end_char + uncounted + rel_char,
        };
        self.acc.push_issue(kind, at, message);
    }

    /// Count `n` more problems found outside the format that are not stored (the caller stopped
    /// collecting them once [`MAX_ISSUES`](super::MAX_ISSUES) were reported).
    pub fn count_omitted_issues(&mut self, n: usize) {
        self.acc.issues_omitted += n;
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The byte ranges of the fed text that `content` is made of, in order, when it is made only
    /// of such slices (`None` when a format produced content from its own buffers). Bindings use
    /// it to build the content from the caller's string without re-encoding it.
    pub fn content_spans(&self) -> Option<&[(usize, usize)]> {
        self.acc.spans_exact.then_some(self.acc.spans.as_slice())
    }

    /// The lane the driver runs for the next chunk ([`Lane::Off`]: the format sees it). For tests
    /// and diagnostics: whether a format's long states are passed on without calling it.
    pub fn lane(&self) -> Lane {
        self.acc.lane
    }

    /// Bytes fed so far.
    pub fn offset(&self) -> usize {
        self.end_byte
    }

    /// Everything extracted so far (after `finish`: the final result).
    pub fn result(&self) -> ParseResult {
        ParseResult {
            content: if self.acc.content.is_empty() {
                None
            } else {
                Some(self.acc.content.clone())
            },
            tool_calls: self.acc.calls.clone(),
            issues: self.acc.issues.clone(),
            issues_omitted: self.acc.issues_omitted,
        }
    }

    /// The result without copying (use after `finish`).
    pub fn into_result(self) -> ParseResult {
        let content = if self.acc.content.is_empty() {
            None
        } else {
            Some(self.acc.content)
        };
        ParseResult {
            content,
            tool_calls: self.acc.calls,
            issues: self.acc.issues,
            issues_omitted: self.acc.issues_omitted,
        }
    }
}
