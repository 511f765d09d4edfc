//! The exceptions the extension raises: classes of `hermes_env.errors` (so every error hermes_env
//! raises is a `HermesEnvError`), imported from there the first time one is raised, never at
//! module init (that module imports nothing of hermes_env, so no import cycle either way).
//! Each keeps the built-in base raised before: ValueError, TypeError or RuntimeError.

pyo3::import_exception!(hermes_env.errors, UnknownParserError);
pyo3::import_exception!(hermes_env.errors, ToolSchemaError);
pyo3::import_exception!(hermes_env.errors, BpeConfigError);
pyo3::import_exception!(hermes_env.errors, ParserUsageError);
pyo3::import_exception!(hermes_env.errors, RenderError);
pyo3::import_exception!(hermes_env.errors, RenderTypeError);
pyo3::import_exception!(hermes_env.errors, TrajectoryError);
pyo3::import_exception!(hermes_env.errors, TrajectoryDivergence);
pyo3::import_exception!(hermes_env.errors, CoreStateError);

/// No parser of that name: `UnknownParserError` with the name and the available names.
pub(crate) fn unknown_parser(err: hermes_core::parsers::UnknownParserError) -> pyo3::PyErr {
    let message = err.to_string();
    UnknownParserError::new_err((message, err.name, err.available))
}
