//! Token-exact trajectories.
//!
//! A [`Trajectory`] holds what a trainer needs from one rollout: `tokens`, `masks` (the token
//! id where the model generated the token, [`MASK`] elsewhere — Atropos's convention) and
//! `logprobs` (the sampler's logprob where generated, [`PROMPT_LOGPROB`] elsewhere), always the
//! same length. Every mutating call validates its whole input first, so a rejected call leaves
//! the trajectory exactly as it was.
//!
//! Multi-turn extension is decided on token ids ([`Trajectory::extend`]); the Phase-1 mask for
//! a rendered conversation is built by [`assistant_token_mask`].

mod error;
mod mask;

pub use error::{Divergence, TrajectoryError};
pub use mask::{assistant_token_mask, MaskError};

/// Mask value of a token that is not trained (prompt, tool output, template text).
pub const MASK: i64 = -100;
/// Logprob stored for tokens the model did not generate.
pub const PROMPT_LOGPROB: f64 = 1.0;
/// Finish reasons a sampler reports: OpenAI's, plus `abort` (vLLM, SGLang).
pub const FINISH_REASONS: [&str; 6] = [
    "stop",
    "length",
    "tool_calls",
    "content_filter",
    "function_call",
    "abort",
];
/// How many tokens on each side of a divergence a report shows.
pub const DIVERGENCE_WINDOW: usize = 8;

/// Checks token ids: non-negative and below `vocab_size` when one is given (0 is refused).
pub fn validate_ids(ids: &[i64], vocab_size: Option<u64>) -> Result<(), TrajectoryError> {
    if vocab_size == Some(0) {
        return Err(TrajectoryError::ZeroVocab);
    }
    for (index, &id) in ids.iter().enumerate() {
        if id < 0 {
            return Err(TrajectoryError::NegativeId { index, id });
        }
        if let Some(vocab_size) = vocab_size {
            // id >= 0 here, so the cast is lossless.
            if id as u64 >= vocab_size {
                return Err(TrajectoryError::IdOutOfVocab { index, id, vocab_size });
            }
        }
    }
    Ok(())
}

/// Whether a segment was fed to the model or produced by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentKind {
    Prompt,
    Completion,
}

/// One `add_prompt` / `add_completion` call: `tokens[start..end]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub kind: SegmentKind,
    pub start: usize,
    pub end: usize,
    /// The sampler's finish reason (`"stop"`, `"length"`, ...) for completions.
    pub finish_reason: Option<String>,
}

/// What to do when the next prompt does not start with the trajectory's tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DivergencePolicy {
    /// Refuse: return [`TrajectoryError::Divergence`] and change nothing.
    Raise,
    /// Start a new trajectory from the next prompt (all of it masked); the old one is returned
    /// to the caller so its generated tokens are not lost.
    WarnAndRestart,
    /// Keep the trajectory's own tokens (what the model really saw and produced) and append
    /// only the new turn's tokens, which the caller renders separately; the re-rendered
    /// (divergent) copy of earlier turns is discarded.
    KeepRaw,
}

impl DivergencePolicy {
    /// Parses `"raise"`, `"warn_and_restart"` or `"keep_raw"`.
    pub fn parse(name: &str) -> Result<Self, TrajectoryError> {
        match name {
            "raise" => Ok(Self::Raise),
            "warn_and_restart" => Ok(Self::WarnAndRestart),
            "keep_raw" => Ok(Self::KeepRaw),
            other => Err(TrajectoryError::UnknownPolicy(other.to_string())),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Raise => "raise",
            Self::WarnAndRestart => "warn_and_restart",
            Self::KeepRaw => "keep_raw",
        }
    }
}

/// The result of a successful [`Trajectory::extend`].
#[derive(Clone, Debug, PartialEq)]
pub enum Extension {
    /// The next prompt started with the trajectory; `appended` new prompt tokens were added.
    Extended { appended: usize },
    /// `WarnAndRestart`: the trajectory now holds only the next prompt; `previous` is the
    /// trajectory as it was before the call.
    Restarted {
        divergence: Divergence,
        previous: Box<Trajectory>,
    },
    /// `KeepRaw`: the trajectory kept its tokens and `appended` new-turn tokens were added.
    KeptRaw { divergence: Divergence, appended: usize },
}

