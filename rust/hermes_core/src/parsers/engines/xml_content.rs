//! Content text around the calls of the XML-parameter formats (qwen3_coder, glm45/glm47).
//!
//! vLLM's engine for these formats strips the content when calls were found (the template's
//! newline before `<tool_call>` is framing) and keeps it verbatim otherwise. Streaming cannot
//! know the future, so whitespace runs are held back instead: a run of whitespace is released
//! when non-whitespace text follows it, dropped when a call starts right after it, and at the
//! end of the output kept only if no call was made. This is the one place where these formats
//! hold back more than a marker's length (only ever whitespace). Leading whitespace followed by
//! prose and then a call is kept (vLLM would strip it; it cannot be known in time).

use crate::parsers::Emitter;

#[derive(Debug, Default)]
pub struct FramedContent {
    pending_ws: String,
    called: bool,
}

impl FramedContent {
    /// Plain text for `content`.
    pub fn text(&mut self, out: &mut Emitter<'_>, s: &str) {
        if s.is_empty() {
            return;
        }
        let kept = s.trim_end();
        if kept.is_empty() {
            self.pending_ws.push_str(s);
            return;
        }
        if !self.pending_ws.is_empty() {
            out.content(&self.pending_ws);
            self.pending_ws.clear();
        }
        out.content(kept);
        self.pending_ws.push_str(&s[kept.len()..]);
    }

    /// Text passes as it is (no whitespace held; a chunk must not end in whitespace).
    pub fn holds_nothing(&self) -> bool {
        self.pending_ws.is_empty()
    }

    /// Whether a call has started.
    pub fn called(&self) -> bool {
        self.called
    }

    /// A call starts here: the whitespace before it is framing.
    pub fn call_starts(&mut self) {
        self.pending_ws.clear();
        self.called = true;
    }

    /// End of output: trailing whitespace is content only when no call was made.
    pub fn finish(&mut self, out: &mut Emitter<'_>) {
        if !self.called {
            out.content(&self.pending_ws);
        }
        self.pending_ws.clear();
    }
}
