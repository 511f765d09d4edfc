//! Python wrapper for `hermes_core::bpe` (used by `hermes_env.managed.tokenization`).

use std::sync::{Mutex, MutexGuard};

use hermes_core::bpe::ByteLevelBpe;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::errors::{BpeConfigError, CoreStateError};

/// Byte-level BPE with the exact ids of the `tokenizers` model it was built from, for the
/// configurations it reproduces (others raise `BpeConfigError`, a ValueError, saying why). `encode` returns None for
/// a text it cannot vouch for: a non-ASCII character not yet checked against the reference
/// tokenizer (`unknown_chars`, `set_char`), a refused one, or a segment NFC would change.
///
/// `ints` (optional): a tuple whose item `i` is the int `i`; ids are returned as those objects, so
/// long-lived token lists share one int object per id instead of allocating one per token.
#[pyclass(module = "hermes_env._core", name = "ByteLevelBpe", frozen)]
pub struct PyByteLevelBpe {
    inner: Mutex<ByteLevelBpe>,
    ints: Vec<Py<PyAny>>,
}

impl PyByteLevelBpe {
    fn list<'py>(&self, py: Python<'py>, ids: Option<Vec<u32>>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(ids) = ids else { return Ok(None) };
        let items = ids.into_iter().map(|id| match self.ints.get(id as usize) {
            Some(int) => int.bind(py).clone(),
            None => id
                .into_pyobject(py)
                .map_or_else(|never| match never {}, |i| i.into_any()),
        });
        PyList::new(py, items).map(Some)
    }

    fn lock(&self) -> PyResult<MutexGuard<'_, ByteLevelBpe>> {
        self.inner
            .lock()
            .map_err(|_| CoreStateError::new_err("a ByteLevelBpe call panicked earlier; build a new encoder"))
    }
}

#[pymethods]
impl PyByteLevelBpe {
    #[new]
    #[pyo3(signature = (tokenizer_json, ints = None))]
    fn new(tokenizer_json: &str, ints: Option<&Bound<'_, PyTuple>>) -> PyResult<Self> {
        let inner = ByteLevelBpe::from_tokenizer_json(tokenizer_json)
            .map_err(|e| BpeConfigError::new_err(format!("this tokenizer is not reproduced by ByteLevelBpe: {e}")))?;
        let mut table = Vec::new();
        for (i, item) in ints.into_iter().flat_map(|t| t.iter()).enumerate() {
            if item.extract::<usize>().ok() != Some(i) {
                return Err(BpeConfigError::new_err(format!(
                    "ints[{i}] is not the int {i}; pass a tuple whose item i is i"
                )));
            }
            table.push(item.unbind());
        }
        Ok(Self {
            inner: Mutex::new(inner),
            ints: table,
        })
    }

    /// The ids of `text` (no special tokens added), or None when it cannot vouch for them.
    fn encode<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Option<Bound<'py, PyList>>> {
        let ids = self.lock()?.encode(text);
        self.list(py, ids)
    }

    /// `encode` without the character check (None only for a segment NFC would change).
    fn encode_unchecked<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Option<Bound<'py, PyList>>> {
        let ids = self.lock()?.encode_unchecked(text);
        self.list(py, ids)
    }

    /// The pre-tokenizer's pieces of `text` as (start, end) character offsets.
    fn pre_tokenize(&self, text: &str) -> PyResult<Vec<(usize, usize)>> {
        Ok(self.lock()?.pre_tokenize(text))
    }

    /// The distinct non-ASCII characters of `text` not yet checked, as one string.
    fn unknown_chars(&self, text: &str) -> PyResult<String> {
        Ok(self.lock()?.unknown_chars(text).into_iter().collect())
    }

    /// Records whether the reference tokenizer treats character `c` as this encoder does.
    fn set_char(&self, c: char, ok: bool) -> PyResult<()> {
        self.lock()?.set_char(c, ok);
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyByteLevelBpe>()
}
