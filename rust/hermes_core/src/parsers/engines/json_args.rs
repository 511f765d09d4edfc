//! One call's JSON arguments as they stream: [`ArgsValue`] (one raw JSON value as it arrives,
//! through [`JsonScanner`], with the `bad_arguments` check on its first byte) and the issues for
//! arguments that break or are cut off.

use crate::parsers::json_scan::{JsonError, JsonScanner, Status};
use crate::parsers::lane::Lane;
use crate::parsers::types::{IssueKind, Pos};
use crate::parsers::Emitter;

/// The output ended inside a started call: `leftover` goes to its arguments, the call is
/// reported `truncated` at `at` and ended (it keeps what arrived). `missing`: when the arguments
/// themselves were complete, what of the call's markup did not arrive (the message says so
/// rather than calling the arguments incomplete).
pub(crate) fn truncated_args(out: &mut Emitter<'_>, leftover: &str, at: Pos, missing: Option<&str>) {
    out.args(leftover);
    let msg = match missing {
        None => "output ended inside a tool call's arguments; they are incomplete".to_owned(),
        Some(what) => format!("output ended after a tool call's complete arguments, before {what}; the call is kept"),
    };
    out.issue(IssueKind::Truncated, at, msg);
    out.end_call();
}

/// Report arguments whose JSON broke after the call started (at input byte `at`): the call keeps
/// the raw text it already streamed as its arguments.
#[inline]
pub(super) fn malformed_args_issue(out: &mut Emitter<'_>, at: usize, e: &JsonError) {
    let pos = out.pos(at);
    let msg = format!(
        "malformed JSON in tool call arguments: {}; the arguments are kept as written",
        e.kind.description()
    );
    out.issue(IssueKind::MalformedJson, pos, msg);
}

/// One JSON arguments value, streamed raw as it arrives. Feed it from the value's first byte
/// (callers skip the whitespace before it, so `arguments` is exactly the value's text).
pub(crate) struct ArgsValue {
    scanner: JsonScanner,
    first: bool,
}

impl ArgsValue {
    pub(crate) fn new() -> ArgsValue {
        ArgsValue {
            scanner: JsonScanner::new(),
            first: true,
        }
    }

    pub(crate) fn reset(&mut self) {
        self.scanner.reset();
        self.first = true;
    }

    /// Scan `input` (at absolute `base`), sending what belongs to the value to the open call;
    /// returns the bytes consumed and the value's status. JSON that breaks is reported here
    /// (`malformed_json`); the call keeps what it streamed.
    pub(crate) fn feed(&mut self, input: &str, base: usize, out: &mut Emitter<'_>) -> (usize, Status) {
        if self.first && !input.is_empty() {
            self.first = false;
            if !input.starts_with('{') {
                let pos = out.pos(base);
                out.issue(
                    IssueKind::BadArguments,
                    pos,
                    "the tool call's arguments are not a JSON object; they are passed on as written",
                );
            }
        }
        let (n, status) = self.scanner.feed(input.as_bytes());
        out.args(input.get(..n).unwrap_or_default());
        if let Status::Error(e) = &status {
            malformed_args_issue(out, base + n, e);
        }
        (n, status)
    }

    /// The output ended: a bare top-level number completes here; anything else is cut short.
    pub(crate) fn end(&mut self) -> Status {
        self.scanner.end()
    }

    /// Inside a JSON string of the value: the lane that may pass text on ([`Lane::Off`]
    /// otherwise, and before the value's first byte).
    pub(crate) fn string_lane(&self) -> Lane {
        if self.first {
            Lane::Off
        } else {
            self.scanner.string_lane()
        }
    }

    /// Take over the state of a lane opened from [`ArgsValue::string_lane`].
    pub(crate) fn resume_lane(&mut self, lane: Lane) {
        self.scanner.resume_lane(lane);
    }
}
