//! The parts of zod 3 (3.25.76) that the provider config schema uses, with zod's observable
//! behaviour: which issues are raised, in which order, with which fields in which key order, and
//! which default messages; and when parsing stops (a wrong *type* aborts the enclosing object, a
//! failed *check* only marks it dirty, and refinements run on dirty but not on aborted values).
//!
//! Issues are kept as the exact JS objects zod builds, because hooks other than validate and
//! probe surface them verbatim: a `ZodError`'s message is `JSON.stringify(issues, null, 2)`.

mod issue;
mod parse;

pub use issue::{Issue, IssueData, SizedKind, ZodIssues, default_error_message};
pub use parse::{
    NumberCheck, ObjectInput, ParseCtx, Parsed, StringCheck, UnknownKeys, any_string_key, array,
    boolean, enumeration, number, optional, record, refine, refine_with, string, with_default,
};

use serde_json::Value;

/// A value being parsed. `None` is JS `undefined` (a missing key).
pub type Input<'a> = Option<&'a Value>;

/// Where a value sits in the input, as zod's `ParseInputLazyPath` keeps it: one step and its
/// parent's place, borrowed from the caller's stack frame. Descending into a field or an item
/// costs nothing; the chain becomes an issue's `path` ([`PathRef::to_json`]) only when an issue
/// is raised, which is rare beside the fields of every parse of every hook call.
#[derive(Debug, Clone, Copy)]
pub enum PathRef<'a> {
    Root,
    Key(&'a PathRef<'a>, &'a str),
    Index(&'a PathRef<'a>, usize),
}

impl<'a> PathRef<'a> {
    /// The place of this value's field `key`.
    pub fn key(&'a self, key: &'a str) -> PathRef<'a> {
        PathRef::Key(self, key)
    }

    /// The place of this array's item `index`.
    pub fn index(&'a self, index: usize) -> PathRef<'a> {
        PathRef::Index(self, index)
    }

    /// The steps from the root to here, as an issue's `path` array lists them: keys as
    /// strings, indexes as numbers.
    pub fn to_json(&self) -> Vec<Value> {
        let mut steps = Vec::new();
        let mut at = self;
        loop {
            match at {
                PathRef::Root => break,
                PathRef::Key(parent, key) => {
                    steps.push(Value::from(*key));
                    at = parent;
                }
                PathRef::Index(parent, index) => {
                    steps.push(Value::from(*index));
                    at = parent;
                }
            }
        }
        steps.reverse();
        steps
    }
}

/// zod's `ZodParsedType`: the type names that appear as `expected`/`received` in issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParsedType {
    String,
    Nan,
    Number,
    Integer,
    Float,
    Boolean,
    Date,
    Bigint,
    Symbol,
    Function,
    Undefined,
    Null,
    Array,
    Object,
    Unknown,
    Promise,
    Void,
    Never,
    Map,
    Set,
}

impl ParsedType {
    pub fn as_str(self) -> &'static str {
        match self {
            ParsedType::String => "string",
            ParsedType::Nan => "nan",
            ParsedType::Number => "number",
            ParsedType::Integer => "integer",
            ParsedType::Float => "float",
            ParsedType::Boolean => "boolean",
            ParsedType::Date => "date",
            ParsedType::Bigint => "bigint",
            ParsedType::Symbol => "symbol",
            ParsedType::Function => "function",
            ParsedType::Undefined => "undefined",
            ParsedType::Null => "null",
            ParsedType::Array => "array",
            ParsedType::Object => "object",
            ParsedType::Unknown => "unknown",
            ParsedType::Promise => "promise",
            ParsedType::Void => "void",
            ParsedType::Never => "never",
            ParsedType::Map => "map",
            ParsedType::Set => "set",
        }
    }

    /// zod's `getParsedType` for the values JSON can carry. (`integer` and `float` are never
    /// returned here; zod only names them in the `.int()` check's issue.)
    pub fn of(input: Input<'_>) -> ParsedType {
        match input {
            None => ParsedType::Undefined,
            Some(Value::Null) => ParsedType::Null,
            Some(Value::Bool(_)) => ParsedType::Boolean,
            Some(Value::Number(n)) if n.as_f64().is_some_and(f64::is_nan) => ParsedType::Nan,
            Some(Value::Number(_)) => ParsedType::Number,
            Some(Value::String(_)) => ParsedType::String,
            Some(Value::Array(_)) => ParsedType::Array,
            Some(Value::Object(_)) => ParsedType::Object,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parsed_types_name_json_values() {
        let name = |v: Value| ParsedType::of(Some(&v)).as_str();
        assert_eq!(name(json!(null)), "null");
        assert_eq!(name(json!([])), "array");
        assert_eq!(name(json!({})), "object");
        assert_eq!(name(json!(1.5)), "number");
        assert_eq!(ParsedType::of(None).as_str(), "undefined");
    }
}
