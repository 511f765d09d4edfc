//! Where a stream's events go: the [`EventSink`] trait, `Vec<Event>` (the usual sink), and
//! [`ForwardSink`] (text forwarded as it comes, no `Event` built per delta).

use super::types::Event;

/// Where a stream's events go. `Vec<Event>` is the usual sink (adjacent content or argument
/// pieces are merged into one event); a consumer that forwards text as it comes (a server
/// writing SSE chunks) can implement this to avoid building `Event` strings at all.
pub trait EventSink {
    fn content(&mut self, text: &str);
    fn start(&mut self, index: usize, id: &str, name: &str);
    fn args(&mut self, index: usize, text: &str);
    fn end(&mut self, index: usize);
}

impl EventSink for Vec<Event> {
    fn content(&mut self, text: &str) {
        if let Some(Event::Content(last)) = self.last_mut() {
            last.push_str(text);
        } else {
            self.push(Event::Content(text.to_owned()));
        }
    }

    fn start(&mut self, index: usize, id: &str, name: &str) {
        self.push(Event::ToolCallStart {
            index,
            id: id.to_owned(),
            name: name.to_owned(),
        });
    }

    fn args(&mut self, index: usize, text: &str) {
        match self.last_mut() {
            Some(Event::ToolCallArgsDelta { index: i, text: last }) if *i == index => last.push_str(text),
            _ => self.push(Event::ToolCallArgsDelta {
                index,
                text: text.to_owned(),
            }),
        }
    }

    fn end(&mut self, index: usize) {
        self.push(Event::ToolCallEnd { index });
    }
}

/// A sink that forwards each event's text into one buffer the caller drains after each feed (as a
/// server writing SSE frames would), counting events, without building an `Event` per delta. The
/// benchmarks time streaming with it (`stream_vs_parse`, `rust/bench_peers`).
#[derive(Debug, Default)]
pub struct ForwardSink {
    /// Text of the events since the caller last cleared it: content, call ids and names, argument
    /// deltas, in order.
    pub buf: String,
    /// Events received so far.
    pub events: usize,
}

impl EventSink for ForwardSink {
    fn content(&mut self, text: &str) {
        self.buf.push_str(text);
        self.events += 1;
    }

    fn start(&mut self, _index: usize, id: &str, name: &str) {
        self.buf.push_str(id);
        self.buf.push_str(name);
        self.events += 1;
    }

    fn args(&mut self, _index: usize, text: &str) {
        self.buf.push_str(text);
        self.events += 1;
    }

    fn end(&mut self, _index: usize) {
        self.events += 1;
    }
}
