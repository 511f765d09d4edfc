//! BPE merges of one pre-tokenized piece, in `tokenizers`' order, with a cache of pieces seen.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use super::Unsupported;

/// Pieces kept in the cache before it is emptied (`tokenizers` keeps 10,000 by default).
const CACHE_CAPACITY: usize = 65_536;
/// Longer pieces are not cached (they are rare, and would make the cache large).
const CACHE_MAX_PIECE: usize = 256;

/// GPT-2's byte-level alphabet: the character each byte is written as in the vocabulary.
pub(super) fn byte_char(b: u8) -> char {
    let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable {
        return char::from(b);
    }
    // The other bytes take 256, 257, ... in byte order.
    let rank = (0..b)
        .filter(|&x| !matches!(x, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF))
        .count();
    char::from_u32(256 + rank as u32).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// A piece's symbol while merging: a token id and its place in the linked list.
#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: usize,
    next: usize,
    removed: bool,
}

const NONE: usize = usize::MAX;

/// Vocabulary and merges of a plain byte-level BPE model, as `config` reads them from
/// `tokenizer.json`: what [`Merges::new`] builds from.
pub(super) struct Model {
    pub vocab: FxHashMap<String, u32>,
    pub merges: Vec<(String, String)>,
    pub ignore_merges: bool,
}

pub(super) struct Merges {
    byte_ids: [u32; 256],
    /// (left id, right id) -> (rank, merged id)
    pairs: FxHashMap<(u32, u32), (u32, u32)>,
    /// Whole pieces found in the vocabulary (`ignore_merges` models take them as they are).
    whole: Option<FxHashMap<Box<[u8]>, u32>>,
    cache: FxHashMap<Box<[u8]>, Box<[u32]>>,
    symbols: Vec<Symbol>,
    heap: BinaryHeap<Reverse<(u32, usize, u32)>>,
}

/// A vocabulary entry's bytes, when every character is in the byte-level alphabet.
fn token_bytes(token: &str, alphabet: &FxHashMap<char, u8>) -> Option<Vec<u8>> {
    token.chars().map(|c| alphabet.get(&c).copied()).collect()
}

impl Merges {
    pub fn new(model: &Model) -> Result<Self, Unsupported> {
        let alphabet: FxHashMap<char, u8> = (0..=255u8).map(|b| (byte_char(b), b)).collect();
        let mut byte_ids = [0u32; 256];
        for b in 0..=255u8 {
            let c = byte_char(b).to_string();
            byte_ids[b as usize] = *model
                .vocab
                .get(&c)
                .ok_or_else(|| Unsupported(format!("byte {b:#04x} ({c:?}) is not in the vocabulary")))?;
        }
        let mut pairs = FxHashMap::default();
        for (rank, (a, b)) in model.merges.iter().enumerate() {
            let id = |t: &str| {
                model
                    .vocab
                    .get(t)
                    .copied()
                    .ok_or_else(|| Unsupported(format!("merge token {t:?} is not in the vocabulary")))
            };
            let merged = id(&format!("{a}{b}"))?;
            // A repeated pair keeps its last rank, as tokenizers' HashMap collect does.
            pairs.insert((id(a)?, id(b)?), (rank as u32, merged));
        }
        let whole = model.ignore_merges.then(|| {
            model
                .vocab
                .iter()
                .filter_map(|(token, &id)| token_bytes(token, &alphabet).map(|b| (b.into_boxed_slice(), id)))
                .collect()
        });
        Ok(Merges {
            byte_ids,
            pairs,
            whole,
            cache: FxHashMap::default(),
            symbols: Vec::new(),
            heap: BinaryHeap::new(),
        })
    }

    /// Appends the ids of one piece.
    pub fn encode_piece(&mut self, piece: &[u8], out: &mut Vec<u32>) {
        if let Some(ids) = self.cache.get(piece) {
            out.extend_from_slice(ids);
            return;
        }
        if let Some(&id) = self.whole.as_ref().and_then(|w| w.get(piece)) {
            out.push(id);
            return;
        }
        let start = out.len();
        self.merge(piece, out);
        if piece.len() <= CACHE_MAX_PIECE {
            if self.cache.len() >= CACHE_CAPACITY {
                self.cache.clear();
            }
            self.cache.insert(piece.into(), out[start..].into());
        }
    }

    /// `tokenizers`' `Word::merge_all`: the pair of lowest rank merges first, the leftmost of
    /// equal ranks first; a queued pair whose symbols changed since is skipped.
    fn merge(&mut self, piece: &[u8], out: &mut Vec<u32>) {
        let n = piece.len();
        self.symbols.clear();
        self.symbols.extend(piece.iter().enumerate().map(|(i, &b)| Symbol {
            id: self.byte_ids[b as usize],
            prev: if i == 0 { NONE } else { i - 1 },
            next: if i + 1 == n { NONE } else { i + 1 },
            removed: false,
        }));
        self.heap.clear();
        for i in 1..n {
            if let Some(&(rank, merged)) = self.pairs.get(&(self.symbols[i - 1].id, self.symbols[i].id)) {
                self.heap.push(Reverse((rank, i - 1, merged)));
            }
        }
        while let Some(Reverse((_, pos, merged))) = self.heap.pop() {
            let left = self.symbols[pos];
            if left.removed || left.next == NONE {
                continue;
            }
            let right = self.symbols[left.next];
            if self.pairs.get(&(left.id, right.id)).map(|p| p.1) != Some(merged) {
                continue;
            }
            self.symbols[pos].id = merged;
            self.symbols[pos].next = right.next;
            self.symbols[left.next].removed = true;
            if right.next != NONE {
                self.symbols[right.next].prev = pos;
            }
            if left.prev != NONE {
                if let Some(&(rank, m)) = self.pairs.get(&(self.symbols[left.prev].id, merged)) {
                    self.heap.push(Reverse((rank, left.prev, m)));
                }
            }
            if right.next != NONE {
                if let Some(&(rank, m)) = self.pairs.get(&(merged, self.symbols[right.next].id)) {
                    self.heap.push(Reverse((rank, pos, m)));
                }
            }
        }
        out.extend(self.symbols.iter().filter(|s| !s.removed).map(|s| s.id));
    }
}
