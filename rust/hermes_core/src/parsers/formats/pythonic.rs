//! `pythonic` and `llama4_pythonic`: the whole output is a Python list of calls with keyword
//! arguments, `[read_file(path='a.py', limit=10), list_processes()]`; `llama4_pythonic` may wrap
//! it in `<|python_start|>` ... `<|python_end|>`. Values are Python literals, parsed in Rust by
//! [`super::python_literal`] (never evaluated) and returned as JSON.
//!
//! What counts as a call list: after optional whitespace (and the llama4 start marker), `[`,
//! then a name and `(`. vLLM 0.33.0 also requires `[` to be the very first character, directly
//! followed by the name, and `key=value` without spaces; those spacing variants are valid Python
//! and are parsed here as calls (the text's meaning). Any other output is plain content, as in
//! vLLM. Content next to a call list cannot be expressed in this format: text after the list is
//! kept as content with an `unexpected_text` issue.
//!
//! Streaming and hold-back: until `[name(` is seen the (short) start of the output is held, since
//! it may turn out to be prose (`[Note] ...`) - at most the whitespace, the marker, `[` and a
//! 256-byte name. Each call is then held until its closing `)`: a Python literal is only known to
//! be valid at its end, and a call whose later argument is malformed must not have been streamed
//! as half a call. A complete call is released at once (`ToolCallStart`, its whole arguments,
//! `ToolCallEnd`). When a call's whole argument list is already there (always so for `parse`) it
//! is parsed in place in one pass; otherwise bracket and string tracking follows the call as it
//! arrives, never re-reading a byte, and the call is parsed once at its `)`.
//!
//! Calls after prose: models do write a sentence first (`Here you go: [get_weather(city='Paris')]`).
//! vLLM keeps such an output as content (its call-list regex is anchored at the start); SGLang
//! extracts the list. Here, when the request has tools, a bracketed list after prose whose calls
//! each name one of those tools is extracted, and the prose stays content: losing a call costs a
//! rollout more than the rare list of known tool names meant as text. Text after such a list is
//! content (with an `unexpected_text` issue), as after a list at the start, and later lists are
//! looked for the same way. A list is not required to end the output: that could only be known
//! at the end, and its calls must stream as they complete. The first name of a list is decided
//! before anything of it is released (`[` and at most a 256-byte name are held); for
//! `llama4_pythonic` a `<|python_start|>` right before such a list is its wrapper, as at the start
//! (SGLang reads it so; it is the model's tool-call token). Without tools,
//! or with `calls_after_prose = false` ([`ParserOptions`](crate::parsers::ParserOptions)),
//! the output must start with the list, as in vLLM.
//!
//! Bad input: a call that is not a literal call (positional argument, variable, nested call,
//! operator, f-string placeholder, unbalanced brackets...) ends the list: its text and everything
//! after it are returned as content with an issue; calls before it are kept. A truncated list
//! keeps the complete calls and returns the rest as content with a `truncated` issue.

use std::sync::Arc;

use serde_json::Value;

use crate::parsers::engines::machine::{Driven, Machine, Step};
use crate::parsers::engines::python_literal::{
    is_identifier, is_keyword, parse_args_prefix, parse_call, CallScanner, Scan,
};
use crate::parsers::lane::Lane;
use crate::parsers::options::ParserOptions;
use crate::parsers::tools::Tools;
use crate::parsers::types::{IssueKind, Pos, RenderError, ToolCall};
use crate::parsers::{count_chars, Emitter, Format, FormatStream};

pub(crate) const PY_START: &str = "<|python_start|>";
pub(crate) const PY_END: &str = "<|python_end|>";
const MAX_NAME: usize = 256;

/// The `pythonic` format.
pub fn pythonic() -> Arc<dyn Format> {
    Arc::new(Pythonic {
        llama4: false,
        after_prose: true,
    })
}

/// The `llama4_pythonic` format (optional `<|python_start|>`/`<|python_end|>` wrapper).
pub fn llama4_pythonic() -> Arc<dyn Format> {
    Arc::new(Pythonic {
        llama4: true,
        after_prose: true,
    })
}

struct Pythonic {
    llama4: bool,
    /// Look for call lists of known tools after prose (when the request has tools).
    after_prose: bool,
}

impl Format for Pythonic {
    fn stream(&self, tools: &Arc<Tools>) -> Box<dyn FormatStream> {
        let watch = (self.after_prose && !tools.is_empty()).then(|| Arc::clone(tools));
        Box::new(Driven::new(PythonicStream::new(self.llama4, watch)))
    }

    fn with_options(&self, options: &ParserOptions) -> Option<Arc<dyn Format>> {
        Some(Arc::new(Pythonic {
            llama4: self.llama4,
            after_prose: options.calls_after_prose,
        }))
    }