/// Tokens, masks and logprobs of one rollout branch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trajectory {
    tokens: Vec<i64>,
    masks: Vec<i64>,
    logprobs: Vec<f64>,
    segments: Vec<Segment>,
    vocab_size: Option<u64>,
}

impl Trajectory {
    /// An empty trajectory; ids are checked against `vocab_size` when it is given (0 is refused).
    pub fn new(vocab_size: Option<u64>) -> Result<Self, TrajectoryError> {
        if vocab_size == Some(0) {
            return Err(TrajectoryError::ZeroVocab);
        }
        Ok(Self {
            vocab_size,
            ..Self::default()
        })
    }

    pub fn tokens(&self) -> &[i64] {
        &self.tokens
    }
    pub fn masks(&self) -> &[i64] {
        &self.masks
    }
    pub fn logprobs(&self) -> &[f64] {
        &self.logprobs
    }
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }
    pub fn vocab_size(&self) -> Option<u64> {
        self.vocab_size
    }
    pub fn len(&self) -> usize {
        self.tokens.len()
    }
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
    /// Number of trained (generated) tokens.
    pub fn num_trained(&self) -> usize {
        self.masks.iter().filter(|&&m| m != MASK).count()
    }
    /// Finish reason of the last completion, if any.
    pub fn last_finish_reason(&self) -> Option<&str> {
        self.segments
            .iter()
            .rev()
            .find(|s| s.kind == SegmentKind::Completion)
            .and_then(|s| s.finish_reason.as_deref())
    }

    /// Checks every id: non-negative and below the vocabulary size when one is set.
    pub fn validate_ids(&self, ids: &[i64]) -> Result<(), TrajectoryError> {
        validate_ids(ids, self.vocab_size)
    }

    /// Appends prompt tokens: masked, logprob 1.0.
    pub fn add_prompt(&mut self, ids: &[i64]) -> Result<(), TrajectoryError> {
        self.validate_ids(ids)?;
        self.push_prompt_unchecked(ids);
        Ok(())
    }

    fn push_prompt_unchecked(&mut self, ids: &[i64]) {
        if ids.is_empty() {
            return;
        }
        let start = self.tokens.len();
        self.tokens.extend_from_slice(ids);
        self.masks.resize(self.tokens.len(), MASK);
        self.logprobs.resize(self.tokens.len(), PROMPT_LOGPROB);
        self.segments.push(Segment {
            kind: SegmentKind::Prompt,
            start,
            end: self.tokens.len(),
            finish_reason: None,
        });
    }

    /// Checks sampler logprobs: finite and `<= 0`.
    pub fn validate_logprobs(logprobs: &[f64]) -> Result<(), TrajectoryError> {
        for (index, &value) in logprobs.iter().enumerate() {
            if !value.is_finite() {
                return Err(TrajectoryError::NonFiniteLogprob { index, value });
            }
            if value > 0.0 {
                return Err(TrajectoryError::PositiveLogprob { index, value });
            }
        }
        Ok(())
    }

    /// Checks a finish reason against [`FINISH_REASONS`].
    pub fn validate_finish_reason(reason: Option<&str>) -> Result<(), TrajectoryError> {
        match reason {
            Some(r) if !FINISH_REASONS.contains(&r) => Err(TrajectoryError::UnknownFinishReason(r.to_string())),
            _ => Ok(()),
        }
    }

    /// Appends generated tokens: trained (mask = id), with the sampler's logprobs.
    ///
    /// Refused (nothing changes): an empty trajectory (a completion continues a prompt), no
    /// ids, a length mismatch, a bad id, a logprob that is not finite or is above 0, an
    /// unknown finish reason.
    pub fn add_completion(
        &mut self,
        ids: &[i64],
        logprobs: &[f64],
        finish_reason: Option<&str>,
    ) -> Result<(), TrajectoryError> {
        if self.tokens.is_empty() {
            return Err(TrajectoryError::CompletionWithoutPrompt);
        }
        if ids.len() != logprobs.len() {
            return Err(TrajectoryError::LengthMismatch {
                ids: ids.len(),
                logprobs: logprobs.len(),
            });
        }
        if ids.is_empty() {
            return Err(TrajectoryError::EmptyCompletion);
        }
        self.validate_ids(ids)?;
        Self::validate_logprobs(logprobs)?;
        Self::validate_finish_reason(finish_reason)?;
        let start = self.tokens.len();
        self.tokens.extend_from_slice(ids);
        self.masks.extend_from_slice(ids);
        self.logprobs.extend_from_slice(logprobs);
        self.segments.push(Segment {
            kind: SegmentKind::Completion,
            start,
            end: self.tokens.len(),
            finish_reason: finish_reason.map(str::to_string),
        });
        Ok(())
    }

    /// Length of the longest common prefix of the trajectory's tokens and `ids`.
    pub fn common_prefix(&self, ids: &[i64]) -> usize {
        // Compare in chunks so the common case (a long equal prefix) runs as slice equality.
        const CHUNK: usize = 64;
        let limit = self.tokens.len().min(ids.len());
        let mut i = 0;
        while i + CHUNK <= limit && self.tokens[i..i + CHUNK] == ids[i..i + CHUNK] {
            i += CHUNK;
        }
        while i < limit && self.tokens[i] == ids[i] {
            i += 1;
        }
        i
    }

    /// Describes where `next` leaves the trajectory, or `None` when it starts with it.
    pub fn divergence(&self, next: &[i64]) -> Option<Divergence> {
        let index = self.common_prefix(next);
        if index == self.tokens.len() {
            return None;
        }
        Some(Divergence::at(index, &self.tokens, next, DIVERGENCE_WINDOW))
    }

    /// Extends the trajectory to the next turn's full prompt `next` (token ids).
    ///
    /// If `next` starts with the trajectory's tokens, only the suffix is appended as prompt
    /// (earlier masks and logprobs are kept). Otherwise `policy` decides; `new_turn` is what
    /// `KeepRaw` appends (the new messages' tokens, rendered on their own) and is required for
    /// it. All ids are validated before anything changes.
    pub fn extend(
        &mut self,
        next: &[i64],
        policy: DivergencePolicy,
        new_turn: Option<&[i64]>,
    ) -> Result<Extension, TrajectoryError> {
        self.validate_ids(next)?;
        if let Some(turn) = new_turn {
            self.validate_ids(turn)?;
        }
        let Some(divergence) = self.divergence(next) else {
            let appended = next.len() - self.tokens.len();
            self.push_prompt_unchecked(&next[self.tokens.len()..]);
            return Ok(Extension::Extended { appended });
        };
        match policy {
            DivergencePolicy::Raise => Err(TrajectoryError::Divergence(divergence)),
            DivergencePolicy::WarnAndRestart => {
                let fresh = Trajectory {
                    vocab_size: self.vocab_size,
                    ..Trajectory::default()
                };
                let previous = Box::new(std::mem::replace(self, fresh));
                self.push_prompt_unchecked(next);
                Ok(Extension::Restarted { divergence, previous })
            }
            DivergencePolicy::KeepRaw => match new_turn {
                Some(turn) => {
                    self.push_prompt_unchecked(turn);
                    Ok(Extension::KeptRaw {
                        divergence,
                        appended: turn.len(),
                    })
                }
                None => Err(TrajectoryError::KeepRawNeedsNewTurn(divergence)),
            },
        }
    }

    /// Rebuilds a trajectory from its arrays and segments (e.g. when unpickling), checking that
    /// they describe a trajectory this API could have built.
    pub fn from_parts(
        tokens: Vec<i64>,
        masks: Vec<i64>,
        logprobs: Vec<f64>,
        segments: Vec<Segment>,
        vocab_size: Option<u64>,
    ) -> Result<Self, TrajectoryError> {
        let bad = |index: usize, reason: &str| TrajectoryError::InconsistentState {
            index,
            reason: reason.to_string(),
        };
        if masks.len() != tokens.len() || logprobs.len() != tokens.len() {
            return Err(bad(
                tokens.len().min(masks.len()).min(logprobs.len()),
                "tokens, masks and logprobs differ in length",
            ));
        }
        let t = Self {
            tokens,
            masks,
            logprobs,
            segments,
            ..Self::new(vocab_size)?
        };
        t.validate_ids(&t.tokens)?;
        let mut at = 0;
        for seg in &t.segments {
            if seg.start != at || seg.end < seg.start || seg.end > t.tokens.len() {
                return Err(bad(at, "segments must be contiguous and cover the tokens"));
            }
            if seg.kind == SegmentKind::Completion {
                if seg.start == 0 {
                    return Err(TrajectoryError::CompletionWithoutPrompt);
                }
                Self::validate_finish_reason(seg.finish_reason.as_deref())?;
            }
            for i in seg.start..seg.end {
                let ok = match seg.kind {
                    SegmentKind::Prompt => t.masks[i] == MASK && t.logprobs[i] == PROMPT_LOGPROB,
                    SegmentKind::Completion => {
                        t.masks[i] == t.tokens[i] && t.logprobs[i].is_finite() && t.logprobs[i] <= 0.0
                    }
                };
                if !ok {
                    return Err(bad(i, "mask or logprob does not match its segment"));
                }
            }
            at = seg.end;
        }
        if at != t.tokens.len() {
            return Err(bad(at, "segments must be contiguous and cover the tokens"));
        }
        Ok(t)
    }

    /// An independent copy (for `n > 1` sampling from the same prompt).
    pub fn fork(&self) -> Self {
        self.clone()
    }

    /// An independent copy of the first `len` tokens: the trajectory as it was when it had
    /// `len` tokens. `len` must end a segment (0 gives an empty trajectory).
    pub fn fork_prefix(&self, len: usize) -> Result<Self, TrajectoryError> {
        let segments = if len == 0 {
            0
        } else {
            match self.segments.iter().position(|s| s.end == len) {
                Some(i) => i + 1,
                None => {
                    return Err(TrajectoryError::NotASegmentEnd {
                        len,
                        total: self.tokens.len(),
                    })
                }
            }
        };
        Ok(Self {
            tokens: self.tokens[..len].to_vec(),
            masks: self.masks[..len].to_vec(),
            logprobs: self.logprobs[..len].to_vec(),
            segments: self.segments[..segments].to_vec(),
            vocab_size: self.vocab_size,
        })
    }

    /// Whether the trajectory's last tokens are `ids`; costs O(`ids.len()`), whatever the length.
    pub fn ends_with(&self, ids: &[i64]) -> bool {
        self.tokens.ends_with(ids)
    }

    /// One turn in one call: the new prompt tokens, then the completion sampled after them.
    ///
    /// Checked as [`Trajectory::add_prompt`] and [`Trajectory::add_completion`] check their
    /// input; a refused turn changes nothing, so a caller may extend a shared trajectory in
    /// place and still keep it intact when the sampler's reply is bad. Costs O(new tokens).
    pub fn add_turn(
        &mut self,
        prompt: &[i64],
        ids: &[i64],
        logprobs: &[f64],
        finish_reason: Option<&str>,
    ) -> Result<(), TrajectoryError> {
        self.validate_ids(prompt)?;
        let (len, segments) = (self.tokens.len(), self.segments.len());
        self.push_prompt_unchecked(prompt);
        if let Err(err) = self.add_completion(ids, logprobs, finish_reason) {
            self.tokens.truncate(len);
            self.masks.truncate(len);
            self.logprobs.truncate(len);
            self.segments.truncate(segments);
            return Err(err);
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
