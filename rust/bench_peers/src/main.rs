//! `bench_peers --inputs DIR [--min-time SECONDS] [--max-seconds SECONDS]`: time hermes_core and
//! tool-parser on every workload in `DIR/manifest.json` and print one JSON object to stdout
//! (collected by `benches/run.py`). The criterion bench (`cargo bench`) measures the same pairs
//! with statistics; this binary gives run.py numbers in one pass.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bench_peers::{best_time, chunks, load_inputs, Pair, CHUNK};
use serde_json::{json, Map, Value};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = arg(&args, "--inputs") else {
        eprintln!("usage: bench_peers --inputs DIR [--min-time SECONDS] [--max-seconds SECONDS]");
        std::process::exit(2);
    };
    let min_time = Duration::from_secs_f64(arg(&args, "--min-time").and_then(|s| s.parse().ok()).unwrap_or(0.2));
    // A peer run slower than this is not repeated at larger sizes of the same group.
    let max_seconds: f64 = arg(&args, "--max-seconds").and_then(|s| s.parse().ok()).unwrap_or(20.0);
    let inputs = match load_inputs(&PathBuf::from(&dir)) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("bench_peers: {e}");
            std::process::exit(2);
        }
    };
    let mut cases = Map::new();
    let mut slow: Vec<String> = Vec::new();
    for w in &inputs.workloads {
        let pair = match Pair::new(&w.parser, &inputs.tools_json) {
            Ok(p) => p,
            Err(e) => {
                cases.insert(w.id.clone(), json!({"error": e}));
                continue;
            }
        };
        let bytes = w.text.len() as f64;
        let pieces = chunks(&w.text, CHUNK);
        let (hw, calls) = best_time(min_time, || pair.hermes_whole(&w.text));
        let (hs, _) = best_time(min_time, || pair.hermes_stream(&pieces));
        let (hf, _) = best_time(min_time, || pair.hermes_stream_forward(&pieces));
        let mut row = json!({
            "parser": w.parser, "dense": w.dense, "size": w.size, "bytes": w.text.len(), "chunk_bytes": CHUNK,
            "chunks": pieces.len(), "hermes_calls": calls,
            "hermes_whole_s": hw.as_secs_f64(), "hermes_stream_s": hs.as_secs_f64(),
            "hermes_stream_forward_s": hf.as_secs_f64(),
            "hermes_whole_mb_s": bytes / hw.as_secs_f64() / 1e6,
        });
        let group = format!("{}:{}", w.parser, w.dense);
        if !pair.has_peer() {
            row["peer"] = json!("tool-parser has no parser for this format");
        } else if slow.contains(&group) {
            row["peer"] = json!(format!("skipped: a smaller size took over {max_seconds} s"));
        } else {
            let t0 = Instant::now();
            let pw = best_time(Duration::ZERO, || pair.peer_whole(&w.text));
            let ps = best_time(Duration::ZERO, || pair.peer_stream(&pieces));
            if t0.elapsed().as_secs_f64() < max_seconds {
                // Cheap enough to repeat for a best-of time.
                let pw2 = best_time(min_time, || pair.peer_whole(&w.text));
                let ps2 = best_time(min_time, || pair.peer_stream(&pieces));
                row["peer_whole_s"] = json!(pw.0.min(pw2.0).as_secs_f64());
                row["peer_stream_s"] = json!(ps.0.min(ps2.0).as_secs_f64());
            } else {
                slow.push(group);
                row["peer_whole_s"] = json!(pw.0.as_secs_f64());
                row["peer_stream_s"] = json!(ps.0.as_secs_f64());
            }
            match pw.1 {
                Ok(n) => row["peer_calls"] = json!(n),
                Err(e) => row["peer_error"] = json!(e),
            }
            if let Err(e) = ps.1 {
                row["peer_stream_error"] = json!(e);
            }
            if let Some(s) = row["peer_whole_s"].as_f64() {
                row["peer_whole_mb_s"] = json!(bytes / s / 1e6);
            }
        }
        eprintln!("bench_peers {}: {}", w.id, row);
        cases.insert(w.id.clone(), row);
    }
    let out: Value = json!({"tool_parser_version": "1.10.0", "chunk_bytes": CHUNK, "cases": cases});
    let text = serde_json::to_string(&out).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{text}");
}
