//! zod's issues: the `issueData` literals of each raising site, `makeIssue`, and the English
//! default error map.

use serde_json::{Map, Value};

use super::{ParsedType, PathRef};
use js_compat::{json, number, value};

/// The object literal zod passes to `addIssueToContext` (its "issueData"), keys in the order
/// zod's source writes them. A `None` value is a key that is present but `undefined`, as
/// `message: check.message` is for a check declared without a message.
#[derive(Debug, Clone, PartialEq)]
pub struct IssueData {
    fields: Vec<(&'static str, Option<Value>)>,
}

impl IssueData {
    fn new(fields: Vec<(&'static str, Option<Value>)>) -> Self {
        Self { fields }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.as_ref())
    }

    /// A value of the wrong type (any schema's type guard).
    pub fn invalid_type(expected: ParsedType, received: ParsedType) -> Self {
        Self::new(vec![
            ("code", Some("invalid_type".into())),
            ("expected", Some(expected.as_str().into())),
            ("received", Some(received.as_str().into())),
        ])
    }

    /// `z.enum([...])` given a non-string: `expected` is the joined option list.
    pub fn enum_invalid_type(options: &[&str], received: ParsedType) -> Self {
        Self::new(vec![
            (
                "expected",
                Some(join_values(&strings(options), " | ").into()),
            ),
            ("received", Some(received.as_str().into())),
            ("code", Some("invalid_type".into())),
        ])
    }

    /// `z.enum([...])` given a string that is not an option.
    pub fn invalid_enum_value(received: &str, options: &[&str]) -> Self {
        Self::new(vec![
            ("received", Some(received.into())),
            ("code", Some("invalid_enum_value".into())),
            ("options", Some(Value::Array(strings(options)))),
        ])
    }

    /// `.int()` on a number with a fraction.
    pub fn not_integer(message: Option<&str>) -> Self {
        Self::new(vec![
            ("code", Some("invalid_type".into())),
            ("expected", Some(ParsedType::Integer.as_str().into())),
            ("received", Some(ParsedType::Float.as_str().into())),
            ("message", message.map(Value::from)),
        ])
    }

    /// A `min`-style check (`.min()` on strings, `.nonnegative()`/`.positive()` on numbers).
    pub fn too_small(
        minimum: f64,
        kind: SizedKind,
        inclusive: bool,
        message: Option<&str>,
    ) -> Self {
        Self::new(vec![
            ("code", Some("too_small".into())),
            ("minimum", Some(number::json_value(minimum))),
            ("type", Some(kind.as_str().into())),
            ("inclusive", Some(inclusive.into())),
            ("exact", Some(false.into())),
            ("message", message.map(Value::from)),
        ])
    }

    /// A failed string format check (`regex`, `url`, ...).
    pub fn invalid_string(validation: &'static str, message: Option<&str>) -> Self {
        Self::new(vec![
            ("validation", Some(validation.into())),
            ("code", Some("invalid_string".into())),
            ("message", message.map(Value::from)),
        ])
    }

    /// Keys a `.strict()` object does not declare.
    pub fn unrecognized_keys(keys: &[String]) -> Self {
        Self::new(vec![
            ("code", Some("unrecognized_keys".into())),
            (
                "keys",
                Some(keys.iter().cloned().map(Value::String).collect()),
            ),
        ])
    }

    /// `.refine(check, message)` / `.refine(check, {message})`: `{code: "custom", message}`.
    pub fn custom(message: &str) -> Self {
        Self::new(vec![
            ("code", Some("custom".into())),
            ("message", Some(message.into())),
        ])
    }
}

/// The `type` of a `too_small`/`too_big` issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizedKind {
    String,
    Number,
    Array,
}

impl SizedKind {
    fn as_str(self) -> &'static str {
        match self {
            SizedKind::String => "string",
            SizedKind::Number => "number",
            SizedKind::Array => "array",
        }
    }
}

fn strings(values: &[&str]) -> Vec<Value> {
    values.iter().map(|v| Value::from(*v)).collect()
}

/// zod's `util.joinValues`: strings in single quotes, everything else as JS `String(value)`.
fn join_values(values: &[Value], separator: &str) -> String {
    values
        .iter()
        .map(|value| match value {
            Value::String(s) => format!("'{s}'"),
            other => value::to_string(other),
        })
        .collect::<Vec<_>>()
        .join(separator)
}

/// One finished issue: the exact object zod's `makeIssue` returns (keys in its order).
#[derive(Debug, Clone, PartialEq)]
pub struct Issue(Map<String, Value>);

