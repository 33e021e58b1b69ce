//! `explainError(message)`: the error reference of [`error_catalog`], for JavaScript.
//!
//! Pure lookup, no I/O: it takes any message (as thrown, returned or logged by either provider)
//! and returns its catalogue entry, or `null` when the message is not catalogued.

use napi_derive::napi;

/// One catalogued error, as documented in `docs/errors.md`.
#[napi(object)]
pub struct ExplainedError {
    /// Stable code, e.g. `CREATEOS_API_URL_INVALID` or `K8S_JOB_DEADLINE_UNSUPPORTED`.
    pub code: String,
    /// `createos` or `kubernetes`.
    pub provider: String,
    /// How it reaches the host: `thrown`, `returned`, `validation`, `diagnostic`, `warning`,
    /// `session` (ends an open login PTY or duplex session) or `internal`.
    pub kind: String,
    /// The message template (`${…}` = interpolated part).
    pub template: String,
    /// The hooks that raise it.
    pub hooks: Vec<String>,
    /// What it means.
    pub meaning: String,
    /// Common causes.
    pub causes: Vec<String>,
    /// What to do.
    pub fix: String,
}

impl From<&error_catalog::Entry> for ExplainedError {
    fn from(e: &error_catalog::Entry) -> Self {
        ExplainedError {
            code: e.code.to_owned(),
            provider: e.provider.key().to_owned(),
            kind: e.kind.key().to_owned(),
            template: e.template.to_owned(),
            hooks: e.hooks.iter().map(error_catalog::Raiser::text).collect(),
            meaning: e.meaning.to_owned(),
            causes: e.causes.iter().map(|c| (*c).to_owned()).collect(),
            fix: e.fix.to_owned(),
        }
    }
}

/// The catalogue entry for an error message of either provider, or `null` when the message is
/// not catalogued. `${…}` parts of the templates match any text; surrounding whitespace and a
/// leading `Error: ` are ignored; the most specific template wins.
#[napi(catch_unwind)]
pub fn explain_error(message: String) -> Option<ExplainedError> {
    error_catalog::explain(&message).map(ExplainedError::from)
}
