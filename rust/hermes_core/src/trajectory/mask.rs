//! Phase-1 masks: which tokens of a rendered conversation belong to assistant turns.
//!
//! Input: each token's `(start, end)` character offsets in the rendered text (as a fast
//! tokenizer's `offset_mapping` gives them) and the assistant turns' character spans
//! `[start, end)`, sorted and disjoint. One merge-like pass over both, O(tokens + spans).
//!
//! Boundary rule: a token is trained when it shares at least one character with an assistant
//! span. A token that straddles a span boundary is therefore trained: the model had to emit
//! that token to produce the span's characters, and dropping it would lose generated text from
//! the loss. A zero-width token (`start == end`, e.g. an added special token without text) is
//! trained when its position lies inside a span (`span.start <= start < span.end`).

use std::fmt;

use super::{validate_ids, TrajectoryError, MASK};

#[derive(Clone, Debug, PartialEq)]
pub enum MaskError {
    /// A token id that cannot be a mask value (negative, or outside the vocabulary).
    BadId(TrajectoryError),
    LengthMismatch {
        ids: usize,
        offsets: usize,
    },
    BadOffset {
        index: usize,
        start: usize,
        end: usize,
    },
    UnsortedOffsets {
        index: usize,
        start: usize,
        previous_start: usize,
    },
    BadSpan {
        index: usize,
        start: usize,
        end: usize,
    },
    OverlappingSpans {
        index: usize,
        start: usize,
        previous_end: usize,
    },
}

impl MaskError {
    pub fn index(&self) -> usize {
        match self {
            Self::BadId(e) => e.index().unwrap_or(0),
            Self::LengthMismatch { ids, offsets } => (*ids).min(*offsets),
            Self::BadOffset { index, .. }
            | Self::UnsortedOffsets { index, .. }
            | Self::BadSpan { index, .. }
            | Self::OverlappingSpans { index, .. } => *index,
        }
    }
}

impl fmt::Display for MaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadId(e) => write!(f, "ids: {e}"),
            Self::LengthMismatch { ids, offsets } => write!(
                f,
                "ids and offsets must have the same length, got {ids} ids and {offsets} offsets \
                 (first unmatched index {}); pass the offset_mapping of the same encoding",
                (*ids).min(*offsets)
            ),
            Self::BadOffset { index, start, end } => write!(
                f,
                "offset at index {index} is ({start}, {end}): start must not exceed end"
            ),
            Self::UnsortedOffsets {
                index,
                start,
                previous_start,
            } => write!(
                f,
                "offset at index {index} starts at {start}, before the previous token's start \
                 {previous_start}; offsets must come from one left-to-right encoding"
            ),
            Self::BadSpan { index, start, end } => write!(
                f,
                "span at index {index} is ({start}, {end}): start must not exceed end"
            ),
            Self::OverlappingSpans {
                index,
                start,
                previous_end,
            } => write!(
                f,
                "span at index {index} starts at {start}, before the previous span ends at \
                 {previous_end}; spans must be sorted and disjoint"
            ),
        }
    }
}

impl std::error::Error for MaskError {}

/// The Phase-1 mask: `ids[i]` where token `i` overlaps an assistant span, [`MASK`] elsewhere.
///
/// Ids are checked first (non-negative, below `vocab_size` when given), so every mask value is
/// either a real token id or [`MASK`].
pub fn assistant_token_mask(
    ids: &[i64],
    offsets: &[(usize, usize)],
    spans: &[(usize, usize)],
    vocab_size: Option<u64>,
) -> Result<Vec<i64>, MaskError> {
    validate_ids(ids, vocab_size).map_err(MaskError::BadId)?;
    if ids.len() != offsets.len() {
        return Err(MaskError::LengthMismatch {
            ids: ids.len(),
            offsets: offsets.len(),
        });
    }
    let mut previous_end = 0;
    for (index, &(start, end)) in spans.iter().enumerate() {
        if start > end {
            return Err(MaskError::BadSpan { index, start, end });
        }
        if index > 0 && start < previous_end {
            return Err(MaskError::OverlappingSpans {
                index,
                start,
                previous_end,
            });
        }
        previous_end = end;
    }

    let mut mask = Vec::with_capacity(ids.len());
    let mut j = 0; // first span that may still contain the current token
    let mut previous_start = 0;
    for (index, (&id, &(start, end))) in ids.iter().zip(offsets).enumerate() {
        if start > end {
            return Err(MaskError::BadOffset { index, start, end });
        }
        if start < previous_start {
            return Err(MaskError::UnsortedOffsets {
                index,
                start,
                previous_start,
            });
        }
        previous_start = start;
        // Skip spans that end at or before this token starts (token starts are non-decreasing).
        while j < spans.len() && (spans[j].1 <= start || spans[j].0 == spans[j].1) {
            j += 1;
        }
        let inside = match spans.get(j) {
            Some(&(s, e)) if start == end => s <= start && start < e,
            Some(&(s, _)) => s < end, // spans[j].1 > start, so the two overlap iff s < end
            None => false,
        };
        mask.push(if inside { id } else { MASK });
    }
    Ok(mask)
}
