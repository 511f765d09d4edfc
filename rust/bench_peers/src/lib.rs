//! Side-by-side runners for `hermes_core` and the `tool-parser` crate over the same inputs.
//!
//! Inputs are the files `python benches/run.py` writes (`manifest.json` listing, per workload, the
//! parser name, whether it is call-dense, its size label and a text file), so both crates parse the
//! exact bytes the Python benchmarks and vLLM parse. Streaming feeds `CHUNK`-byte pieces (cut
//! back to a char boundary), the "small chunks" a gateway sees.

use std::path::Path;
use std::time::{Duration, Instant};

use hermes_core::parsers::{get_parser, ForwardSink, Tools};
use openai_protocol::common::Tool;
use tool_parser::parsers::QwenXmlParser;
use tool_parser::{
    DeepSeekParser, Glm4MoeParser, KimiK2Parser, LlamaParser, MistralParser, PythonicParser, QwenParser, ToolParser,
};

/// Bytes per streamed chunk.
pub const CHUNK: usize = 4;

/// One input from the manifest.
pub struct Workload {
    pub id: String,
    pub parser: String,
    pub dense: bool,
    pub size: String,
    pub text: String,
}

/// Loaded manifest: workloads plus the tool schemas (OpenAI JSON) both crates get.
pub struct Inputs {
    pub tools_json: String,
    pub workloads: Vec<Workload>,
}

/// Read `dir/manifest.json` and the text files it names.
pub fn load_inputs(dir: &Path) -> Result<Inputs, String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let manifest: serde_json::Value = serde_json::from_str(&read(&dir.join("manifest.json"))?)
        .map_err(|e| format!("manifest.json is not JSON: {e}"))?;
    let tools_json = manifest
        .get("tools")
        .map(|t| t.to_string())
        .unwrap_or_else(|| "[]".to_string());
    let mut workloads = Vec::new();
    for w in manifest
        .get("workloads")
        .and_then(|w| w.as_array())
        .into_iter()
        .flatten()
    {
        let field = |k: &str| w.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let (Some(id), Some(parser), Some(size), Some(file)) =
            (field("id"), field("parser"), field("size"), field("file"))
        else {
            return Err(format!("manifest entry lacks id/parser/size/file: {w}"));
        };
        let dense = w.get("dense").and_then(|v| v.as_bool()).unwrap_or(false);
        workloads.push(Workload {
            id,
            parser,
            dense,
            size,
            text: read(&dir.join(file))?,
        });
    }
    Ok(Inputs { tools_json, workloads })
}

/// `tool-parser`'s parser for a hermes_env (vLLM) parser name, where it implements the format.
pub fn peer_parser(name: &str) -> Option<Box<dyn ToolParser>> {
    Some(match name {
        "hermes" => Box::new(QwenParser::new()),
        "qwen3_coder" => Box::new(QwenXmlParser::new()),
        "llama3_json" => Box::new(LlamaParser::new()),
        "mistral" => Box::new(MistralParser::new()),
        "pythonic" => Box::new(PythonicParser::new()),
        "deepseek_v3" => Box::new(DeepSeekParser::new()),
        "kimi_k2" => Box::new(KimiK2Parser::new()),
        "glm45" => Box::new(Glm4MoeParser::glm45()),
        _ => return None,
    })
}

/// Split `text` into pieces of about `size` bytes on char boundaries.
pub fn chunks(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / size.max(1) + 1);
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size.max(1)).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// Both crates' runners for one workload.
pub struct Pair {
    hermes: hermes_core::parsers::Parser,
    peer_tools: Vec<Tool>,
    name: String,
    rt: tokio::runtime::Runtime,
}

impl Pair {
    pub fn new(name: &str, tools_json: &str) -> Result<Pair, String> {
        let tools = Tools::from_json(tools_json).map_err(|e| e.to_string())?;
        let hermes = get_parser(name, tools).map_err(|e| e.to_string())?;
        let peer_tools: Vec<Tool> = serde_json::from_str(tools_json).map_err(|e| format!("tools JSON: {e}"))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Pair {
            hermes,
            peer_tools,
            name: name.to_string(),
            rt,
        })
    }

    pub fn has_peer(&self) -> bool {
        peer_parser(&self.name).is_some()
    }

    /// hermes_core whole-text parse; returns the number of calls.
    pub fn hermes_whole(&self, text: &str) -> usize {
        self.hermes.parse(text).tool_calls.len()
    }

    /// hermes_core streaming over `pieces`, events into one reused buffer (as a server loop would
    /// drain them per chunk); returns the number of events.
    pub fn hermes_stream(&self, pieces: &[&str]) -> usize {
        let mut s = self.hermes.stream();
        let mut events = Vec::new();
        let mut n = 0;
        for p in pieces {
            events.clear();
            s.feed_into(p, None, Some(&mut events));
            n += events.len();
        }
        events.clear();
        s.finish_into(Some(&mut events));
        n + events.len()
    }

    /// hermes_core streaming over `pieces` into a sink that forwards each event's text as it
    /// comes (copied into one reused buffer, as a server writing SSE chunks would), without
    /// building an `Event` per delta; returns the number of events. The issues' "streaming at
    /// most 3x whole-text" target is measured this way.
    pub fn hermes_stream_forward(&self, pieces: &[&str]) -> usize {
        let mut s = self.hermes.stream();
        let mut sink = ForwardSink::default();
        for p in pieces {
            s.feed_sink(p, None, Some(&mut sink));
            sink.buf.clear();
        }
        s.finish_sink(Some(&mut sink));
        sink.events
    }

    /// tool-parser whole-text parse (`parse_complete_with_tools`); returns the number of calls.
    pub fn peer_whole(&self, text: &str) -> Result<usize, String> {
        let parser = peer_parser(&self.name).ok_or("no tool-parser equivalent")?;
        let tools = &self.peer_tools;
        self.rt.block_on(async move {
            parser
                .parse_complete_with_tools(text, tools)
                .await
                .map(|(_, calls)| calls.len())
                .map_err(|e| e.to_string())
        })
    }

    /// tool-parser streaming (`parse_incremental` per piece); returns the number of call items.
    pub fn peer_stream(&self, pieces: &[&str]) -> Result<usize, String> {
        let mut parser = peer_parser(&self.name).ok_or("no tool-parser equivalent")?;
        let tools = &self.peer_tools;
        self.rt.block_on(async move {
            let mut n = 0;
            for p in pieces {
                n += parser
                    .parse_incremental(p, tools)
                    .await
                    .map_err(|e| e.to_string())?
                    .calls
                    .len();
            }
            Ok(n)
        })
    }
}

/// Best time of `f` over repeated runs lasting at least `min_time` (at least one run).
pub fn best_time<T>(min_time: Duration, mut f: impl FnMut() -> T) -> (Duration, T) {
    let start = Instant::now();
    let mut best = Duration::MAX;
    loop {
        let t0 = Instant::now();
        let out = f();
        best = best.min(t0.elapsed());
        if start.elapsed() >= min_time {
            return (best, out);
        }
    }
}
