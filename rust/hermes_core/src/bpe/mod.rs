//! Byte-level BPE encoding that gives exactly the ids of a Hugging Face `tokenizers` model.
//!
//! `tokenizers` spends most of an encode call on bookkeeping this crate does not need: the
//! regex pre-tokenizer (Oniguruma) and the offset alignments it keeps for every byte. For the
//! models most open LLMs ship — a byte-level BPE with an optional NFC normalizer, regex split
//! pre-tokenizers and plain added tokens — [`ByteLevelBpe`] does the same steps on bytes:
//!
//! 1. split the text on added tokens, leftmost-longest (non-normalized tokens first, then the
//!    normalized ones inside the rest, as `AddedVocabulary` does);
//! 2. split each remaining segment with the pre-tokenizer's regexes (`Isolated`: matches and
//!    the text between them are pieces), with Oniguruma's `\s+(?!\S)` emulated (the `regex`
//!    crate has no lookahead);
//! 3. merge each piece's bytes by merge rank, as `tokenizers`' `Word::merge_all` does (same
//!    priority order, ties to the leftmost pair), with a cache of pieces already seen.
//!
//! Anything else in `tokenizer.json` is refused by [`ByteLevelBpe::from_tokenizer_json`] with the
//! reason. Two engines can still classify a character differently (their Unicode tables are of
//! different versions), so only ASCII is trusted as is: a non-ASCII character is used once the
//! caller has checked it against the reference tokenizer ([`ByteLevelBpe::set_char`]);
//! [`ByteLevelBpe::encode`] returns `None` for a text with a character not vouched for, or a
//! segment the NFC normalizer would change, and the caller encodes that text with the reference.

mod config;
mod merges;
mod pretokenize;

#[cfg(test)]
mod tests;

use std::fmt;

use aho_corasick::AhoCorasick;
use unicode_normalization::{is_nfc_quick, IsNormalized};

use config::{AddedTokens, Config};
use merges::Merges;
use pretokenize::Splitter;

/// Why a `tokenizer.json` is not one [`ByteLevelBpe`] reproduces exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unsupported {}

/// Set of Unicode scalar values, one bit each.
struct CharSet(Vec<u64>);

impl CharSet {
    fn new() -> Self {
        CharSet(vec![0; (char::MAX as usize + 1).div_ceil(64)])
    }
    fn contains(&self, c: char) -> bool {
        let i = c as usize;
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
    fn set(&mut self, c: char, on: bool) {
        let i = c as usize;
        if on {
            self.0[i / 64] |= 1 << (i % 64);
        } else {
            self.0[i / 64] &= !(1 << (i % 64));
        }
    }
}

/// A byte-level BPE tokenizer rebuilt from `tokenizer.json`; see the module docs.
pub struct ByteLevelBpe {
    added: AddedTokens,
    nfc: bool,
    splitter: Splitter,
    merges: Merges,
    vouched: CharSet,
    refused: CharSet,
}

/// One part of a text: an added token's id, or text to pre-tokenize and merge.
enum Part<'a> {
    Token(u32),
    Text(&'a str),
}

impl ByteLevelBpe {
    /// Builds the encoder, or says which part of the configuration it does not reproduce.
    pub fn from_tokenizer_json(json: &str) -> Result<Self, Unsupported> {
        let config = Config::parse(json)?;
        Ok(ByteLevelBpe {
            added: config.added,
            nfc: config.nfc,
            splitter: config.splitter,
            merges: config.merges,
            vouched: CharSet::new(),
            refused: CharSet::new(),
        })
    }

    /// The ids of `text`, or `None` when it holds a non-ASCII character not vouched for (see
    /// [`ByteLevelBpe::unknown_chars`]) or a refused one, or a segment NFC would change.
    pub fn encode(&mut self, text: &str) -> Option<Vec<u32>> {
        if !text.is_ascii() && !text.chars().all(|c| c.is_ascii() || self.vouched.contains(c)) {
            return None;
        }
        self.encode_unchecked(text)
    }

