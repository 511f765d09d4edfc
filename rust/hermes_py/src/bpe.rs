//! Python wrapper for `hermes_core::bpe` (used by `hermes_env.managed.tokenization`).

use std::sync::{Mutex, MutexGuard};

use hermes_core::bpe::ByteLevelBpe;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// Byte-level BPE with the exact ids of the `tokenizers` model it was built from, for the
/// configurations it reproduces (others raise ValueError saying why). `encode` returns None for
/// a text it cannot vouch for: a non-ASCII character not yet checked against the reference
/// tokenizer (`unknown_chars`, `set_char`), a refused one, or a segment NFC would change.
#[pyclass(module = "hermes_env._core", name = "ByteLevelBpe", frozen)]
pub struct PyByteLevelBpe {
    inner: Mutex<ByteLevelBpe>,
}

impl PyByteLevelBpe {
    fn lock(&self) -> PyResult<MutexGuard<'_, ByteLevelBpe>> {
        self.inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("a ByteLevelBpe call panicked earlier; build a new encoder"))
    }
}

#[pymethods]
impl PyByteLevelBpe {
    #[new]
    fn new(tokenizer_json: &str) -> PyResult<Self> {
        let inner = ByteLevelBpe::from_tokenizer_json(tokenizer_json)
            .map_err(|e| PyValueError::new_err(format!("this tokenizer is not reproduced by ByteLevelBpe: {e}")))?;
        Ok(Self {
            inner: Mutex::new(inner),
        })
    }

    /// The ids of `text` (no special tokens added), or None when it cannot vouch for them.
    fn encode(&self, text: &str) -> PyResult<Option<Vec<u32>>> {
        Ok(self.lock()?.encode(text))
    }

    /// `encode` without the character check (None only for a segment NFC would change).
    fn encode_unchecked(&self, text: &str) -> PyResult<Option<Vec<u32>>> {
        Ok(self.lock()?.encode_unchecked(text))
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
