//! The generic streaming driver: wraps any format's state machine, tracks positions, assigns
//! call ids, checks tool names and accumulates the [`ParseResult`] from the same calls that
//! produce the events, so `Stream::result()` and `Parser::parse()` cannot disagree.

use std::sync::Arc;

pub use super::event_sink::EventSink;
use super::lane::{content_pass, defer_pass, json_string_pass, push_short, raw_string_pass, write_raw_string, Lane};
use super::registry::ParserOptions;
use super::tools::Tools;
use super::types::{Event, IssueKind, ParseIssue, ParseResult, Pos, RenderError, ToolCall, MAX_ISSUES};

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

/// Number of Unicode code points in `s` (counts the bytes that start a character).
#[inline]
pub fn count_chars(s: &[u8]) -> usize {
    if s.len() < 32 {
        return count_chars_short(s);
    }
    // Per block of 255 bytes the count fits a u8, which lets the loop vectorise 16+ bytes wide.
    s.chunks(255)
        .map(|block| block.iter().fold(0u8, |n, &b| n + u8::from((b as i8) >= -0x40)) as usize)
        .sum()
}

/// Continuation bytes (`0b10xx_xxxx`) among the 8 bytes of `w`: bit 7 set and bit 6 clear.
#[inline]
fn continuation_bytes(w: u64) -> usize {
    // One bit per continuation byte, moved to bit 0 of its byte; the multiply sums the 8 bytes
    // into the top byte (at most 8, no carry). `count_ones` is a ~15-instruction software
    // routine on the baseline x86-64 target (no `popcnt`).
    let flags = (w & !(w << 1) & 0x8080_8080_8080_8080) >> 7;
    (flags.wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize
}

/// [`count_chars`] for the few bytes of a streamed chunk: whole 8-byte words, then the tail as
/// one word overlapping the last one (its already-counted bytes shifted out), so a 4-byte feed
/// costs a handful of instructions instead of a loop over bytes.
#[inline]
fn count_chars_short(s: &[u8]) -> usize {
    let n = s.len();
    if n < 4 {
        return s.iter().filter(|&&b| (b as i8) >= -0x40).count();
    }
    if n <= 8 {
        // Two overlapping 4-byte words cover 4..=8 bytes; drop the overlap from the second.
        let (Some(a), Some(b)) = (s.first_chunk::<4>(), s.last_chunk::<4>()) else {
            return 0;
        };
        let lo = u64::from(u32::from_le_bytes(*a));
        let hi = u64::from(u32::from_le_bytes(*b)) >> (8 * (8 - n));
        let w = lo | (hi << 32);
        // ASCII (most code and prose): every byte is a character.
        if w & 0x8080_8080_8080_8080 == 0 {
            return n;
        }
        return n - continuation_bytes(w);
    }
    let mut cont = 0;
    let words = s.chunks_exact(8);
    let tail = words.remainder().len();
    for w in words {
        if let Some(w) = w.first_chunk::<8>() {
            cont += continuation_bytes(u64::from_le_bytes(*w));
        }
    }
    if tail > 0 {
        if let Some(w) = s.last_chunk::<8>() {
            cont += continuation_bytes(u64::from_le_bytes(*w) >> (8 * (8 - tail)));
        }
    }
    n - cont
}

/// What the driver accumulates while a stream runs.
struct Accum {
    content: String,
    /// Where `content` came from: byte ranges of the output, in order, while every piece was a
    /// slice of the fed text (`spans_exact`); lets a binding reuse the input string.
    spans: Vec<(usize, usize)>,
    spans_exact: bool,
    calls: Vec<ToolCall>,
    issues: Vec<ParseIssue>,
    /// Issues past [`MAX_ISSUES`] (counted, not stored).
    issues_omitted: usize,
    open: Option<usize>,
    tools: Arc<Tools>,
    rng: u64,
    /// Set by the format for the chunks after its last feed (see [`Lane`]); the driver closes it
    /// before each format call.
    lane: Lane,
    /// The lane's state when the driver handed the text back to the format (its last chunk was
    /// refused); what [`Emitter::resumed_lane`] tells the format.
    resumed: Lane,
}

impl Accum {
    /// Store an issue, or count it once [`MAX_ISSUES`] are stored.
    fn push_issue(&mut self, kind: IssueKind, at: Pos, message: impl Into<String>) {
        if self.issues.len() < MAX_ISSUES {
            self.issues.push(ParseIssue {
                kind,
                offset: at.byte,
                char_offset: at.char,
                message: message.into(),
            });
        } else {
            self.issues_omitted += 1;
        }
    }

    fn next_id(&mut self) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let mut id = String::with_capacity(29);
        id.push_str("call_");
        for _ in 0..24 {
            // xorshift64*: ids only need to be unique within a conversation, not secret.
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
            id.push(ALPHABET[(r >> 58) as usize % ALPHABET.len()] as char);
        }
        id
    }
}

