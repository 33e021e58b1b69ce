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
    boolean, enumeration, number, optional, record, refine, string, with_default,
};

use std::borrow::Cow;

use serde_json::Value;

/// A value being parsed. `None` is JS `undefined` (a missing key).
pub type Input<'a> = Option<&'a Value>;

/// One step of an issue's `path`. A schema field's key is a `&'static str` borrowed as it is (a
/// path is built for every field of every parse, an issue is rare); a record's key is owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    Key(Cow<'static, str>),
    Index(usize),
}

impl PathSegment {
    fn to_json(&self) -> Value {
        match self {
            PathSegment::Key(key) => Value::String(key.to_string()),
            PathSegment::Index(index) => Value::from(*index),
        }
    }
}

pub type Path = Vec<PathSegment>;

/// `path` extended by one step, as zod's `ParseInputLazyPath` does for a child value.
pub fn child_path(path: &[PathSegment], segment: PathSegment) -> Path {
    let mut child = Vec::with_capacity(path.len() + 1);
    child.extend_from_slice(path);
    child.push(segment);
    child
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