impl Issue {
    /// zod's `makeIssue`: `{...issueData, path, message}`, where spreading keeps issueData's key
    /// order and a later key that already exists keeps its place. The message is issueData's own
    /// when defined, else the default error map's.
    pub fn make(path: &PathRef<'_>, data: IssueData) -> Issue {
        let mut full_path = path.to_json();
        if let Some(Value::Array(extra)) = data.get("path") {
            full_path.extend(extra.iter().cloned());
        }
        let mut issue = Map::new();
        for (key, value) in &data.fields {
            match value {
                Some(value) => {
                    issue.insert((*key).to_string(), value.clone());
                }
                // An undefined `message` still takes its place in the spread and is filled
                // below; any other undefined key is dropped, as `JSON.stringify` drops it.
                None if *key == "message" => {
                    issue.insert((*key).to_string(), Value::Null);
                }
                None => {}
            }
        }
        issue.insert("path".into(), Value::Array(full_path));
        let message = match data.get("message") {
            Some(Value::String(message)) => message.clone(),
            _ => default_error_message(&issue),
        };
        issue.insert("message".into(), Value::String(message));
        Issue(issue)
    }

    pub fn message(&self) -> &str {
        self.0
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn code(&self) -> &str {
        self.0
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn path(&self) -> &[Value] {
        self.0
            .get("path")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    pub fn to_json(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

/// An issue field as JS's `String(v)` (`"undefined"` when absent).
fn field_text(issue: &Map<String, Value>, key: &str) -> String {
    issue
        .get(key)
        .map(value::to_string)
        .unwrap_or_else(|| "undefined".into())
}

/// An issue's boolean field, false when absent.
fn field_flag(issue: &Map<String, Value>, key: &str) -> bool {
    issue.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// zod 3's English error map (`locales/en.js`) for the issue codes it knows.
pub fn default_error_message(issue: &Map<String, Value>) -> String {
    let text = |key: &str| field_text(issue, key);
    let list = |key: &str| {
        issue
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    match issue
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "invalid_type" if text("received") == ParsedType::Undefined.as_str() => "Required".into(),
        "invalid_type" => format!(
            "Expected {}, received {}",
            text("expected"),
            text("received")
        ),
        "invalid_literal" => format!(
            "Invalid literal value, expected {}",
            issue
                .get("expected")
                .map_or("undefined".into(), |v| v.to_string())
        ),
        "unrecognized_keys" => {
            format!(
                "Unrecognized key(s) in object: {}",
                join_values(&list("keys"), ", ")
            )
        }
        "invalid_union" => "Invalid input".into(),
        "invalid_union_discriminator" => {
            format!(
                "Invalid discriminator value. Expected {}",
                join_values(&list("options"), " | ")
            )
        }
        "invalid_enum_value" => format!(
            "Invalid enum value. Expected {}, received '{}'",
            join_values(&list("options"), " | "),
            text("received")
        ),
        "invalid_arguments" => "Invalid function arguments".into(),
        "invalid_return_type" => "Invalid function return type".into(),
        "invalid_date" => "Invalid date".into(),
        "invalid_string" => match issue.get("validation") {
            Some(Value::String(validation)) if validation != "regex" => {
                format!("Invalid {validation}")
            }
            _ => "Invalid".into(),
        },
        "too_small" => too_small_message(issue),
        "too_big" => too_big_message(issue),
        "custom" => "Invalid input".into(),
        "invalid_intersection_types" => "Intersection results could not be merged".into(),
        "not_multiple_of" => format!("Number must be a multiple of {}", text("multipleOf")),
        "not_finite" => "Number must be finite".into(),
        _ => String::new(),
    }
}

/// zod's `too_small` message: its wording depends on the type and on `exact`/`inclusive`.
fn too_small_message(issue: &Map<String, Value>) -> String {
    let text = |key: &str| field_text(issue, key);
    let flag = |key: &str| field_flag(issue, key);
    let bound = if flag("exact") {
        "exactly"
    } else if flag("inclusive") {
        "at least"
    } else {
        ""
    };
    let minimum = text("minimum");
    match text("type").as_str() {
        "array" => format!(
            "Array must contain {} {minimum} element(s)",
            if bound.is_empty() { "more than" } else { bound }
        ),
        "string" => format!(
            "String must contain {} {minimum} character(s)",
            if bound.is_empty() { "over" } else { bound }
        ),
        "number" => format!(
            "Number must be {}{minimum}",
            number_bound(issue, "greater than")
        ),
        _ => "Invalid input".into(),
    }
}

/// zod's `too_big` message: its wording depends on the type and on `exact`/`inclusive`.
fn too_big_message(issue: &Map<String, Value>) -> String {
    let text = |key: &str| field_text(issue, key);
    let flag = |key: &str| field_flag(issue, key);
    let maximum = text("maximum");
    let bound = if flag("exact") {
        "exactly"
    } else if flag("inclusive") {
        "at most"
    } else {
        ""
    };
    match text("type").as_str() {
        "array" => format!(
            "Array must contain {} {maximum} element(s)",
            if bound.is_empty() { "less than" } else { bound }
        ),
        "string" => format!(
            "String must contain {} {maximum} character(s)",
            if bound.is_empty() { "under" } else { bound }
        ),
        "number" => {
            let bound = if flag("exact") {
                "exactly"
            } else if flag("inclusive") {
                "less than or equal to"
            } else {
                "less than"
            };
            format!("Number must be {bound} {maximum}")
        }
        _ => "Invalid input".into(),
    }
}

/// The `too_small` number wording, which carries its own trailing space.
fn number_bound(issue: &Map<String, Value>, strict: &str) -> String {
    let flag = |key: &str| field_flag(issue, key);
    if flag("exact") {
        "exactly equal to ".into()
    } else if flag("inclusive") {
        format!("{strict} or equal to ")
    } else {
        format!("{strict} ")
    }
}

/// The issues of a failed parse, in the order zod raised them (a `ZodError`'s `issues`).
#[derive(Debug, Clone, PartialEq)]
pub struct ZodIssues(pub Vec<Issue>);

impl ZodIssues {
    /// `error.issues.map((i) => i.message)`.
    pub fn messages(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|issue| issue.message().to_string())
            .collect()
    }

    pub fn to_json(&self) -> Value {
        Value::Array(self.0.iter().map(Issue::to_json).collect())
    }

    /// A `ZodError`'s `message`: `JSON.stringify(issues, null, 2)`.
    pub fn error_message(&self) -> String {
        json::stringify_pretty(&self.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issue_text(data: IssueData, path: &PathRef<'_>) -> String {
        serde_json::to_string(&Issue::make(path, data).to_json()).unwrap()
    }

    #[test]
    fn issue_keys_follow_zods_construction_order() {
        let root = PathRef::Root;
        assert_eq!(
            issue_text(
                IssueData::invalid_type(ParsedType::Boolean, ParsedType::String),
                &root.key("a")
            ),
            r#"{"code":"invalid_type","expected":"boolean","received":"string","path":["a"],"message":"Expected boolean, received string"}"#
        );
        assert_eq!(
            issue_text(IssueData::invalid_string("regex", None), &root),
            r#"{"validation":"regex","code":"invalid_string","message":"Invalid","path":[]}"#
        );
        assert_eq!(
            issue_text(IssueData::not_integer(None), &root),
            r#"{"code":"invalid_type","expected":"integer","received":"float","message":"Expected integer, received float","path":[]}"#
        );
        assert_eq!(
            issue_text(
                IssueData::enum_invalid_type(&["a", "b"], ParsedType::Number),
                &root
            ),
            r#"{"expected":"'a' | 'b'","received":"number","code":"invalid_type","path":[],"message":"Expected 'a' | 'b', received number"}"#
        );
        assert_eq!(
            issue_text(IssueData::custom("m"), &root.index(0)),
            r#"{"code":"custom","message":"m","path":[0]}"#
        );
    }

    #[test]
    fn default_messages() {
        let message = |data: IssueData| Issue::make(&PathRef::Root, data).message().to_string();
        assert_eq!(
            message(IssueData::invalid_type(
                ParsedType::String,
                ParsedType::Undefined
            )),
            "Required"
        );
        assert_eq!(
            message(IssueData::invalid_string("url", None)),
            "Invalid url"
        );
        assert_eq!(
            message(IssueData::too_small(0.0, SizedKind::Number, true, None)),
            "Number must be greater than or equal to 0"
        );
        assert_eq!(
            message(IssueData::too_small(0.0, SizedKind::Number, false, None)),
            "Number must be greater than 0"
        );
        assert_eq!(
            message(IssueData::too_small(1.0, SizedKind::String, true, None)),
            "String must contain at least 1 character(s)"
        );
        assert_eq!(
            message(IssueData::unrecognized_keys(&["x".into(), "y".into()])),
            "Unrecognized key(s) in object: 'x', 'y'"
        );
        assert_eq!(
            message(IssueData::invalid_enum_value("v", &["a", "b"])),
            "Invalid enum value. Expected 'a' | 'b', received 'v'"
        );
        let union = json!({"code": "invalid_union"});
        assert_eq!(
            default_error_message(union.as_object().unwrap()),
            "Invalid input"
        );
    }
}
