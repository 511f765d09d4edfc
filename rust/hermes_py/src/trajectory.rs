//! Python wrappers for `hermes_core::trajectory`.
//!
//! Errors are converted once, in [`to_py_err`]: bad input becomes `TrajectoryError` (a
//! `ValueError` of `hermes_env.errors`) carrying `.index` where one token is at fault; a
//! divergence under policy `raise` becomes its subclass `TrajectoryDivergence`, which also
//! carries `.window`.

use std::ffi::CString;

use hermes_core::trajectory::{
    self as core, Divergence, DivergencePolicy, Extension, MaskError, Segment, SegmentKind, Trajectory,
    TrajectoryError as CoreError,
};
use numpy::{Element, PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::{TrajectoryDivergence, TrajectoryError};

pyo3::create_exception!(
    hermes_env._core,
    TrajectoryDivergenceWarning,
    PyUserWarning,
    "Emitted when policy 'warn_and_restart' starts a new sequence after a divergence."
);

/// Runs `f` on a borrowed slice of a contiguous numpy array of `T` (no copy), or on a `Vec<T>`
/// extracted from any other sequence (list, tuple, array of another dtype).
fn with_slice<'py, T, R>(obj: &Bound<'py, PyAny>, f: impl FnOnce(&[T]) -> R) -> PyResult<R>
where
    T: Element + Copy + FromPyObjectOwned<'py>,
{
    if let Ok(array) = obj.cast::<PyArray1<T>>() {
        if let Ok(view) = array.try_readonly() {
            if let Ok(slice) = view.as_slice() {
                return Ok(f(slice));
            }
        }
    }
    let owned: Vec<T> = obj.extract()?;
    Ok(f(&owned))
}

/// Decodes ids with the caller's callback; a failing decoder must not hide the divergence.
fn decode_text(decode: Option<&Bound<'_, PyAny>>, ids: &[i64]) -> Option<String> {
    let decode = decode?;
    decode.call1((ids.to_vec(),)).ok()?.extract::<String>().ok()
}

fn window_dict<'py>(
    py: Python<'py>,
    d: &Divergence,
    decode: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let w = PyDict::new(py);
    w.set_item("index", d.index)?;
    w.set_item("start", d.window_start)?;
    w.set_item("ours", d.ours.clone())?;
    w.set_item("theirs", d.theirs.clone())?;
    w.set_item("ours_len", d.ours_len)?;
    w.set_item("theirs_len", d.theirs_len)?;
    w.set_item("ours_text", decode_text(decode, &d.ours))?;
    w.set_item("theirs_text", decode_text(decode, &d.theirs))?;
    Ok(w)
}

/// The divergence message, with decoded text of both sides when a decoder was given.
fn divergence_message(base: String, window: &Bound<'_, PyDict>) -> String {
    let text = |key: &str| -> Option<String> { window.get_item(key).ok()??.extract::<String>().ok() };
    match (text("ours_text"), text("theirs_text")) {
        (Some(ours), Some(theirs)) => format!("{base}\n  trajectory text: {ours:?}\n  prompt text:     {theirs:?}"),
        _ => base,
    }
}

fn to_py_err(py: Python<'_>, err: CoreError, decode: Option<&Bound<'_, PyAny>>) -> PyErr {
    match &err {
        CoreError::Divergence(d) | CoreError::KeepRawNeedsNewTurn(d) => {
            let window = match window_dict(py, d, decode) {
                Ok(w) => w,
                Err(e) => return e,
            };
            let message = divergence_message(err.to_string(), &window);
            TrajectoryDivergence::new_err((message, d.index, window.unbind()))
        }
        _ => trajectory_error(err.to_string(), err.index()),
    }
}

/// A `TrajectoryError` with `.index` set (None when no single position is at fault).
fn trajectory_error(message: String, index: Option<usize>) -> PyErr {
    TrajectoryError::new_err((message, index))
}

fn mask_error(err: MaskError) -> PyErr {
    let index = err.index();
    trajectory_error(err.to_string(), Some(index))
}

/// `vocab_size` as the core wants it: None, or a positive integer.
fn checked_vocab_size(vocab_size: Option<i64>) -> PyResult<Option<u64>> {
    match vocab_size {
        None => Ok(None),
        Some(v) if v > 0 => Ok(Some(v.unsigned_abs())),
        Some(v) => Err(trajectory_error(
            format!("vocab_size must be a positive integer (the tokenizer's len(tokenizer)) or None, got {v}"),
            None,
        )),
    }
}

