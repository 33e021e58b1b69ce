//! Golden vectors recorded from the original implementation (`tests/data/golden`, kept in the
//! repository as test data, with the error contract beside it in `tests/data/contract`).
//!
//! A case passes when our output, serialised to JSON, is identical to the recorded value
//! (key order included). The folder named by `PAPERCLIP_GOLDEN_DIR` replaces the default one, so
//! further vector sets of the same layout run without code changes.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::ProviderError;

/// One recorded case: `{name, input, expected}`.
#[derive(Debug, Clone, Deserialize)]
pub struct Case {
    pub name: String,
    pub input: Value,
    pub expected: Value,
}

#[derive(Debug, Deserialize)]
struct CaseFile {
    cases: Vec<Case>,
}

/// The repository's test data folder (`tests/data` at the workspace root).
fn test_data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// `$name` when set and non-empty, else `tests/data/<default>`.
fn data_dir(variable: &str, default: &str) -> PathBuf {
    match std::env::var_os(variable) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => test_data_dir().join(default),
    }
}

/// The folder holding the vectors: `$PAPERCLIP_GOLDEN_DIR`, else `tests/data/golden`.
pub fn golden_dir() -> PathBuf {
    data_dir("PAPERCLIP_GOLDEN_DIR", "golden")
}

/// A file of the error contract (`createos-errors.txt`, `kubernetes-errors.txt`):
/// `$PAPERCLIP_CONTRACT_DIR/<file>`, else `tests/data/contract/<file>`.
pub fn contract_file(file: &str) -> PathBuf {
    data_dir("PAPERCLIP_CONTRACT_DIR", "contract").join(file)
}

/// Loads `<golden_dir>/<relative>` (e.g. `createos/config.json`). Panics with the path when the
/// file is missing or malformed: a golden test without its vectors must fail, not pass.
pub fn load_cases(relative: &str) -> Vec<Case> {
    let path = golden_dir().join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read golden vectors {}: {e}", path.display()));
    let file: CaseFile = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("malformed golden vectors {}: {e}", path.display()));
    assert!(!file.cases.is_empty(), "{} has no cases", path.display());
    file.cases
}

/// The recorded shape of an outcome: `{"returns": value}` or `{"throws": {name, message}}`.
pub fn outcome(result: &Result<Value, ProviderError>) -> Value {
    match result {
        Ok(value) => json!({ "returns": value }),
        Err(err) => json!({ "throws": { "name": err.class.as_str(), "message": err.message } }),
    }
}

/// Runs every case through `run` and collects the mismatches as readable reports. Comparison is
/// on JSON text, so key order and number formatting count, as they do for the host.
pub fn mismatches(cases: &[Case], mut run: impl FnMut(&Case) -> Value) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        let actual = run(case);
        let expected_text = serde_json::to_string(&case.expected).expect("serialisable");
        let actual_text = serde_json::to_string(&actual).expect("serialisable");
        if expected_text != actual_text {
            failures.push(format!(
                "case {:?}\n  expected: {expected_text}\n  actual:   {actual_text}",
                case.name
            ));
        }
    }
    failures
}

/// Panics with every mismatch listed, after running all cases.
pub fn assert_all_pass(file: &str, cases: &[Case], run: impl FnMut(&Case) -> Value) {
    let failures = mismatches(cases, run);
    assert!(
        failures.is_empty(),
        "{} of {} cases in {file} differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