    fn render(&self, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
        render(calls, content, self.llama4)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// Leading whitespace (and the llama4 start marker).
    Start,
    /// The output starts with a word (prose, or a call missing its list).
    BareName,
    /// After `[`: whitespace, then the first call's name.
    Open,
    /// A call's name, up to `(`.
    Name,
    /// A call's arguments, up to the matching `)`.
    Args,
    /// After a call: `,` or `]`.
    AfterCall,
    /// After `,`: the next call's name, or `]`.
    AfterComma,
    /// After `]`: only whitespace (and the llama4 end marker) is expected.
    Done,
    /// Prose, watched for a list of known tools' calls (`watch`); its `[` leads to `Open`
    /// (llama4: so does `<|python_start|>` then `[`).
    Prose,
    /// llama4, after prose: `<|python_start|>` was read; whitespace, then the list's `[`.
    ProseWrapper,
    /// Plain content to the end.
    Passthrough,
}

struct PythonicStream {
    llama4: bool,
    st: St,
    /// Undecided text: the start of the output until the first call is certain, then each call.
    held: String,
    held_at: Pos,
    /// Where the current call's name starts in `held`.
    call_start: usize,
    scanner: CallScanner,
    /// The current call's arguments have not been looked at yet (see `whole_call`).
    try_whole: bool,
    /// The first call has been seen, so this output is a call list.
    committed: bool,
    wrapper_seen: bool,
    end_marker_seen: bool,
    trailing_ws: String,
    /// The request's tools, when lists after prose are looked for.
    watch: Option<Arc<Tools>>,
    /// The list being read came after prose (its calls must name request tools).
    after_prose_list: bool,
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn ws_len(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

impl PythonicStream {
    fn new(llama4: bool, watch: Option<Arc<Tools>>) -> PythonicStream {
        PythonicStream {
            llama4,
            st: St::Start,
            held: String::new(),
            held_at: Pos::default(),
            call_start: 0,
            scanner: CallScanner::default(),
            try_whole: false,
            committed: false,
            wrapper_seen: false,
            end_marker_seen: false,
            trailing_ws: String::new(),
            watch,
            after_prose_list: false,
        }
    }

    /// Where content goes on when a list is not (or no longer) one: watched prose, or the end.
    fn content_state(&self) -> St {
        if self.watch.is_some() {
            St::Prose
        } else {
            St::Passthrough
        }
    }

    /// A list after prose counts only if its calls name request tools.
    fn name_allowed(&self, name: &str) -> bool {
        match (&self.watch, self.after_prose_list) {
            (Some(tools), true) => tools.get(name).is_some(),
            _ => true,
        }
    }

    /// Position of byte `k` of `held`.
    fn held_pos(&self, k: usize) -> Pos {
        let k = k.min(self.held.len());
        Pos {
            byte: self.held_at.byte + k,
            char: self.held_at.char + count_chars(self.held.as_bytes().get(..k).unwrap_or_default()),
        }
    }

    /// The held text is not (or no longer) a call list: it and everything after are content.
    /// `held` is a verbatim copy of the output from `held_at`, so it is passed on as that span.
    fn give_up(&mut self, out: &mut Emitter<'_>) {
        out.content_from(self.held_at.byte, &self.held);
        self.held.clear();
        self.st = self.content_state();
        self.committed = false;
    }

    fn on_start(&mut self, rest: &str, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = ws_len(rest);
        if ws > 0 {
            self.held.push_str(&rest[..ws]);
            return Some(ws);
        }
        if self.llama4 && !self.wrapper_seen {
            if rest.starts_with(PY_START) {
                self.wrapper_seen = true;
                self.held.push_str(PY_START);
                return Some(PY_START.len());
            }
            if !eof && PY_START.starts_with(rest) {
                return None;
            }
        }
        if rest.starts_with('[') {
            self.held.push('[');
            self.st = St::Open;
            return Some(1);
        }
        if rest.as_bytes().first().is_some_and(|&b| is_name_start(b)) {
            self.call_start = self.held.len();
            self.st = St::BareName;
            return Some(0);
        }
        self.give_up(out);
        Some(0)
    }

    /// The output starts with a word: if it is `name(`, it is a call without its list (reported);
    /// either way it is content.
    fn on_bare_name(&mut self, rest: &str, out: &mut Emitter<'_>) -> Option<usize> {
        let bytes = rest.as_bytes();
        let take = bytes
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'.'))
            .unwrap_or(bytes.len());
        let room = MAX_NAME.saturating_sub(self.held.len() - self.call_start);
        if take > room {
            self.give_up(out);
            return Some(0);
        }
        self.held.push_str(&rest[..take]);
        let Some(&b) = bytes.get(take) else {
            return Some(take).filter(|&n| n > 0);
        };
        if b == b'(' {
            let at = self.held_pos(self.call_start);
            out.issue(
                IssueKind::MalformedMarkup,
                at,
                "a call outside a list: pythonic tool calls are written as [name(key=value, ...)]; kept as content",
            );
        }
        self.give_up(out);
        Some(take)
    }