fn warn(py: Python<'_>, message: String) -> PyResult<()> {
    let message = CString::new(message.replace('\0', "\\0"))
        .map_err(|e| PyValueError::new_err(format!("warning text contains NUL: {e}")))?;
    let category = py.get_type::<TrajectoryDivergenceWarning>();
    PyErr::warn(py, category.as_any(), &message, 2)
}

/// Token-exact record of one rollout branch: tokens, masks (-100 = not trained) and logprobs
/// (1.0 where not generated), always the same length.
#[pyclass(module = "hermes_env._core", name = "Trajectory", from_py_object, eq)]
#[derive(Clone, PartialEq)]
pub struct PyTrajectory {
    inner: Trajectory,
}

#[pymethods]
impl PyTrajectory {
    #[new]
    #[pyo3(signature = (vocab_size = None))]
    fn new(py: Python<'_>, vocab_size: Option<i64>) -> PyResult<Self> {
        let vocab_size = checked_vocab_size(vocab_size)?;
        let inner = Trajectory::new(vocab_size).map_err(|e| to_py_err(py, e, None))?;
        Ok(Self { inner })
    }

    /// Appends prompt tokens (masked, logprob 1.0).
    fn add_prompt<'py>(&mut self, py: Python<'py>, ids: &Bound<'py, PyAny>) -> PyResult<()> {
        with_slice(ids, |ids: &[i64]| self.inner.add_prompt(ids))?.map_err(|e| to_py_err(py, e, None))
    }

    /// Appends generated tokens (trained) with one logprob per token.
    #[pyo3(signature = (ids, logprobs, finish_reason = None))]
    fn add_completion<'py>(
        &mut self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
        logprobs: &Bound<'py, PyAny>,
        finish_reason: Option<&str>,
    ) -> PyResult<()> {
        let inner = &mut self.inner;
        with_slice(ids, |ids: &[i64]| {
            with_slice(logprobs, |lps: &[f64]| inner.add_completion(ids, lps, finish_reason))
        })??
        .map_err(|e| to_py_err(py, e, None))
    }

    /// How many leading tokens `ids` shares with the trajectory.
    fn common_prefix<'py>(&self, ids: &Bound<'py, PyAny>) -> PyResult<usize> {
        with_slice(ids, |ids: &[i64]| self.inner.common_prefix(ids))
    }

    /// `None` if `ids` starts with the trajectory, else the divergence window as a dict.
    #[pyo3(signature = (ids, decode = None))]
    fn divergence<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
        decode: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let divergence = with_slice(ids, |ids: &[i64]| self.inner.divergence(ids))?;
        divergence.map(|d| window_dict(py, &d, decode)).transpose()
    }

    /// Extends to the next turn's full prompt ids; see `hermes_env.trajectory` for the policies.
    ///
    /// Returns a dict: `outcome` ("extended" | "restarted" | "kept_raw"), `appended`,
    /// `divergence` (window dict or None) and `previous` (the trajectory before a restart).
    /// Ids may be lists or (zero-copy) contiguous int64 numpy arrays.
    #[pyo3(signature = (next_prompt_ids, policy = "raise", new_turn = None, decode = None))]
    fn extend<'py>(
        &mut self,
        py: Python<'py>,
        next_prompt_ids: &Bound<'py, PyAny>,
        policy: &str,
        new_turn: Option<Vec<i64>>,
        decode: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let policy = DivergencePolicy::parse(policy).map_err(|e| to_py_err(py, e, None))?;
        let inner = &mut self.inner;
        let outcome = with_slice(next_prompt_ids, |next: &[i64]| {
            inner.extend(next, policy, new_turn.as_deref())
        })?
        .map_err(|e| to_py_err(py, e, decode))?;
        let out = PyDict::new(py);
        match outcome {
            Extension::Extended { appended } => {
                out.set_item("outcome", "extended")?;
                out.set_item("appended", appended)?;
                out.set_item("divergence", py.None())?;
                out.set_item("previous", py.None())?;
            }
            Extension::Restarted { divergence, previous } => {
                let window = window_dict(py, &divergence, decode)?;
                let msg = divergence_message(
                    format!("{divergence}; starting a new sequence (policy 'warn_and_restart'), earlier completions stay in the previous trajectory"),
                    &window,
                );
                out.set_item("outcome", "restarted")?;
                out.set_item("appended", self.inner.len())?;
                out.set_item("divergence", window)?;
                out.set_item("previous", Py::new(py, PyTrajectory { inner: *previous })?)?;
                warn(py, msg)?;
            }
            Extension::KeptRaw { divergence, appended } => {
                let window = window_dict(py, &divergence, decode)?;
                out.set_item("outcome", "kept_raw")?;
                out.set_item("appended", appended)?;
                out.set_item("divergence", window)?;
                out.set_item("previous", py.None())?;
            }
        }
        Ok(out)
    }

    /// An independent copy (for `n > 1` sampling); with `length`, of the trajectory as it was
    /// when it had that many tokens (a length it had after some add call).
    #[pyo3(signature = (length = None))]
    fn fork(&self, py: Python<'_>, length: Option<usize>) -> PyResult<Self> {
        match length {
            None => Ok(self.clone()),
            Some(len) => {
                let inner = self.inner.fork_prefix(len).map_err(|e| to_py_err(py, e, None))?;
                Ok(Self { inner })
            }
        }
    }

    /// Whether the trajectory's last tokens are `ids`, in O(len(ids)).
    fn ends_with<'py>(&self, ids: &Bound<'py, PyAny>) -> PyResult<bool> {
        with_slice(ids, |ids: &[i64]| self.inner.ends_with(ids))
    }

    /// `add_prompt(prompt_ids)` then `add_completion(ids, logprobs, finish_reason)` as one call:
    /// a refused turn changes nothing.
    #[pyo3(signature = (prompt_ids, ids, logprobs, finish_reason = None))]
    fn add_turn<'py>(
        &mut self,
        py: Python<'py>,
        prompt_ids: &Bound<'py, PyAny>,
        ids: &Bound<'py, PyAny>,
        logprobs: &Bound<'py, PyAny>,
        finish_reason: Option<&str>,
    ) -> PyResult<()> {
        let inner = &mut self.inner;
        with_slice(prompt_ids, |prompt: &[i64]| {
            with_slice(ids, |ids: &[i64]| {
                with_slice(logprobs, |lps: &[f64]| inner.add_turn(prompt, ids, lps, finish_reason))
            })
        })???
        .map_err(|e| to_py_err(py, e, None))
    }

    fn __copy__(&self) -> Self {
        self.clone()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Self {
        self.clone()
    }

    /// Pickle support: `(tokens, masks, logprobs, segments, vocab_size)`.
    #[allow(clippy::type_complexity)]
    fn __getstate__(
        &self,
    ) -> (
        Vec<i64>,
        Vec<i64>,
        Vec<f64>,
        Vec<(&'static str, usize, usize, Option<String>)>,
        Option<u64>,
    ) {
        (
            self.tokens(),
            self.masks(),
            self.logprobs(),
            self.segments(),
            self.inner.vocab_size(),
        )
    }

    #[allow(clippy::type_complexity)]
    fn __setstate__(
        &mut self,
        py: Python<'_>,
        state: (
            Vec<i64>,
            Vec<i64>,
            Vec<f64>,
            Vec<(String, usize, usize, Option<String>)>,
            Option<u64>,
        ),
    ) -> PyResult<()> {
        let (tokens, masks, logprobs, segments, vocab_size) = state;
        let segments = segments
            .into_iter()
            .map(|(kind, start, end, finish_reason)| {
                let kind = match kind.as_str() {
                    "prompt" => SegmentKind::Prompt,
                    "completion" => SegmentKind::Completion,
                    other => {
                        return Err(trajectory_error(
                            format!("segment kind must be 'prompt' or 'completion', got {other:?}"),
                            None,
                        ))
                    }
                };
                Ok(Segment {
                    kind,
                    start,
                    end,
                    finish_reason,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        self.inner = Trajectory::from_parts(tokens, masks, logprobs, segments, vocab_size)
            .map_err(|e| to_py_err(py, e, None))?;
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Trajectory(len={}, trained={}, segments={})",
            self.inner.len(),
            self.inner.num_trained(),
            self.inner.segments().len()
        )
    }

    #[getter]
    fn tokens(&self) -> Vec<i64> {
        self.inner.tokens().to_vec()
    }

    #[getter]
    fn masks(&self) -> Vec<i64> {
        self.inner.masks().to_vec()
    }

    #[getter]
    fn logprobs(&self) -> Vec<f64> {
        self.inner.logprobs().to_vec()
    }

    #[getter]
    fn vocab_size(&self) -> Option<u64> {
        self.inner.vocab_size()
    }

    #[getter]
    fn num_trained(&self) -> usize {
        self.inner.num_trained()
    }

    #[getter]
    fn last_finish_reason(&self) -> Option<String> {
        self.inner.last_finish_reason().map(str::to_string)
    }

    /// `[(kind, start, end, finish_reason)]`, kind "prompt" or "completion", one per add call.
    #[getter]
    fn segments(&self) -> Vec<(&'static str, usize, usize, Option<String>)> {
        self.inner
            .segments()
            .iter()
            .map(|s| {
                let kind = match s.kind {
                    SegmentKind::Prompt => "prompt",
                    SegmentKind::Completion => "completion",
                };
                (kind, s.start, s.end, s.finish_reason.clone())
            })
            .collect()
    }

    /// `{"tokens": int64[N], "masks": int64[N], "logprobs": float64[N]}`, each built in one copy.
    fn to_numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        out.set_item("tokens", PyArray1::from_slice(py, self.inner.tokens()))?;
        out.set_item("masks", PyArray1::from_slice(py, self.inner.masks()))?;
        out.set_item("logprobs", PyArray1::from_slice(py, self.inner.logprobs()))?;
        Ok(out)
    }

    /// A dict with atroposlib 0.4.0's `ScoredDataItem` keys plus `inference_logprobs`
    /// (the `ScoredDataGroup` field trainers read sampler logprobs from).
    #[pyo3(signature = (score, *, messages = None, advantages = None, ref_logprobs = None,
                        group_overrides = None, overrides = None, images = None))]
    #[allow(clippy::too_many_arguments)]
    fn to_scored_item<'py>(
        &self,
        py: Python<'py>,
        score: f64,
        messages: Option<Bound<'py, PyAny>>,
        advantages: Option<Bound<'py, PyAny>>,
        ref_logprobs: Option<Bound<'py, PyAny>>,
        group_overrides: Option<Bound<'py, PyAny>>,
        overrides: Option<Bound<'py, PyAny>>,
        images: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        if !score.is_finite() {
            return Err(trajectory_error(
                format!("score must be a finite number, got {score}"),
                None,
            ));
        }
        let out = PyDict::new(py);
        out.set_item("tokens", PyList::new(py, self.inner.tokens())?)?;
        out.set_item("masks", PyList::new(py, self.inner.masks())?)?;
        out.set_item("scores", score)?;
        out.set_item("advantages", advantages)?;
        out.set_item("ref_logprobs", ref_logprobs)?;
        out.set_item("messages", messages)?;
        out.set_item("group_overrides", group_overrides)?;
        out.set_item("overrides", overrides)?;
        out.set_item("images", images)?;
        out.set_item("distill_token_ids", py.None())?;
        out.set_item("distill_logprobs", py.None())?;
        out.set_item("inference_logprobs", PyList::new(py, self.inner.logprobs())?)?;
        Ok(out)
    }
}

