//! The state-machine driver every machine-based format uses: [`Machine`] + [`Driven`], the
//! "held tail + chunk" feeding loop of `parsers`' module doc and the stepping loop over it,
//! written once, so each format only writes `step` (consume what its state can decide, or wait)
//! and `end`; [`MachineFormat`]: a machine and a render function as a [`Format`].

use crate::parsers::lane::Lane;
use crate::parsers::tools::Tools;
use crate::parsers::types::{RenderError, ToolCall};
use crate::parsers::{Emitter, Format, FormatStream};
use std::sync::Arc;

/// What one [`Machine::step`] did with the input it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// This many bytes were consumed; step again over the rest.
    On(usize),
    /// This many bytes were consumed; the rest cannot be decided before more text comes. It is
    /// handed back, prefixed, next time (after the last input, to [`Machine::end`]).
    Wait(usize),
}

/// A format's state machine over "held tail + new chunk"; [`Driven`] runs the stepping loop.
pub(crate) trait Machine: Send {
    /// One step in the current state over `rest`, the input not consumed yet, whose first byte
    /// is absolute byte `base`. A step that consumes nothing must change state or wait. With
    /// `eof`, no more text will come: partial markers are no longer possible.
    fn step(&mut self, rest: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> Step;
    /// End of output, after the last steps (with `eof`): `leftover` is what they did not
    /// consume. Flush everything (content, arguments) and report what was unfinished.
    fn end(&mut self, leftover: &str, out: &mut Emitter<'_>);

    /// A fast path for the states a long output spends its time in, asked only while [`Driven`]
    /// holds no unconsumed text: take all of `chunk` at once (true) or leave it to the steps.
    fn take_chunk(&mut self, _chunk: &str, _out: &mut Emitter<'_>) -> bool {
        false
    }

    /// The lane the driver may run after this feed (see [`Lane`]); asked only when [`Driven`]
    /// holds no unconsumed text. Return a lane only in a state it cannot change, holding nothing.
    fn lane(&self) -> Lane {
        Lane::Off
    }

    /// Take over the state the lane from [`Machine::lane`] ended in (see
    /// [`Emitter::resumed_lane`]); called before the first step after a lane was open.
    fn resume_lane(&mut self, _lane: Lane) {}

    /// [`FormatStream::holds_text`] apart from [`Driven`]'s own unconsumed tail: whether the
    /// machine may still ask for positions of text fed before the current input. The default
    /// (true) is always correct.
    fn holds_text(&self) -> bool {
        true
    }
}

/// Adapts a [`Machine`] to [`FormatStream`]; keeps the unconsumed tail between feeds.
pub(crate) struct Driven<M> {
    machine: M,
    held: String,
}

impl<M: Machine> Driven<M> {
    pub(crate) fn new(machine: M) -> Driven<M> {
        Driven {
            machine,
            held: String::new(),
        }
    }

    /// Step the machine over `input` (its first byte is absolute byte `base`) until it waits
    /// or the input is used up; returns how many bytes were consumed.
    #[inline]
    fn run(&mut self, input: &str, base: usize, eof: bool, out: &mut Emitter<'_>) -> usize {
        let mut i = 0;
        while let Some(rest) = input.get(i..).filter(|rest| !rest.is_empty()) {
            match self.machine.step(rest, base + i, eof, out) {
                Step::On(n) => i += n,
                Step::Wait(n) => return i + n,
            }
        }
        i
    }

    fn feed_input(&mut self, chunk: &str, eof: bool, out: &mut Emitter<'_>) {
        let base = out.chunk_offset().saturating_sub(self.held.len());
        let mut buf = std::mem::take(&mut self.held);
        if buf.is_empty() {
            let n = self.run(chunk, base, eof, out);
            buf.push_str(chunk.get(n..).unwrap_or_default());
        } else {
            buf.push_str(chunk);
            let n = self.run(&buf, base, eof, out);
            buf.drain(..n.min(buf.len()));
        }
        self.held = buf;
    }
}

impl<M: Machine> FormatStream for Driven<M> {
    fn feed(&mut self, chunk: &str, out: &mut Emitter<'_>) {
        let resumed = out.resumed_lane();
        if resumed != Lane::Off {
            self.machine.resume_lane(resumed);
        }
        if !(self.held.is_empty() && self.machine.take_chunk(chunk, out)) {
            self.feed_input(chunk, false, out);
        }
        if self.held.is_empty() {
            out.set_lane(self.machine.lane());
        }
    }

    fn finish(&mut self, out: &mut Emitter<'_>) {
        let resumed = out.resumed_lane();
        if resumed != Lane::Off {
            self.machine.resume_lane(resumed);
        }
        self.feed_input("", true, out);
        let leftover = std::mem::take(&mut self.held);
        self.machine.end(&leftover, out);
    }

    fn holds_text(&self) -> bool {
        !self.held.is_empty() || self.machine.holds_text()
    }
}

/// A format that is a [`Machine`] (a fresh one per output and request tools, run by
/// [`Driven`]) and a render function, as most formats are.
pub(crate) struct MachineFormat<M> {
    pub machine: fn(&Arc<Tools>) -> M,
    pub render: fn(&[ToolCall], Option<&str>) -> Result<String, RenderError>,
}

impl<M: Machine + 'static> Format for MachineFormat<M> {
    fn stream(&self, tools: &Arc<Tools>) -> Box<dyn FormatStream> {
        Box::new(Driven::new((self.machine)(tools)))
    }

    fn render(&self, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
        (self.render)(calls, content)
    }
}