    /// Like [`ByteLevelBpe::encode`] without the character check (for checking characters).
    pub fn encode_unchecked(&mut self, text: &str) -> Option<Vec<u32>> {
        let mut parts = Vec::new();
        if !split_added(&self.added, self.nfc, text, &mut parts) {
            return None;
        }
        let mut ids = Vec::with_capacity(text.len() / 3 + 1);
        for part in parts {
            match part {
                Part::Token(id) => ids.push(id),
                Part::Text(segment) => {
                    let merges = &mut self.merges;
                    self.splitter
                        .split(segment, &mut |piece| merges.encode_piece(piece.as_bytes(), &mut ids));
                }
            }
        }
        Some(ids)
    }

    /// The pre-tokenizer's pieces of `text` (no added tokens, no normalizer), as char offsets:
    /// what `tokenizers`' `pre_tokenizer.pre_tokenize_str` reports.
    pub fn pre_tokenize(&self, text: &str) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        self.splitter.split(text, &mut |piece| {
            // `piece` is a subslice of `text`: its byte offset comes from the pointers.
            let start = piece.as_ptr() as usize - text.as_ptr() as usize;
            spans.push((start, start + piece.len()));
        });
        let mut out = Vec::with_capacity(spans.len());
        let mut chars = 0;
        let mut at = 0;
        for (start, end) in spans {
            chars += text[at..start].chars().count();
            let first = chars;
            chars += text[start..end].chars().count();
            at = end;
            out.push((first, chars));
        }
        out
    }

    /// The distinct non-ASCII characters of `text` neither vouched for nor refused yet.
    pub fn unknown_chars(&self, text: &str) -> Vec<char> {
        let mut seen = CharSet::new();
        let mut out = Vec::new();
        for c in text.chars().filter(|c| !c.is_ascii()) {
            if !self.vouched.contains(c) && !self.refused.contains(c) && !seen.contains(c) {
                seen.set(c, true);
                out.push(c);
            }
        }
        out
    }

    /// Records the caller's verdict on a character: `ok` when the reference tokenizer treats it
    /// as this encoder does, so texts holding it may be encoded here.
    pub fn set_char(&mut self, c: char, ok: bool) {
        self.vouched.set(c, ok);
        self.refused.set(c, !ok);
    }
}

/// Splits `text` on added tokens into `parts`; false when a text segment is not NFC (with `nfc`).
fn split_added<'a>(added: &AddedTokens, nfc: bool, text: &'a str, parts: &mut Vec<Part<'a>>) -> bool {
    let mut at = 0;
    for m in find_all(added.raw.as_ref(), text) {
        if m.0 > at && !split_normalized(added, nfc, &text[at..m.0], parts) {
            return false;
        }
        parts.push(Part::Token(added.raw_ids[m.2]));
        at = m.1;
    }
    at == text.len() || split_normalized(added, nfc, &text[at..], parts)
}

/// A segment between raw added tokens: normalized (refused unless NFC leaves it as it is), then
/// split on the normalized added tokens.
fn split_normalized<'a>(added: &AddedTokens, nfc: bool, segment: &'a str, parts: &mut Vec<Part<'a>>) -> bool {
    if nfc && !segment.is_ascii() && is_nfc_quick(segment.chars()) != IsNormalized::Yes {
        return false;
    }
    let mut at = 0;
    for m in find_all(added.normalized.as_ref(), segment) {
        if m.0 > at {
            parts.push(Part::Text(&segment[at..m.0]));
        }
        parts.push(Part::Token(added.normalized_ids[m.2]));
        at = m.1;
    }
    if at < segment.len() {
        parts.push(Part::Text(&segment[at..]));
    }
    true
}

/// Leftmost-longest matches `(start, end, pattern)` of an automaton (none without one).
fn find_all(automaton: Option<&AhoCorasick>, text: &str) -> Vec<(usize, usize, usize)> {
    match automaton {
        Some(ac) => ac
            .find_iter(text)
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
            .collect(),
        None => Vec::new(),
    }
}