fn random_seed() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish() | 1
}

/// What a format writes to while it processes one chunk. Adjacent content (or argument) pieces
/// are merged into one event, so a feed yields few events however the format slices its work.
pub struct Emitter<'a> {
    acc: &'a mut Accum,
    events: Option<&'a mut (dyn EventSink + 'a)>,
    chunk: &'a [u8],
    window: &'a [u8],
    base: Pos,
    cursor: (usize, usize),
}

impl Emitter<'_> {
    /// Absolute byte offset of the current chunk's first byte in the whole output.
    pub fn chunk_offset(&self) -> usize {
        self.base.byte
    }

    /// The position of absolute byte offset `byte`, with its code-point offset. Exact for offsets
    /// in the current chunk and in the last 128+ bytes before it; formats that report an issue
    /// about older text should take its `Pos` when they see it.
    pub fn pos(&mut self, byte: usize) -> Pos {
        if byte >= self.base.byte {
            let rel = (byte - self.base.byte).min(self.chunk.len());
            // Count only between the last asked position and this one (either direction), so
            // a format asking for positions in order pays O(chunk) per chunk in total.
            if rel >= self.cursor.0 {
                let counted = count_chars(self.chunk.get(self.cursor.0..rel).unwrap_or_default());
                self.cursor = (rel, self.cursor.1 + counted);
            } else {
                let back = count_chars(self.chunk.get(rel..self.cursor.0).unwrap_or_default());
                self.cursor = (rel, self.cursor.1 - back);
            }
            Pos {
                byte: self.base.byte + rel,
                char: self.base.char + self.cursor.1,
            }
        } else {
            let back = (self.base.byte - byte).min(self.window.len());
            let start = self.window.len() - back;
            let chars = count_chars(self.window.get(start..).unwrap_or_default());
            Pos {
                byte: self.base.byte - back,
                char: self.base.char.saturating_sub(chars),
            }
        }
    }

    /// Run `f` with an emitter whose chunk is `text`: the output's bytes from `at`, verbatim (text
    /// a format held back, then the rest of the current chunk). For a format that hands what it
    /// held to another format's stream (`auto`): that stream then sees `text` as the chunk fed,
    /// with exact positions and content spans.
    pub fn as_chunk<R>(&mut self, at: Pos, text: &str, f: impl FnOnce(&mut Emitter<'_>) -> R) -> R {
        let mut sub = Emitter {
            acc: &mut *self.acc,
            // Re-borrow for this call only (coercions do not reach inside an Option).
            events: match self.events.as_deref_mut() {
                Some(e) => Some(e),
                None => None,
            },
            chunk: text.as_bytes(),
            window: &[],
            base: at,
            cursor: (0, 0),
        };
        f(&mut sub)
    }

    /// Plain text for `content`.
    pub fn content(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let offset = (text.as_ptr() as usize).wrapping_sub(self.chunk.as_ptr() as usize);
        let in_chunk = offset <= self.chunk.len() && text.len() <= self.chunk.len() - offset;
        self.push_content(in_chunk.then(|| self.base.byte + offset), text);
    }

    /// Plain text for `content` that is a verbatim copy of the output's bytes
    /// `byte..byte + text.len()`, kept in the format's own buffer (text it held back while
    /// undecided). Recorded as that span of the output, so the content can still be cut from the
    /// caller's string ([`Stream::content_spans`]) as when the format passes chunk slices.
    pub fn content_from(&mut self, byte: usize, text: &str) {
        if text.is_empty() {
            return;
        }
        let fed = self.base.byte + self.chunk.len();
        let verbatim = byte.checked_add(text.len()).is_some_and(|end| end <= fed);
        self.push_content(verbatim.then_some(byte), text);
    }

    /// Append content; `start`: where it lies in the output, if it is a slice of it.
    #[inline]
    fn push_content(&mut self, start: Option<usize>, text: &str) {
        self.acc.content.push_str(text);
        if self.acc.spans_exact {
            match start {
                Some(start) => match self.acc.spans.last_mut() {
                    Some(last) if last.1 == start => last.1 += text.len(),
                    _ => self.acc.spans.push((start, start + text.len())),
                },
                None => self.acc.spans_exact = false,
            }
        }
        if let Some(events) = self.events.as_deref_mut() {
            events.content(text);
        }
    }

    /// Begin a call (ending any open one). `id`: the format's own call id, if it has one;
    /// otherwise a `call_...` id is generated. `at`: where the call starts (for the unknown-tool
    /// issue). Returns the call's index.
    pub fn start_call(&mut self, name: &str, id: Option<String>, at: Pos) -> usize {
        self.end_call();
        let index = self.acc.calls.len();
        let id = id.unwrap_or_else(|| self.acc.next_id());
        if !self.acc.tools.allows(name) {
            let msg = format!("call {index} names tool {name:?}, which is not among the request's tools");
            self.issue(IssueKind::UnknownTool, at, msg);
        }
        if let Some(events) = self.events.as_deref_mut() {
            events.start(index, &id, name);
        }
        self.acc.calls.push(ToolCall {
            id,
            name: name.to_owned(),
            arguments: String::new(),
        });
        self.acc.open = Some(index);
        index
    }

    /// The next piece of the open call's arguments. With no open call the text goes to content
    /// (a format bug must never lose text).
    pub fn args(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let Some(index) = self.acc.open else {
            self.content(text);
            return;
        };
        if let Some(call) = self.acc.calls.get_mut(index) {
            call.arguments.push_str(text);
        }
        if let Some(events) = self.events.as_deref_mut() {
            events.args(index, text);
        }
    }

    /// End the open call, if any.
    pub fn end_call(&mut self) {
        if let Some(index) = self.acc.open.take() {
            if let Some(events) = self.events.as_deref_mut() {
                events.end(index);
            }
        }
    }

    /// Let the driver pass the next chunks itself while `lane` accepts them (see [`Lane`] for
    /// when a format may). Lasts until the format's next call, which closes it.
    #[inline]
    pub fn set_lane(&mut self, lane: Lane) {
        let needs_call = matches!(lane, Lane::JsonString { .. } | Lane::RawString { .. });
        self.acc.lane = if needs_call && self.acc.open.is_none() {
            Lane::Off
        } else {
            lane
        };
    }

    /// The state the lane the format opened ended in, when the driver passed text in it since
    /// the format's last call ([`Lane::Off`] otherwise). A format that opens a lane whose state
    /// can change ([`Lane::JsonString`]) must take it over at the start of its next feed.
    #[inline]
    pub fn resumed_lane(&self) -> Lane {
        self.acc.resumed
    }

    /// Bytes of the open call's arguments so far (`None`: no call is open). Grows also while
    /// the driver passes a lane, so a format can tell whether a lane passed text since its
    /// last call.
    pub fn open_args_len(&self) -> Option<usize> {
        self.acc
            .open
            .and_then(|i| self.acc.calls.get(i))
            .map(|c| c.arguments.len())
    }

    /// Whether any content has been emitted so far, by this format or (under `auto`) before it
    /// took over the output.
    pub fn content_emitted(&self) -> bool {
        !self.acc.content.is_empty()
    }

    /// Index of the open call, if one is open.
    pub fn open_call(&self) -> Option<usize> {
        self.acc.open
    }

    /// Number of calls started so far.
    pub fn calls_started(&self) -> usize {
        self.acc.calls.len()
    }

    /// The request's tools.
    pub fn tools(&self) -> &Arc<Tools> {
        &self.acc.tools
    }

    /// Report a problem at `at`.
    pub fn issue(&mut self, kind: IssueKind, at: Pos, message: impl Into<String>) {
        self.acc.push_issue(kind, at, message);
    }
}