/// Phase-1 mask: `ids[i]` where token `i` shares a character with an assistant span, -100
/// elsewhere. `offsets` are per-token `(start, end)` character offsets of the rendered text,
/// `spans` the assistant turns' `(start, end)` character ranges, sorted and disjoint; ids must
/// be token ids (non-negative, below `vocab_size` when given).
#[pyfunction]
#[pyo3(signature = (offsets, spans, ids, vocab_size = None))]
fn assistant_token_mask(
    offsets: Vec<(usize, usize)>,
    spans: Vec<(usize, usize)>,
    ids: Vec<i64>,
    vocab_size: Option<i64>,
) -> PyResult<Vec<i64>> {
    let vocab_size = checked_vocab_size(vocab_size)?;
    core::assistant_token_mask(&ids, &offsets, &spans, vocab_size).map_err(mask_error)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyTrajectory>()?;
    m.add_function(wrap_pyfunction!(assistant_token_mask, m)?)?;
    m.add(
        "TrajectoryDivergenceWarning",
        py.get_type::<TrajectoryDivergenceWarning>(),
    )?;
    m.add("MASK", core::MASK)?;
    m.add("PROMPT_LOGPROB", core::PROMPT_LOGPROB)?;
    m.add("FINISH_REASONS", core::FINISH_REASONS.to_vec())?;
    Ok(())
}
