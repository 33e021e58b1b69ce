//! A check's outcome as the probe reports it: an entry of `metadata.checks` and the summary
//! lines it makes.

use serde_json::{Map, Value, json};

/// One check, as `metadata.checks` lists it: `{check, ok, message, …details}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub kind: &'static str,
    pub ok: bool,
    pub message: String,
    pub details: Map<String, Value>,
}

impl Check {
    pub fn new(kind: &'static str, ok: bool, message: impl Into<String>) -> Self {
        Check {
            kind,
            ok,
            message: message.into(),
            details: Map::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.into(), value.into());
        self
    }

    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("check".into(), json!(self.kind));
        out.insert("ok".into(), json!(self.ok));
        out.insert("message".into(), json!(self.message));
        out.extend(self.details.clone());
        Value::Object(out)
    }
}

/// Checks and the summary lines they make, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub checks: Vec<Check>,
    pub lines: Vec<String>,
}

impl Report {
    /// A report of one check whose line is its message.
    pub fn single(check: Check) -> Self {
        Report {
            lines: vec![check.message.clone()],
            checks: vec![check],
        }
    }

    pub fn extend(&mut self, other: Report) {
        self.checks.extend(other.checks);
        self.lines.extend(other.lines);
    }

    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| !c.ok).count()
    }
}

/// An error's text on one summary line.
pub fn one_line(text: &str) -> String {
    text.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