const WINDOW_KEEP: usize = 128;

/// One output being parsed incrementally (see DESIGN.md §1 "Streaming").
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
                rng: random_seed(),
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
        self.acc.resumed = std::mem::take(&mut self.acc.lane);
        let mut out = Emitter {
            acc: &mut self.acc,
            // Re-borrow for this call only (coercions do not reach inside an Option).
            events: match events {
                Some(e) => Some(&mut *e),
                None => None,
            },
            chunk: chunk.as_bytes(),
            window: self.window.get(..self.window_len).unwrap_or_default(),
            base: Pos {
                byte: self.end_byte,
                char: self.end_char,
            },
            cursor: (0, 0),
        };
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
        self.acc.resumed = std::mem::take(&mut self.acc.lane);
        let mut out = Emitter {
            acc: &mut self.acc,
            // Re-borrow for this call only (coercions do not reach inside an Option).
            events: match events {
                Some(e) => Some(&mut *e),
                None => None,
            },
            chunk: &[],
            window: self.window.get(..self.window_len).unwrap_or_default(),
            base: Pos {
                byte: self.end_byte,
                char: self.end_char,
            },
            cursor: (0, 0),
        };
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
    /// collecting them once [`MAX_ISSUES`] were reported).
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

#[cfg(test)]
mod tests {
    use super::count_chars;

    #[test]
    fn count_chars_matches_std_at_every_length() {
        let text = "aé😀中\u{80}b\u{7ff}\u{800}\u{ffff}\u{10000}xyz".repeat(40);
        let bytes = text.as_bytes();
        for start in 0..8 {
            for end in start..bytes.len().min(start + 600) {
                let slice = &bytes[start..end];
                let expected = slice.iter().filter(|&&b| (b & 0xC0) != 0x80).count();
                assert_eq!(count_chars(slice), expected, "{start}..{end}");
            }
        }
    }
}
