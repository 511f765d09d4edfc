//! Criterion: hermes_core vs tool-parser, whole text and 4-byte-chunk streaming, per workload.
//!
//! Inputs: `BENCH_PEERS_INPUTS=DIR cargo bench --bench peers` where DIR was written by
//! `python benches/run.py --dump-workloads DIR` (same bytes as every other benchmark).

use std::path::PathBuf;

use bench_peers::{chunks, load_inputs, Pair, CHUNK};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn peers(c: &mut Criterion) {
    let Ok(dir) = std::env::var("BENCH_PEERS_INPUTS") else {
        eprintln!("set BENCH_PEERS_INPUTS to a folder written by `python benches/run.py --dump-workloads DIR`");
        return;
    };
    let inputs = match load_inputs(&PathBuf::from(dir)) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    for w in &inputs.workloads {
        let Ok(pair) = Pair::new(&w.parser, &inputs.tools_json) else {
            continue;
        };
        let pieces = chunks(&w.text, CHUNK);
        let mut g = c.benchmark_group(&w.id);
        g.sample_size(10).throughput(Throughput::Bytes(w.text.len() as u64));
        g.bench_function("hermes_core/whole", |b| b.iter(|| pair.hermes_whole(&w.text)));
        g.bench_function("hermes_core/stream", |b| b.iter(|| pair.hermes_stream(&pieces)));
        g.bench_function("hermes_core/stream-forward", |b| {
            b.iter(|| pair.hermes_stream_forward(&pieces))
        });
        if pair.has_peer() {
            g.bench_function("tool-parser/whole", |b| b.iter(|| pair.peer_whole(&w.text)));
            g.bench_function("tool-parser/stream", |b| b.iter(|| pair.peer_stream(&pieces)));
        }
        g.finish();
    }
}

criterion_group!(benches, peers);
criterion_main!(benches);
