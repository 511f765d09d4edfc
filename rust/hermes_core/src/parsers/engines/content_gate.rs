//! [`Gate`]: content with the whitespace policy the vLLM parsers apply around call markup (e.g.
//! the engine-based parsers `strip()` content when calls were found). Whitespace is the only
//! text it ever holds back.

use crate::parsers::json_bytes::is_ws;
use crate::parsers::lane::Lane;
use crate::parsers::marker::MarkerSet;
use crate::parsers::Emitter;

/// Content with the whitespace policy around call markup.
///
/// - `strip_edges` (vLLM's engine parsers, which `strip()` content when calls are found):
///   whitespace right before markup is dropped, and whitespace right after markup is dropped
///   when no content has been released yet.
/// - `drop_tail_ws`: whitespace at the very end of the output is dropped once markup was seen
///   (vLLM returns `content: null` for an output that is only calls and a trailing newline).
/// - `lone_space`: content that is exactly one space before the first markup is framing (vLLM's
///   Jamba returns `content: null` for `" <tool_calls>..."`, the space its template writes).
///
/// Only whitespace is ever held back, and only while it may still turn out to be framing.
/// Outputs without markup come out verbatim.
pub(crate) struct Gate {
    strip_edges: bool,
    drop_tail_ws: bool,
    lone_space: bool,
    ws: String,
    after_markup: bool,
    saw_markup: bool,
    emitted: bool,
}

impl Gate {
    pub(crate) fn new(strip_edges: bool, drop_tail_ws: bool) -> Gate {
        Gate {
            strip_edges,
            drop_tail_ws,
            lone_space: false,
            ws: String::new(),
            after_markup: false,
            saw_markup: false,
            emitted: false,
        }
    }

    /// [`Gate`] with the `lone_space` rule.
    pub(crate) fn with_lone_space(mut self) -> Gate {
        self.lone_space = true;
        self
    }

    /// Plain text for content.
    pub(crate) fn text(&mut self, s: &str, out: &mut Emitter<'_>) {
        if s.is_empty() {
            return;
        }
        if !self.strip_edges && !self.saw_markup {
            if self.lone_space && !out.content_emitted() {
                // A first lone space waits: markup right after it makes it framing.
                if self.ws.is_empty() && s == " " {
                    self.ws.push(' ');
                    return;
                }
                out.content(&self.ws);
                self.ws.clear();
            }
            // Nothing else can make this whitespace framing except later markup, which keeps it.
            out.content(s);
            self.emitted = true;
            return;
        }
        let body_end = s.bytes().rposition(|b| !is_ws(b)).map_or(0, |i| i + 1);
        if body_end == 0 {
            self.ws.push_str(s);
            return;
        }
        // Whitespace between markup and the first content is framing too (vLLM strips content).
        let framing = self.strip_edges && self.after_markup && !self.emitted;
        if !self.ws.is_empty() {
            if !framing {
                out.content(&self.ws);
            }
            self.ws.clear();
        }
        let (body, tail) = s.split_at(body_end);
        let body = if framing {
            body.trim_start_matches([' ', '\t', '\n', '\r'])
        } else {
            body
        };
        out.content(body);
        self.ws.push_str(tail);
        self.after_markup = false;
        self.emitted = true;
    }

    /// The lane for text that would come out as it is (see [`Lane::Content`]; `stop`: the first
    /// byte of the markers looked for), while nothing is held and no framing decision is open.
    pub(crate) fn content_lane(&self, stop: Option<u8>) -> Lane {
        let framing_open = self.strip_edges && !self.emitted;
        match stop {
            Some(stop) if self.ws.is_empty() && !framing_open => Lane::Content {
                stop,
                hold_trailing_ws: self.strip_edges || self.saw_markup,
            },
            _ => Lane::Off,
        }
    }

    /// Plain text up to the next of `markers` goes to content ([`MarkerSet::until`]'s answer).
    #[inline]
    pub(crate) fn until(
        &mut self,
        markers: &MarkerSet,
        rest: &str,
        eof: bool,
        out: &mut Emitter<'_>,
    ) -> (usize, Option<(usize, usize)>) {
        let (at, hit) = markers.until(rest, eof);
        self.text(rest.get(..at).unwrap_or_default(), out);
        (at, hit)
    }

    /// The open call ends with its closing markup.
    pub(crate) fn end_call(&mut self, out: &mut Emitter<'_>) {
        out.end_call();
        self.markup(out);
    }

    /// Markup (a marker, a call) follows the text so far.
    pub(crate) fn markup(&mut self, out: &mut Emitter<'_>) {
        let lone_space = self.lone_space && !out.content_emitted() && !self.saw_markup && self.ws == " ";
        if !self.strip_edges && !lone_space {
            out.content(&self.ws);
        }
        self.ws.clear();
        self.after_markup = true;
        self.saw_markup = true;
    }

    /// End of output.
    pub(crate) fn finish(&mut self, out: &mut Emitter<'_>) {
        if !(self.saw_markup && self.drop_tail_ws) {
            out.content(&self.ws);
        }
        self.ws.clear();
    }
}
