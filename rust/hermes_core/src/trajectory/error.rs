//! Errors of trajectory bookkeeping, as plain data; messages are rendered by `Display`.

use std::fmt;

/// Where a re-rendered prompt stops agreeing with a trajectory, with both sides around it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// First position where the two differ (or where the shorter one ends).
    pub index: usize,
    /// Position of the first token in `ours` / `theirs`.
    pub window_start: usize,
    /// The trajectory's tokens `[window_start, index + w)`.
    pub ours: Vec<i64>,
    /// The next prompt's tokens `[window_start, index + w)`.
    pub theirs: Vec<i64>,
    pub ours_len: usize,
    pub theirs_len: usize,
}

impl Divergence {
    /// The divergence at `index` between `ours` and `theirs`, showing `w` tokens each side.
    pub fn at(index: usize, ours: &[i64], theirs: &[i64], w: usize) -> Self {
        let window_start = index.saturating_sub(w);
        let end = index.saturating_add(w);
        let clip = |s: &[i64]| s[window_start.min(s.len())..end.min(s.len())].to_vec();
        Self {
            index,
            window_start,
            ours: clip(ours),
            theirs: clip(theirs),
            ours_len: ours.len(),
            theirs_len: theirs.len(),
        }
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.index >= self.theirs_len {
            "the next prompt ends inside the trajectory"
        } else {
            "the next prompt does not start with the trajectory's tokens"
        };
        write!(
            f,
            "{what}: they differ at token index {} (trajectory has {} tokens, prompt {}); \
             trajectory[{}..] = {:?}, prompt[{}..] = {:?}",
            self.index, self.ours_len, self.theirs_len, self.window_start, self.ours, self.window_start, self.theirs
        )
    }
}

/// Every way a trajectory call can be refused. Nothing is changed when one is returned.
#[derive(Clone, Debug, PartialEq)]
pub enum TrajectoryError {
    LengthMismatch {
        ids: usize,
        logprobs: usize,
    },
    NegativeId {
        index: usize,
        id: i64,
    },
    IdOutOfVocab {
        index: usize,
        id: i64,
        vocab_size: u64,
    },
    NonFiniteLogprob {
        index: usize,
        value: f64,
    },
    PositiveLogprob {
        index: usize,
        value: f64,
    },
    /// `vocab_size` of 0: no token id could ever be valid.
    ZeroVocab,
    /// A completion on an empty trajectory: generated tokens always continue a prompt.
    CompletionWithoutPrompt,
    /// A completion of zero tokens: a sampler always returns at least one.
    EmptyCompletion,
    UnknownFinishReason(String),
    Divergence(Divergence),
    KeepRawNeedsNewTurn(Divergence),
    UnknownPolicy(String),
    InconsistentState {
        index: usize,
        reason: String,
    },
    NotASegmentEnd {
        len: usize,
        total: usize,
    },
}

impl TrajectoryError {
    /// The offending index, where there is one.
    pub fn index(&self) -> Option<usize> {
        match self {
            Self::LengthMismatch { ids, logprobs } => Some((*ids).min(*logprobs)),
            Self::NegativeId { index, .. }
            | Self::IdOutOfVocab { index, .. }
            | Self::NonFiniteLogprob { index, .. }
            | Self::PositiveLogprob { index, .. } => Some(*index),
            Self::Divergence(d) | Self::KeepRawNeedsNewTurn(d) => Some(d.index),
            Self::UnknownPolicy(_)
            | Self::ZeroVocab
            | Self::CompletionWithoutPrompt
            | Self::EmptyCompletion
            | Self::UnknownFinishReason(_) => None,
            Self::InconsistentState { index, .. } => Some(*index),
            Self::NotASegmentEnd { len, .. } => Some(*len),
        }
    }
}

impl fmt::Display for TrajectoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LengthMismatch { ids, logprobs } => write!(
                f,
                "ids and logprobs must have the same length, got {ids} ids and {logprobs} logprobs \
                 (first unmatched index {}); pass one logprob per generated token",
                (*ids).min(*logprobs)
            ),
            Self::NegativeId { index, id } => {
                write!(
                    f,
                    "token id at index {index} is negative ({id}); token ids must be >= 0"
                )
            }
            Self::IdOutOfVocab { index, id, vocab_size } => write!(
                f,
                "token id at index {index} is {id}, outside the vocabulary (size {vocab_size}); \
                 check that the tokenizer matches the model"
            ),
            Self::NonFiniteLogprob { index, value } => write!(
                f,
                "logprob at index {index} is {value:?}; logprobs must be finite numbers"
            ),
            Self::PositiveLogprob { index, value } => write!(
                f,
                "logprob at index {index} is {value:?}; a logprob is the log of a probability, so it \
                 must be <= 0 (pass the sampler's logprobs, not probabilities or logits)"
            ),
            Self::ZeroVocab => write!(
                f,
                "vocab_size is 0; pass the tokenizer's vocabulary size (len(tokenizer)) or None"
            ),
            Self::CompletionWithoutPrompt => write!(
                f,
                "add_completion on an empty trajectory: generated tokens continue a prompt; \
                 call add_prompt(prompt_ids) first"
            ),
            Self::EmptyCompletion => write!(
                f,
                "add_completion got no token ids; a sampler returns at least one token per \
                 completion (check the server's reply)"
            ),
            Self::UnknownFinishReason(reason) => write!(
                f,
                "finish_reason {reason:?} is not a sampler finish reason; use one of {}",
                super::FINISH_REASONS.join(", ")
            ),
            Self::Divergence(d) => write!(
                f,
                "{d}; choose divergence_policy 'keep_raw' to keep the model's own tokens or \
                 'warn_and_restart' to start a new sequence"
            ),
            Self::KeepRawNeedsNewTurn(d) => write!(
                f,
                "{d}; policy 'keep_raw' needs the new turn's tokens (new_turn=...) to append"
            ),
            Self::InconsistentState { index, reason } => {
                write!(f, "cannot rebuild the trajectory: {reason} (at index {index})")
            }
            Self::NotASegmentEnd { len, total } => write!(
                f,
                "cannot fork the first {len} tokens (of {total}): {len} is not where an earlier add call ended; \
                 pass len(trajectory) as it was after that call"
            ),
            Self::UnknownPolicy(name) => write!(
                f,
                "unknown divergence policy {name:?}; use 'raise', 'warn_and_restart' or 'keep_raw'"
            ),
        }
    }
}

impl std::error::Error for TrajectoryError {}