    fn on_open(&mut self, rest: &str, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = ws_len(rest);
        if ws > 0 {
            self.held.push_str(&rest[..ws]);
            return Some(ws);
        }
        match rest.as_bytes().first() {
            Some(&b) if is_name_start(b) => {
                self.call_start = self.held.len();
                self.st = St::Name;
                Some(0)
            }
            // After prose, `[{` is prose; at the start it is a JSON list where calls were due.
            Some(b'{') if !self.after_prose_list => {
                let at = self.held_pos(self.held.len());
                out.issue(
                    IssueKind::MalformedMarkup,
                    at,
                    "a list of JSON objects is not a pythonic call list (expected [name(key=value, ...)]); kept as content",
                );
                self.give_up(out);
                Some(0)
            }
            _ => {
                self.give_up(out);
                Some(0)
            }
        }
    }

    /// The name text is not a call: prose if no call came yet, else a malformed list.
    fn not_a_call(&mut self, out: &mut Emitter<'_>, why: &str) {
        if self.committed {
            let at = self.held_pos(self.call_start);
            out.issue(
                IssueKind::MalformedMarkup,
                at,
                format!("{why}; the rest of the output is kept as content"),
            );
        }
        self.give_up(out);
    }

    fn on_name(&mut self, rest: &str, out: &mut Emitter<'_>) -> Option<usize> {
        let bytes = rest.as_bytes();
        let take = bytes
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b' ' || b == b'\t'))
            .unwrap_or(bytes.len());
        let room = MAX_NAME.saturating_sub(self.held.len() - self.call_start);
        if take > room {
            self.held.push_str(&rest[..room]);
            self.not_a_call(out, "a call name longer than 256 bytes");
            return Some(room);
        }
        self.held.push_str(&rest[..take]);
        let Some(&b) = bytes.get(take) else {
            return Some(take).filter(|&n| n > 0);
        };
        let name = self.held.get(self.call_start..).unwrap_or_default().trim();
        let valid = !name.is_empty() && name.split('.').all(is_identifier);
        if b != b'(' || !valid {
            self.not_a_call(out, "expected a call `name(...)` in the list");
            return Some(take);
        }
        if !self.name_allowed(name) {
            let why = format!("{name:?} is not a tool of the request, so this list after prose is text");
            self.not_a_call(out, &why);
            return Some(take);
        }
        self.committed = true;
        // The '(' is the scanner's first byte; `on_args` appends it with what follows.
        self.scanner = CallScanner::default();
        self.try_whole = true;
        self.st = St::Args;
        Some(take)
    }

    /// The fast path when a call's whole argument list is already here (always so for `parse`):
    /// parse it in place, without the bracket scan and the copy into `held`. Only a clean parse
    /// is taken; anything else (more text needed, an error, a CR, which the scanner reads
    /// differently after a backslash) goes the scanner's way, so the answer is the same.
    fn whole_call(&mut self, rest: &str, out: &mut Emitter<'_>) -> Option<usize> {
        let (args, notes, end) = parse_args_prefix(rest).ok()?;
        let text = rest.get(..end)?;
        if memchr::memchr(b'\r', text.as_bytes()).is_some() {
            return None;
        }
        let name = self.held.get(self.call_start..).unwrap_or_default().trim().to_owned();
        let at = self.held_pos(self.call_start);
        out.start_call(&name, None, at);
        out.args(&args);
        out.end_call();
        if !notes.is_empty() {
            let paren = self.held.len();
            self.held.push_str(text);
            for note in notes {
                let at = self.held_pos(paren + note.at);
                out.issue(IssueKind::BadArguments, at, note.msg);
            }
        }
        self.held.clear();
        self.st = St::AfterCall;
        Some(end)
    }

    fn on_args(&mut self, rest: &str, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        if std::mem::take(&mut self.try_whole) {
            if let Some(n) = self.whole_call(rest, out) {
                return Some(n);
            }
        }
        match self.scanner.scan(rest.as_bytes(), eof) {
            Scan::More(n) => {
                // Bytes after `n` (a quote that may open a triple-quoted string) wait in `buf`.
                self.held.push_str(rest.get(..n).unwrap_or_default());
                Some(n).filter(|&n| n > 0)
            }
            Scan::End(k) => {
                self.held.push_str(rest.get(..=k).unwrap_or_default());
                let call_text = self.held.get(self.call_start..).unwrap_or_default();
                match parse_call(call_text) {
                    Ok(call) => {
                        let at = self.held_pos(self.call_start);
                        out.start_call(&call.name, None, at);
                        out.args(&call.args);
                        out.end_call();
                        for note in call.notes {
                            let at = self.held_pos(self.call_start + note.at);
                            out.issue(IssueKind::BadArguments, at, note.msg);
                        }
                        self.held.clear();
                        self.st = St::AfterCall;
                    }
                    Err(e) => {
                        let at = self.held_pos(self.call_start + e.at);
                        out.issue(
                            IssueKind::BadArguments,
                            at,
                            format!(
                                "not a call with literal arguments: {}; the call and the rest of the output are kept as content",
                                e.msg
                            ),
                        );
                        self.give_up(out);
                    }
                }
                Some(k + 1)
            }
            Scan::Mismatch(k) => {
                self.held.push_str(rest.get(..=k).unwrap_or_default());
                let at = self.held_pos(self.held.len().saturating_sub(1));
                out.issue(
                    IssueKind::MalformedMarkup,
                    at,
                    "unbalanced brackets in a call; the call and the rest of the output are kept as content",
                );
                self.give_up(out);
                Some(k + 1)
            }
        }
    }

    /// Between calls: after a call, `,` or `]`; after `,`, the next call's name or `]`.
    fn on_between(&mut self, rest: &str, i: usize, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = ws_len(rest);
        if ws > 0 {
            return Some(ws);
        }
        let after_comma = self.st == St::AfterComma;
        match rest.as_bytes().first() {
            Some(b']') => {
                self.st = St::Done;
                Some(1)
            }
            Some(b',') if !after_comma => {
                self.st = St::AfterComma;
                Some(1)
            }
            Some(&b) if after_comma && is_name_start(b) => {
                self.held.clear();
                self.held_at = out.pos(i);
                self.call_start = 0;
                self.st = St::Name;
                Some(0)
            }
            _ => {
                let at = out.pos(i);
                let msg = if after_comma {
                    "expected a call after ',' in the list; the rest is kept as content"
                } else {
                    "expected ',' or ']' after a call; the rest is kept as content"
                };
                out.issue(IssueKind::MalformedMarkup, at, msg);
                self.st = self.content_state();
                Some(0)
            }
        }
    }

    fn on_done(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = ws_len(rest);
        if ws > 0 {
            self.trailing_ws.push_str(&rest[..ws]);
            return Some(ws);
        }
        if self.llama4 && !self.end_marker_seen {
            if rest.starts_with(PY_END) {
                self.end_marker_seen = true;
                self.trailing_ws.clear();
                return Some(PY_END.len());
            }
            if !eof && PY_END.starts_with(rest) {
                return None;
            }
        }
        let at = out.pos(i);
        out.issue(
            IssueKind::UnexpectedText,
            at,
            "text after the list of calls; kept as content",
        );
        // The whitespace is the text just before `i` (an end marker in between clears it).
        let ws = std::mem::take(&mut self.trailing_ws);
        out.content_from(i.saturating_sub(ws.len()), &ws);
        self.st = self.content_state();
        Some(0)
    }

    /// Prose: content up to a `[`, which may open a list of known tools' calls (llama4: or up
    /// to the `<|python_start|>` that wraps one).
    fn on_prose(&mut self, rest: &str, i: usize, eof: bool, out: &mut Emitter<'_>) -> Option<usize> {
        let bytes = rest.as_bytes();
        let found = if self.llama4 {
            memchr::memchr2(b'[', b'<', bytes)
        } else {
            memchr::memchr(b'[', bytes)
        };
        let Some(k) = found else {
            out.content_from(i, rest);
            return Some(rest.len());
        };
        out.content_from(i, &rest[..k]);
        let tail = &rest[k..];
        if tail.starts_with('[') {
            self.begin_prose_list(out, i + k, "[");
            self.st = St::Open;
            return Some(k + 1);
        }
        if tail.starts_with(PY_START) {
            self.begin_prose_list(out, i + k, PY_START);
            self.st = St::ProseWrapper;
            return Some(k + PY_START.len());
        }
        if !eof && PY_START.starts_with(tail) {
            // A possible start marker: wait for the bytes that decide it.
            return if k == 0 { None } else { Some(k) };
        }
        out.content_from(i + k, "<");
        Some(k + 1)
    }

    /// A list after prose may start at `i` with `opening` (`[` or the llama4 start marker).
    fn begin_prose_list(&mut self, out: &mut Emitter<'_>, i: usize, opening: &str) {
        self.held.clear();
        self.held.push_str(opening);
        self.held_at = out.pos(i);
        self.after_prose_list = true;
        self.committed = false;
        self.end_marker_seen = false;
    }

    /// llama4, after prose and `<|python_start|>`: whitespace, then the list's `[`; anything
    /// else makes the marker prose again.
    fn on_prose_wrapper(&mut self, rest: &str, out: &mut Emitter<'_>) -> Option<usize> {
        let ws = ws_len(rest);
        if ws > 0 {
            self.held.push_str(&rest[..ws]);
            return Some(ws);
        }
        if rest.starts_with('[') {
            self.held.push('[');
            self.st = St::Open;
            return Some(1);
        }
        self.give_up(out);
        Some(0)
    }
}

