//! Pure-Rust streaming cost versus whole-text parsing (issue 2/3 target: streaming in 4-byte
//! chunks costs at most 3x `parse` of the same text).
//!
//! `cargo run --release -p hermes_core --example stream_vs_parse -- PARSER FILE [FILE...]`
//! prints, per file: size, whole-text MB/s, streamed MB/s with 4-byte chunks (moved to UTF-8
//! boundaries) into a forwarding sink and into `Vec<Event>`, and the ratios to whole-text.
//! `ONLY_WHOLE=1` / `ONLY_STREAM=1` time one side only, `RUNS=n` makes n runs (for a profiler). benches/parse_bench.py writes the files and calls this.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use hermes_core::parsers::{get_parser, ForwardSink, Parser, Tools};

/// Best time of repeated runs, repeating until at least `budget` has been spent (min 3 runs).
fn best_of(budget: Duration, mut f: impl FnMut()) -> Duration {
    // `RUNS=n`: exactly n runs (for instruction counts under callgrind).
    let fixed: Option<u32> = std::env::var("RUNS").ok().and_then(|r| r.parse().ok());
    let start = Instant::now();
    let mut best = Duration::MAX;
    let mut runs = 0;
    while fixed.map_or(runs < 3 || start.elapsed() < budget, |n| runs < n) {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed());
        runs += 1;
    }
    best
}

fn chunk_bounds(text: &str, size: usize) -> Vec<usize> {
    let mut bounds = vec![0];
    let mut at = 0;
    while at < text.len() {
        let mut next = (at + size).min(text.len());
        while !text.is_char_boundary(next) {
            next += 1;
        }
        bounds.push(next);
        at = next;
    }
    bounds
}

/// Chunks per timed section of a streamed run.
const SECTION: usize = 2048;

/// Streams the text once, adding each section's time to `sections` (min over runs is kept).
/// The pieces are cut before timing (as a server receives them, already `&str`s).
fn stream_chunks(parser: &Parser, pieces: &[&str], sections: &mut Vec<Duration>) -> usize {
    let mut s = parser.stream();
    let mut sink = ForwardSink::default();
    for (k, section) in pieces.chunks(SECTION).enumerate() {
        let t = Instant::now();
        for piece in section {
            s.feed_sink(piece, None, Some(&mut sink));
            sink.buf.clear();
        }
        let d = t.elapsed();
        match sections.get_mut(k) {
            Some(best) => *best = (*best).min(d),
            None => sections.push(d),
        }
    }
    s.finish_sink(Some(&mut sink));
    s.into_result().tool_calls.len() + sink.events
}

/// The same with `Vec<Event>` (one String per text event, dropped after each feed).
fn stream_events(parser: &Parser, pieces: &[&str]) -> usize {
    let mut s = parser.stream();
    let mut events = Vec::new();
    let mut n = 0;
    for piece in pieces {
        s.feed_into(piece, None, Some(&mut events));
        n += events.len();
        events.clear();
    }
    s.finish_into(Some(&mut events));
    s.into_result().tool_calls.len() + n
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(name) = args.next() else {
        println!("usage: stream_vs_parse PARSER FILE [FILE...]");
        std::process::exit(2);
    };
    let parser = match get_parser(&name, Tools::none()) {
        Ok(p) => p,
        Err(e) => {
            println!("{e}");
            std::process::exit(2);
        }
    };
    println!(
        "{:<28} {:>9} {:>7} {:>12} {:>14} {:>7}",
        "file", "bytes", "calls", "parse MB/s", "stream4 MB/s", "ratio"
    );
    for path in args {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                println!("{path}: {e}");
                continue;
            }
        };
        let budget = Duration::from_millis(400);
        let only_stream = std::env::var_os("ONLY_STREAM").is_some();
        let calls = if only_stream {
            0
        } else {
            parser.parse(&text).tool_calls.len()
        };
        let whole = if std::env::var_os("ONLY_STREAM").is_some() {
            Duration::from_nanos(1)
        } else {
            best_of(budget, || {
                black_box(parser.parse(black_box(&text)));
            })
        };
        let bounds = chunk_bounds(&text, 4);
        let pieces: Vec<&str> = bounds.windows(2).map(|w| &text[w[0]..w[1]]).collect();
        // The streamed time is the sum over sections of 2048 feeds of each section's best time
        // over the runs: a run of 10+ ms is rarely free of preemption on a busy machine, a
        // section of ~0.1 ms usually is.
        let mut sections = Vec::new();
        if std::env::var_os("ONLY_WHOLE").is_some() {
            sections.push(Duration::from_nanos(1));
        } else {
            best_of(budget, || {
                black_box(stream_chunks(&parser, black_box(&pieces), &mut sections));
            });
        }
        let streamed: Duration = sections.iter().sum();
        let vec_events = if std::env::var_os("ONLY_STREAM").is_some() || std::env::var_os("ONLY_WHOLE").is_some() {
            Duration::from_nanos(1)
        } else {
            best_of(budget, || {
                black_box(stream_events(&parser, black_box(&pieces)));
            })
        };
        let mbs = |d: Duration| text.len() as f64 / d.as_secs_f64() / 1e6;
        let file = std::path::Path::new(&path)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or(path);
        println!(
            "{:<22} {:>9} {:>6} {:>11.0} {:>13.0} {:>6.2}x {:>16.0} {:>6.2}x",
            file,
            text.len(),
            calls,
            mbs(whole),
            mbs(streamed),
            streamed.as_secs_f64() / whole.as_secs_f64(),
            mbs(vec_events),
            vec_events.as_secs_f64() / whole.as_secs_f64()
        );
    }
}
