//! zod's parsing: the parse statuses, the schema types the config uses, and how their
//! statuses merge.

use js_compat::{json, string};
use serde_json::{Map, Value};

use super::issue::{Issue, IssueData, SizedKind, ZodIssues};
use super::{Input, ParsedType, PathRef};

/// Collects issues as zod's shared parse context does.
#[derive(Debug, Default)]
pub struct ParseCtx {
    issues: Vec<Issue>,
}

impl ParseCtx {
    pub fn new() -> Self {
        Self::default()
    }

    /// `addIssueToContext`.
    pub fn add_issue(&mut self, path: &PathRef<'_>, data: IssueData) {
        self.issues.push(Issue::make(path, data));
    }

    /// `safeParse`'s verdict: success only when the value parsed clean.
    pub fn finish<T>(self, parsed: Parsed<T>) -> Result<T, ZodIssues> {
        match parsed {
            Parsed::Valid(value) if self.issues.is_empty() => Ok(value),
            _ => Err(ZodIssues(self.issues)),
        }
    }
}

/// zod's parse status with its value: `valid`, `dirty` (checks failed, value still produced) or
/// `aborted` (`INVALID`, no value).
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed<T> {
    Valid(T),
    Dirty(T),
    Aborted,
}

impl<T> Parsed<T> {
    fn with_dirty(value: T, dirty: bool) -> Self {
        if dirty {
            Parsed::Dirty(value)
        } else {
            Parsed::Valid(value)
        }
    }

    pub fn is_aborted(&self) -> bool {
        matches!(self, Parsed::Aborted)
    }

    pub fn is_dirty(&self) -> bool {
        matches!(self, Parsed::Dirty(_))
    }