impl Machine for PythonicStream {
    fn step(&mut self, rest: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> Step {
        let step = match self.st {
            St::Start => self.on_start(rest, eof, out),
            St::Open => self.on_open(rest, out),
            St::BareName => self.on_bare_name(rest, out),
            St::Name => self.on_name(rest, out),
            St::Args => self.on_args(rest, eof, out),
            St::AfterCall | St::AfterComma => self.on_between(rest, base, out),
            St::Done => self.on_done(rest, base, eof, out),
            St::Prose => self.on_prose(rest, base, eof, out),
            St::ProseWrapper => self.on_prose_wrapper(rest, out),
            St::Passthrough => {
                out.content_from(base, rest);
                Some(rest.len())
            }
        };
        // The handlers return the bytes they consumed, or `None` to wait for more text.
        step.map_or(Step::Wait(0), Step::On)
    }

    fn end(&mut self, left: &str, out: &mut Emitter<'_>) {
        let left_at = out.chunk_offset().saturating_sub(left.len());
        let end = out.pos(out.chunk_offset());
        // `held` and `left` are verbatim output (from `held_at` and `left_at`), passed on as spans.
        match self.st {
            St::Start | St::BareName | St::Passthrough | St::Prose | St::ProseWrapper => {}
            // A `[` or name after prose that did not become a call yet: it was prose.
            St::Open | St::Name if self.after_prose_list && !self.committed => {}
            St::Open | St::Name | St::Args => {
                out.issue(
                    IssueKind::Truncated,
                    end,
                    "the output ends inside a call of the list; the unfinished call is kept as content",
                );
            }
            St::AfterCall | St::AfterComma => {
                out.issue(IssueKind::Truncated, end, "the list of calls is not closed by ']'");
            }
            St::Done => {}
        }
        out.content_from(self.held_at.byte, &self.held);
        out.content_from(left_at, left);
        self.held.clear();
        self.st = St::Passthrough;
    }

    /// Inside a string of a call being held, nothing can be released before the string ends (or
    /// breaks at a line end): the driver may collect the text for the next run.
    fn lane(&self) -> Lane {
        if self.st == St::Prose && !self.llama4 {
            return Lane::Content {
                stop: b'[',
                hold_trailing_ws: false,
            };
        }
        match self.scanner.in_string() {
            Some((q, triple)) if self.st == St::Args && !self.try_whole => Lane::Defer {
                until: if triple { [q; 3] } else { [q, b'\n', b'\r'] },
            },
            _ => Lane::Off,
        }
    }

    /// Once the output is known not to be (or no longer to be) a call list, the rest is content.
    fn take_chunk(&mut self, chunk: &str, out: &mut Emitter<'_>) -> bool {
        if self.st == St::Passthrough {
            out.content(chunk);
        }
        self.st == St::Passthrough
    }

    /// Positions are asked only for text in the input being run; held text keeps its own `Pos`.
    fn holds_text(&self) -> bool {
        false
    }
}

fn render(calls: &[ToolCall], content: Option<&str>, llama4: bool) -> Result<String, RenderError> {
    let content = content.unwrap_or("");
    if calls.is_empty() {
        let head = content.trim_start();
        let word = head.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        let bare_call = word.len() < head.len() && word.starts_with('(');
        if bare_call {
            return Err(RenderError(
                "pythonic cannot render content that starts with `name(`: it reads as a call outside its list".into(),
            ));
        }
        if head.starts_with('[') || (llama4 && head.starts_with(PY_START)) {
            return Err(RenderError(
                "pythonic cannot render content that starts with '[': it would be read as a list of calls".into(),
            ));
        }
        return Ok(content.to_owned());
    }
    if !content.is_empty() {
        return Err(RenderError(
            "pythonic cannot render content together with tool calls: the whole output is the list of calls".into(),
        ));
    }
    let mut s = String::from("[");
    for (n, call) in calls.iter().enumerate() {
        if call.name.is_empty() || !call.name.split('.').all(is_identifier) {
            return Err(RenderError(format!(
                "call {n}: tool name {:?} is not a Python name (letters, digits, '_', dots)",
                call.name
            )));
        }
        let args: Value = serde_json::from_str(&call.arguments)
            .map_err(|e| RenderError(format!("call {n} ({}): arguments are not valid JSON ({e})", call.name)))?;
        let Value::Object(map) = args else {
            return Err(RenderError(format!(
                "call {n} ({}): arguments must be a JSON object to render as keyword arguments",
                call.name
            )));
        };
        if n > 0 {
            s.push_str(", ");
        }
        s.push_str(&call.name);
        s.push('(');
        for (k, (key, value)) in map.iter().enumerate() {
            if !is_identifier(key) || is_keyword(key) {
                return Err(RenderError(format!(
                    "call {n} ({}): argument name {key:?} is not a valid Python keyword-argument name",
                    call.name
                )));
            }
            if k > 0 {
                s.push_str(", ");
            }
            s.push_str(key);
            s.push('=');
            python_literal(value, &mut s)
                .map_err(|why| RenderError(format!("call {n} ({}), argument {key:?}: {why}", call.name)))?;
        }
        s.push(')');
    }
    s.push(']');
    Ok(s)
}

/// A JSON value as Python literal source.
fn python_literal(v: &Value, out: &mut String) -> Result<(), String> {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => {
            let t = n.to_string();
            if t.contains(['.', 'e', 'E']) && !t.parse::<f64>().is_ok_and(f64::is_finite) {
                return Err(format!(
                    "{t} is not a finite float, which Python literals cannot express"
                ));
            }
            out.push_str(&t);
        }
        Value::String(s) => python_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                python_literal(item, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (k, (key, item)) in map.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                python_string(key, out);
                out.push_str(": ");
                python_literal(item, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn python_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::parsers::test_support::{
        args, assert_all_content, every_prefix, every_split, kinds, parser, soup, soup_holds,
    };
    use crate::parsers::Event;
    use proptest::prelude::*;
    use serde_json::json;

    const LIST: &str = "[read_file(path='src/中.py', offset=10), terminal(command=\"echo ')]' 😀\", timeout=1.5,\n  env={'A': [True, None]}), list_processes()]\n";

    #[test]
    fn list_every_split() {
        for name in ["pythonic", "llama4_pythonic"] {
            let r = every_split(name, LIST);
            assert_eq!(r.content, None);
            assert_eq!(r.tool_calls.len(), 3);
            assert_eq!(args(&r, 0), json!({"path": "src/中.py", "offset": 10}));
            assert_eq!(
                args(&r, 1),
                json!({"command": "echo ')]' 😀", "timeout": 1.5, "env": {"A": [true, null]}})
            );
            assert_eq!(args(&r, 2), json!({}));
            assert!(r.issues.is_empty());
        }
    }

    #[test]
    fn spacing_variants_vllm_rejects_are_calls() {
        for text in [" [f(a = 1)]", "[\n  f(a=1),\n]", "[ f(a=1) ]\n"] {
            let r = every_split("pythonic", text);
            assert_eq!(r.tool_calls.len(), 1, "{text:?}");
            assert_eq!(args(&r, 0), json!({"a": 1}));
            assert_eq!(r.content, None);
        }
    }

    #[test]
    fn llama4_wrapper() {
        let r = every_split(
            "llama4_pythonic",
            "<|python_start|>[terminal(command='<|python_end|>')]<|python_end|>",
        );
        assert_eq!(args(&r, 0), json!({"command": "<|python_end|>"}));
        assert!(r.content.is_none() && r.issues.is_empty());
        let r = every_split("llama4_pythonic", "<|python_start|>[f()]");
        assert_eq!(r.tool_calls.len(), 1);
    }

    #[test]
    fn a_list_of_known_tools_after_prose_is_extracted() {
        let text = "Here you go: [read_file(path='a.py'), list_processes()] and done. [x] [f(a=1)] \
                    Also [terminal(command='ls')]";
        for name in ["pythonic", "llama4_pythonic"] {
            let r = every_split(name, text);
            let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["read_file", "list_processes", "terminal"], "{name}");
            assert_eq!(args(&r, 0), json!({"path": "a.py"}));
            assert_eq!(r.content.as_deref(), Some("Here you go:  and done. [x] [f(a=1)] Also "));
            // The text after the first list is reported, as after a list at the start.
            assert_eq!(kinds(&r), ["unexpected_text"]);
        }
        // A list naming a tool that is not the request's is text; so is one cut off early.
        for prose in [
            "I'd call [web_search(q='x')] here",
            "See [read_file(path='a'",
            "See [read_fi",
        ] {
            assert_all_content(&every_split("pythonic", prose), prose);
        }
        // A call is released as soon as its `)` arrives, prose before it as it comes.
        let p = parser("pythonic");
        let mut s = p.stream();
        assert_eq!(s.feed("Sure: "), [Event::Content("Sure: ".into())]);
        assert!(s.feed("[read_file(path='a'").is_empty());
        let events = s.feed(")");
        assert_eq!(events.last(), Some(&Event::ToolCallEnd { index: 0 }));
    }

    #[test]
    fn llama4_wrapper_after_prose_is_the_lists_markup() {
        // SGLang's pythonic suite: the start marker before a list after prose belongs to the
        // list, as at the start of the output; text after the end marker is content.
        let text = "Checking. <|python_start|>[terminal(command='ls')]<|python_end|> Then more.";
        let r = every_split("llama4_pythonic", text);
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(args(&r, 0), json!({"command": "ls"}));
        assert_eq!(r.content.as_deref(), Some("Checking.  Then more."));
        assert_eq!(kinds(&r), ["unexpected_text"]);
        // The marker not followed by a list of known tools, and a lone '<', stay prose.
        for prose in [
            "a <|python_start|> b",
            "a <|python_start|>[web_search(q='x')]",
            "a < b <|python_",
            "a <|python_start|>",
        ] {
            assert_all_content(&every_split("llama4_pythonic", prose), prose);
        }
        // `pythonic` does not know the marker: it stays content around the list.
        let r = every_split("pythonic", text);
        assert_eq!(
            r.content.as_deref(),
            Some("Checking. <|python_start|><|python_end|> Then more.")
        );
    }

    #[test]
    fn vllm_strict_option_and_no_tools_keep_prose_lists_as_content() {
        use crate::parsers::{get_parser_with, ParserOptions, Tools};
        let text = "Sure: [read_file(path='a.py')]";
        let strict = ParserOptions {
            calls_after_prose: false,
        };
        let tools = Tools::from_json(crate::parsers::test_support::TOOLS).unwrap();
        for p in [
            get_parser_with("pythonic", tools, strict).unwrap(),
            crate::parsers::get_parser("pythonic", Tools::none()).unwrap(),
        ] {
            let r = p.parse(text);
            assert!(r.tool_calls.is_empty() && r.issues.is_empty());
            assert_eq!(r.content.as_deref(), Some(text));
        }
    }

    #[test]
    fn prose_is_content_without_issues() {
        for text in [
            "[Note] read this",
            "[1, 2, 3]",
            "[]",
            "Hello [f(a=1)]",
            "\n",
            "",
            "[x] done",
        ] {
            let r = every_split("pythonic", text);
            assert!(r.tool_calls.is_empty(), "{text:?}");
            assert_eq!(r.content.as_deref().unwrap_or(""), text);
            assert!(r.issues.is_empty(), "{text:?}: {:?}", r.issues);
        }
    }

    #[test]
    fn calls_are_released_whole() {
        let p = parser("pythonic");
        let mut s = p.stream();
        let mut events = s.feed("[f(a='long");
        assert!(events.is_empty(), "{events:?}");
        events.extend(s.feed(" text'), g("));
        assert!(matches!(
            &events[..],
            [
                Event::ToolCallStart { .. },
                Event::ToolCallArgsDelta { .. },
                Event::ToolCallEnd { .. }
            ]
        ));
    }

    #[test]
    fn malformed_and_truncated_never_lose_text() {
        let r = every_split("pythonic", "[list_processes(), g(x), h(b=2)]");
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.content.as_deref(), Some("g(x), h(b=2)]"));
        assert_eq!(kinds(&r), ["bad_arguments"]);
        let r = every_split("pythonic", "[web_search(query=\"x\"]");
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content.as_deref(), Some("[web_search(query=\"x\"]"));
        let r = every_split("pythonic", "[list_processes()] and then prose");
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.content.as_deref(), Some(" and then prose"));
        assert_eq!(kinds(&r), ["unexpected_text"]);
        let r = every_split("pythonic", "terminal(command='ls')");
        assert_eq!(kinds(&r), ["malformed_markup"]);
        assert_eq!(r.content.as_deref(), Some("terminal(command='ls')"));
        every_prefix(
            "pythonic",
            LIST,
            |end| end / 2,
            |end, r| {
                if end < LIST.trim_end().len() && end > 0 {
                    assert!(!r.issues.is_empty(), "prefix {end} without an issue");
                }
            },
        );
    }

    #[test]
    fn render_round_trip_and_refusals() {
        let p = parser("pythonic");
        let calls = [
            ToolCall {
                id: String::new(),
                name: "terminal".into(),
                arguments: r#"{"command": "a\"b'c\\\n\u0001😀", "timeout": -1.5e-7, "env": {"x y": [null, true, 12345678901234567890]}}"#.into(),
            },
            ToolCall { id: String::new(), name: "list_processes".into(), arguments: "{}".into() },
        ];
        let text = p.render(&calls, None).unwrap();
        let r = every_split("pythonic", &text);
        assert_eq!(
            args(&r, 0),
            json!({"command": "a\"b'c\\\n\u{1}😀", "timeout": -1.5e-7, "env": {"x y": [null, true, 12345678901234567890u64]}})
        );
        assert_eq!(args(&r, 1), json!({}));
        assert!(r.issues.is_empty());
        assert!(p.render(&calls, Some("text")).is_err());
        assert!(p.render(&[], Some("[not a call]")).is_err());
        let kw = [ToolCall {
            id: String::new(),
            name: "f".into(),
            arguments: r#"{"from": 1}"#.into(),
        }];
        assert!(p.render(&kw, None).is_err());
        let name = [ToolCall {
            id: String::new(),
            name: "my tool".into(),
            arguments: "{}".into(),
        }];
        assert!(p.render(&name, None).is_err());
    }

    const FRAGMENTS: &[&str] = &[
        "[",
        "]",
        "(",
        ")",
        "{",
        "}",
        ",",
        "=",
        ":",
        "f",
        "read_file",
        "a",
        "'",
        "\"",
        "'''",
        "\\",
        "\n",
        " ",
        "#",
        "1",
        "-2.5e3",
        "0x1f",
        "True",
        "None",
        "r",
        "f'",
        "é",
        "😀",
        "<|python_start|>",
        "<|python_end|>",
    ];

    /// Feed `text` cut at `cuts`; when the stream reports its content as spans of the output
    /// (what the Python binding cuts from the caller's str), they must spell the content.
    /// Returns whether it did.
    fn spans_spell_content(name: &str, text: &str, cuts: &[usize]) -> bool {
        let mut s = parser(name).stream();
        let mut last = 0;
        for &c in cuts.iter().chain(std::iter::once(&text.len())) {
            if c >= last && text.is_char_boundary(c) {
                s.feed(&text[last..c]);
                last = c;
            }
        }
        s.finish();
        let Some(spans) = s.content_spans().map(<[_]>::to_vec) else {
            return false;
        };
        let spelled: String = spans.iter().map(|&(a, b)| &text[a..b]).collect();
        assert_eq!(
            spelled,
            s.result().content.unwrap_or_default(),
            "{name} {text:?} {cuts:?}"
        );
        true
    }

    #[test]
    fn content_is_spans_of_the_output() {
        let prose = "The quick brown fox. ".repeat(200);
        for name in ["pythonic", "llama4_pythonic"] {
            for text in [
                prose.as_str(),
                "  hello [read_file(path=\"a\")]",
                "[Note] see below",
                "read_file(path='a')",
                "[{\"name\": \"f\"}]",
                "[f(a=1)] trailing",
                "[f(a=1)]  \n trailing",
                "[f(a=1), g(x)] rest",
                "[f(a=1), oops",
                "   [read_fi",
                "\u{a0}é prose",
                "<|python_start|>[f(a=1)]<|python_end|> after",
                "<|python_start|> prose",
            ] {
                // Parsed whole (as `parse` does), content is always cut from the input.
                assert!(spans_spell_content(name, text, &[]), "{name} {text:?}");
                for cut in (0..=text.len()).filter(|&c| text.is_char_boundary(c)).step_by(7) {
                    spans_spell_content(name, text, &[cut]);
                }
            }
        }
    }

    #[test]
    fn prose_passes_through_after_the_decision() {
        for name in ["pythonic", "llama4_pythonic"] {
            let p = parser(name);
            let mut s = p.stream();
            let mut events = s.feed("The quick");
            for _ in 0..3 {
                events.extend(s.feed(" brown fox [f(a=1)]."));
            }
            events.extend(s.finish());
            let text = format!("The quick{}", " brown fox [f(a=1)].".repeat(3));
            let streamed: Vec<&str> = events
                .iter()
                .map(|e| match e {
                    Event::Content(t) => t.as_str(),
                    other => panic!("{other:?}"),
                })
                .collect();
            // One content event per feed: each chunk after the decision is passed on whole.
            assert_eq!(
                streamed,
                [
                    "The quick",
                    " brown fox [f(a=1)].",
                    " brown fox [f(a=1)].",
                    " brown fox [f(a=1)]."
                ]
            );
            let r = s.result();
            assert_eq!(r.content.as_deref(), Some(text.as_str()));
            assert!(r.tool_calls.is_empty() && r.issues.is_empty());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn fragments_never_panic_and_split_invariant(
            text in soup(FRAGMENTS),
            cuts in prop::collection::vec(0usize..200, 0..10),
            llama4 in any::<bool>(),
        ) {
            let name = if llama4 { "llama4_pythonic" } else { "pythonic" };
            prop_assert!(spans_spell_content(name, &text, &[]));
            spans_spell_content(name, &text, &cuts);
            let r = soup_holds(name, &text, cuts)?;
            if r.tool_calls.is_empty() {
                let nonws = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
                prop_assert_eq!(nonws(r.content.as_deref().unwrap_or("")), nonws(&text));
            }
        }
    }
}
