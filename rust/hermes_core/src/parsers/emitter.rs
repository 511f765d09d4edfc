//! The [`Emitter`] a format writes its events to while it processes one chunk, and the
//! accumulated result behind it ([`Accum`]): the events and `ParseResult` come from the same
//! calls, so a stream's result and `parse` cannot disagree.

use std::sync::Arc;

use super::call_ids::CallIds;
use super::event_sink::EventSink;
use super::lane::Lane;
use super::tools::Tools;
use super::types::{IssueKind, ParseIssue, Pos, ToolCall, MAX_ISSUES};
use super::utf8::count_chars;

/// What the driver accumulates while a stream runs.
pub(super) struct Accum {
    pub(super) content: String,
    /// Where `content` came from: byte ranges of the output, in order, while every piece was a
    /// slice of the fed text (`spans_exact`); lets a binding reuse the input string.
    pub(super) spans: Vec<(usize, usize)>,
    pub(super) spans_exact: bool,
    pub(super) calls: Vec<ToolCall>,
    pub(super) issues: Vec<ParseIssue>,
    /// Issues past [`MAX_ISSUES`] (counted, not stored).
    pub(super) issues_omitted: usize,
    pub(super) open: Option<usize>,
    pub(super) tools: Arc<Tools>,
    pub(super) ids: CallIds,
    /// Set by the format for the chunks after its last feed (see [`Lane`]); the driver closes it
    /// before each format call.
    pub(super) lane: Lane,
    /// The lane's state when the driver handed the text back to the format (its last chunk was
    /// refused); what [`Emitter::resumed_lane`] tells the format.
    pub(super) resumed: Lane,
}

impl Accum {
    /// Store an issue, or count it once [`MAX_ISSUES`] are stored.
    pub(super) fn push_issue(&mut self, kind: IssueKind, at: Pos, message: impl Into<String>) {
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
}

/// What a format writes to while it processes one chunk. Adjacent content (or argument) pieces
/// are merged into one event, so a feed yields few events however the format slices its work.
pub struct Emitter<'a> {
    pub(super) acc: &'a mut Accum,
    pub(super) events: Option<&'a mut (dyn EventSink + 'a)>,
    pub(super) chunk: &'a [u8],
    pub(super) window: &'a [u8],
    pub(super) base: Pos,
    pub(super) cursor: (usize, usize),
}

impl<'a> Emitter<'a> {
    /// The emitter for one format call over `chunk` (starting at `base`; `window` holds the bytes
    /// fed before it); the lane the driver closed becomes the one the format may resume.
    #[inline]
    pub(super) fn new<'e: 'a>(
        acc: &'a mut Accum,
        events: Option<&'a mut (dyn EventSink + 'e)>,
        chunk: &'a [u8],
        window: &'a [u8],
        base: Pos,
    ) -> Emitter<'a> {
        acc.resumed = std::mem::take(&mut acc.lane);
        Emitter {
            acc,
            // Re-borrow for this call only (coercions do not reach inside an Option).
            events: match events {
                Some(e) => Some(&mut *e),
                None => None,
            },
            chunk,
            window,
            base,
            cursor: (0, 0),
        }
    }
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
    /// caller's string ([`Stream::content_spans`](super::Stream::content_spans)) as when the format passes chunk slices.
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
        let id = id.unwrap_or_else(|| self.acc.ids.next());
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