    pub fn value(self) -> Option<T> {
        match self {
            Parsed::Valid(value) | Parsed::Dirty(value) => Some(value),
            Parsed::Aborted => None,
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Parsed<U> {
        match self {
            Parsed::Valid(value) => Parsed::Valid(f(value)),
            Parsed::Dirty(value) => Parsed::Dirty(f(value)),
            Parsed::Aborted => Parsed::Aborted,
        }
    }
}

/// A check of `z.string()`, run in declaration order.
pub enum StringCheck<'a> {
    /// `.min(n)`, length in UTF-16 code units.
    Min(usize),
    /// `.regex(pattern, message?)`. The pattern is a predicate mirroring the JS regex.
    Regex(fn(&str) -> bool, Option<&'a str>),
    /// `.url()`: the WHATWG URL parser (`new URL(value)`) accepts the value.
    Url,
}

/// `z.string()` with its checks.
pub fn string(
    input: Input<'_>,
    path: &PathRef<'_>,
    cx: &mut ParseCtx,
    checks: &[StringCheck<'_>],
) -> Parsed<String> {
    let Some(Value::String(s)) = input else {
        cx.add_issue(
            path,
            IssueData::invalid_type(ParsedType::String, ParsedType::of(input)),
        );
        return Parsed::Aborted;
    };
    let mut dirty = false;
    for check in checks {
        let failed = match check {
            StringCheck::Min(minimum) => (string::utf16_len(s) < *minimum)
                .then(|| IssueData::too_small(*minimum as f64, SizedKind::String, true, None)),
            StringCheck::Regex(matches, message) => {
                (!matches(s)).then(|| IssueData::invalid_string("regex", *message))
            }
            StringCheck::Url => url::Url::parse(s)
                .is_err()
                .then(|| IssueData::invalid_string("url", None)),
        };
        if let Some(issue) = failed {
            cx.add_issue(path, issue);
            dirty = true;
        }
    }
    Parsed::with_dirty(s.clone(), dirty)
}

/// A check of `z.number()`, run in declaration order.
pub enum NumberCheck {
    /// `.int()`
    Int,
    /// `.nonnegative()` (`inclusive`) / `.positive()` (exclusive).
    Min { value: f64, inclusive: bool },
}

/// `z.number()` with its checks. The value is a JS number (`f64`).
pub fn number(
    input: Input<'_>,
    path: &PathRef<'_>,
    cx: &mut ParseCtx,
    checks: &[NumberCheck],
) -> Parsed<f64> {
    let received = ParsedType::of(input);
    let Some(number) = input
        .and_then(Value::as_f64)
        .filter(|_| received == ParsedType::Number)
    else {
        cx.add_issue(path, IssueData::invalid_type(ParsedType::Number, received));
        return Parsed::Aborted;
    };
    let mut dirty = false;
    for check in checks {
        let failed = match check {
            NumberCheck::Int => (!(number.is_finite() && number.fract() == 0.0))
                .then(|| IssueData::not_integer(None)),
            NumberCheck::Min { value, inclusive } => {
                let too_small = if *inclusive {
                    number < *value
                } else {
                    number <= *value
                };
                too_small.then(|| IssueData::too_small(*value, SizedKind::Number, *inclusive, None))
            }
        };
        if let Some(issue) = failed {
            cx.add_issue(path, issue);
            dirty = true;
        }
    }
    Parsed::with_dirty(number, dirty)
}

/// `z.boolean()`.
pub fn boolean(input: Input<'_>, path: &PathRef<'_>, cx: &mut ParseCtx) -> Parsed<bool> {
    match input {
        Some(Value::Bool(b)) => Parsed::Valid(*b),
        _ => {
            cx.add_issue(
                path,
                IssueData::invalid_type(ParsedType::Boolean, ParsedType::of(input)),
            );
            Parsed::Aborted
        }
    }
}

/// `z.enum(options)`: the index of the matching option.
pub fn enumeration(
    input: Input<'_>,
    path: &PathRef<'_>,
    cx: &mut ParseCtx,
    options: &[&str],
) -> Parsed<usize> {
    let Some(Value::String(s)) = input else {
        cx.add_issue(
            path,
            IssueData::enum_invalid_type(options, ParsedType::of(input)),
        );
        return Parsed::Aborted;
    };
    match options.iter().position(|option| option == s) {
        Some(index) => Parsed::Valid(index),
        None => {
            cx.add_issue(path, IssueData::invalid_enum_value(s, options));
            Parsed::Aborted
        }
    }
}

/// `.optional()`: `undefined` passes as `None`.
pub fn optional<T>(
    input: Input<'_>,
    inner: impl FnOnce(Input<'_>) -> Parsed<T>,
) -> Parsed<Option<T>> {
    match input {
        None => Parsed::Valid(None),
        some => inner(some).map(Some),
    }
}

/// `.default(value)`: `undefined` is replaced by the default, which then goes through the inner
/// schema like any input. The default is built only when it is needed (most configs supply
/// most fields, and a parse runs on every hook call).
pub fn with_default<T>(
    input: Input<'_>,
    default: impl FnOnce() -> Value,
    inner: impl FnOnce(Input<'_>) -> Parsed<T>,
) -> Parsed<T> {
    match input {
        None => inner(Some(&default())),
        some => inner(some),
    }
}

/// `.refine(check, message)`: skipped when the inner value aborted; a failure adds a `custom`
/// issue at the value's path and marks it dirty.
pub fn refine<T>(
    inner: Parsed<T>,
    path: &PathRef<'_>,
    cx: &mut ParseCtx,
    check: impl FnOnce(&T) -> bool,
    message: &str,
) -> Parsed<T> {
    let (value, mut dirty) = match inner {
        Parsed::Aborted => return Parsed::Aborted,
        Parsed::Valid(value) => (value, false),
        Parsed::Dirty(value) => (value, true),
    };
    if !check(&value) {
        cx.add_issue(path, IssueData::custom(message));
        dirty = true;
    }
    Parsed::with_dirty(value, dirty)
}

/// `.superRefine((value, ctx) => ctx.addIssue({code: "custom", message}))`: like [`refine`], but
/// the check returns the issue's message, so it can say what is wrong with the value.
pub fn refine_with<T>(
    inner: Parsed<T>,
    path: &PathRef<'_>,
    cx: &mut ParseCtx,
    check: impl FnOnce(&T) -> Option<String>,
) -> Parsed<T> {
    let (value, mut dirty) = match inner {
        Parsed::Aborted => return Parsed::Aborted,
        Parsed::Valid(value) => (value, false),
        Parsed::Dirty(value) => (value, true),
    };
    if let Some(message) = check(&value) {
        cx.add_issue(path, IssueData::custom(&message));
        dirty = true;
    }
    Parsed::with_dirty(value, dirty)
}

/// `z.array(item)`: every item is parsed (so every item's issues are raised) before the
/// statuses merge.
pub fn array<T>(
    input: Input<'_>,
    path: &PathRef<'_>,
    cx: &mut ParseCtx,
    mut item: impl FnMut(Input<'_>, &PathRef<'_>, &mut ParseCtx) -> Parsed<T>,
) -> Parsed<Vec<T>> {
    let Some(Value::Array(items)) = input else {
        cx.add_issue(
            path,
            IssueData::invalid_type(ParsedType::Array, ParsedType::of(input)),
        );
        return Parsed::Aborted;
    };
    let results: Vec<Parsed<T>> = items
        .iter()
        .enumerate()
        .map(|(index, value)| item(Some(value), &path.index(index), cx))
        .collect();
    merge(results)
}

/// `z.record(key, value)`: entries in JS `for…in` order, the key's issues before the value's.
/// The result keeps that order and, as zod's merge does, never sets a `__proto__` key.
pub fn record<V>(
    input: Input<'_>,
    path: &PathRef<'_>,
    cx: &mut ParseCtx,
    mut key_schema: impl FnMut(&str, &PathRef<'_>, &mut ParseCtx) -> Parsed<String>,
    mut value_schema: impl FnMut(Input<'_>, &PathRef<'_>, &mut ParseCtx) -> Parsed<V>,
) -> Parsed<Vec<(String, V)>> {
    let Some(Value::Object(map)) = input else {
        cx.add_issue(
            path,
            IssueData::invalid_type(ParsedType::Object, ParsedType::of(input)),
        );
        return Parsed::Aborted;
    };
    let mut pairs = Vec::new();
    for (key, value) in json::entries(map) {
        let entry_path = path.key(key);
        let key = key_schema(key, &entry_path, cx);
        let value = value_schema(Some(value), &entry_path, cx);
        pairs.push((key, value));
    }
    let mut dirty = false;
    let mut entries = Vec::new();
    for (key, value) in pairs {
        if key.is_aborted() || value.is_aborted() {
            return Parsed::Aborted;
        }
        dirty |= key.is_dirty() || value.is_dirty();
        let (Some(key), Some(value)) = (key.value(), value.value()) else {
            return Parsed::Aborted;
        };
        if key != "__proto__" {
            entries.push((key, value));
        }
    }
    Parsed::with_dirty(entries, dirty)
}

/// A record whose keys are plain `z.string()` (always valid: object keys are strings).
pub fn any_string_key(key: &str, _path: &PathRef<'_>, _cx: &mut ParseCtx) -> Parsed<String> {
    Parsed::Valid(key.to_string())
}

fn merge<T>(results: Vec<Parsed<T>>) -> Parsed<Vec<T>> {
    let mut dirty = false;
    let mut values = Vec::with_capacity(results.len());
    for result in results {
        dirty |= result.is_dirty();
        match result.value() {
            Some(value) => values.push(value),
            None => return Parsed::Aborted,
        }
    }
    Parsed::with_dirty(values, dirty)
}

/// How `z.object` treats keys its shape does not declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownKeys {
    /// zod's default: drop them silently.
    Strip,
    /// `.strict()`: one `unrecognized_keys` issue listing them, after the fields' issues.
    Strict,
}

/// `z.object(shape)`, parsed field by field in shape order:
///
/// ```text
/// let mut object = ObjectInput::new(input, path, cx)?;   // type guard
/// let a = object.field("a", cx, |v, p, cx| ...);          // one call per shape key, in order
/// object.finish(cx, UnknownKeys::Strip, || Some(T { a: a? }))
/// ```
pub struct ObjectInput<'a> {
    map: &'a Map<String, Value>,
    path: &'a PathRef<'a>,
    shape_keys: Vec<&'static str>,
    aborted: bool,
    dirty: bool,
}

impl<'a> ObjectInput<'a> {
    /// The object type guard. `None` means the issue was raised and the object aborted.
    pub fn new(input: Input<'a>, path: &'a PathRef<'a>, cx: &mut ParseCtx) -> Option<Self> {
        let Some(Value::Object(map)) = input else {
            cx.add_issue(
                path,
                IssueData::invalid_type(ParsedType::Object, ParsedType::of(input)),
            );
            return None;
        };
        Some(Self {
            map,
            path,
            shape_keys: Vec::new(),
            aborted: false,
            dirty: false,
        })
    }

    /// Parses one shape key. `None` when it aborted (the object then aborts too).
    pub fn field<T>(
        &mut self,
        key: &'static str,
        cx: &mut ParseCtx,
        schema: impl FnOnce(Input<'_>, &PathRef<'_>, &mut ParseCtx) -> Parsed<T>,
    ) -> Option<T> {
        self.shape_keys.push(key);
        let path = self.path.key(key);
        let parsed = schema(json::get(self.map, key), &path, cx);
        self.aborted |= parsed.is_aborted();
        self.dirty |= parsed.is_dirty();
        parsed.value()
    }

    /// Applies the unknown-key policy and merges the fields' statuses. `build` assembles the
    /// value from the fields' results; it only runs when no field aborted.
    pub fn finish<T>(
        mut self,
        cx: &mut ParseCtx,
        unknown_keys: UnknownKeys,
        build: impl FnOnce() -> Option<T>,
    ) -> Parsed<T> {
        if unknown_keys == UnknownKeys::Strict {
            let extra: Vec<String> = json::entries(self.map)
                .into_iter()
                .map(|(key, _)| key.clone())
                .filter(|key| !self.shape_keys.contains(&key.as_str()))
                .collect();
            if !extra.is_empty() {
                cx.add_issue(self.path, IssueData::unrecognized_keys(&extra));
                self.dirty = true;
            }
        }
        if self.aborted {
            return Parsed::Aborted;
        }
        match build() {
            Some(value) => Parsed::with_dirty(value, self.dirty),
            None => Parsed::Aborted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn array_reports_every_item_then_aborts_on_a_type_error() {
        let mut cx = ParseCtx::new();
        let input = json!([1, "ok", null]);
        let parsed = array(Some(&input), &PathRef::Root, &mut cx, |v, p, cx| {
            string(v, p, cx, &[])
        });
        assert!(parsed.is_aborted());
        assert_eq!(cx.issues.len(), 2);
        assert_eq!(cx.issues[1].path(), &[json!(2)]);
    }

    #[test]
    fn refine_skips_aborted_and_runs_on_dirty() {
        let mut cx = ParseCtx::new();
        let aborted = refine(
            Parsed::<u8>::Aborted,
            &PathRef::Root,
            &mut cx,
            |_| false,
            "never",
        );
        assert!(aborted.is_aborted());
        assert!(cx.issues.is_empty());
        let dirty = refine(
            Parsed::Dirty(1u8),
            &PathRef::Root,
            &mut cx,
            |_| false,
            "ran",
        );
        assert!(dirty.is_dirty());
        assert_eq!(cx.issues[0].message(), "ran");
    }
}
