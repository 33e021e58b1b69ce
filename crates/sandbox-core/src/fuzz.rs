//! The shared half of the providers' property fuzzing (`tests/fuzz_params.rs` in each provider
//! crate): the case count, arbitrary JSON over a provider's own keys and values, the bound on
//! one hook call, and the properties every outcome must have (no hang, no leaked secret, every
//! error catalogued or a documented pass-through).
//!
//! Each provider's suite keeps what is its own: its keys and sample values, its configs and
//! params, and the dependency texts it passes through.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::Value;

use crate::{ProviderError, ProviderResult};

/// Bound of one hook call (a hang fails the property).
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// `PROPTEST_CASES`, else 4,096 under `PAPERCLIP_SOAK=long`, else 256.
pub fn cases() -> u32 {
    if let Ok(n) = std::env::var("PROPTEST_CASES") {
        return n.parse().expect("PROPTEST_CASES is a count");
    }
    match std::env::var("PAPERCLIP_SOAK").as_deref() {
        Ok("long") => 4096,
        _ => 256,
    }
}

/// A runner of [`cases`] cases that persists no failures (the seed is in the report).
pub fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })
}

/// The two-thread runtime the hook calls run on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a test runtime")
}

/// What arbitrary JSON is made of for one provider: the keys its code reads (so that random
/// objects reach real code paths) and sample values that mean something to it.
pub struct JsonShape {
    pub keys: &'static [&'static str],
    pub floats: &'static [f64],
    pub integers: &'static [i64],
    pub strings: &'static [&'static str],
}

impl JsonShape {
    /// One of the keys most of the time, else a short random identifier.
    pub fn key(&'static self) -> impl Strategy<Value = String> + Clone {
        prop_oneof![
            3 => proptest::sample::select(self.keys).prop_map(str::to_owned),
            1 => "[a-zA-Z_]{0,8}",
        ]
    }

    /// A scalar: `null`, a boolean, any integer, a sample number or string, a small integer or
    /// a random printable string.
    pub fn leaf(&'static self) -> impl Strategy<Value = Value> + Clone {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            proptest::sample::select(self.floats).prop_map(Value::from),
            prop_oneof![
                (0i64..100_000).prop_map(Value::from),
                proptest::sample::select(self.integers).prop_map(Value::from),
            ],
            "\\PC{0,16}".prop_map(Value::String),
            proptest::sample::select(self.strings).prop_map(Value::from),
        ]
    }

    /// Arbitrary JSON, at most a few levels deep.
    pub fn any_json(&'static self) -> impl Strategy<Value = Value> + Clone {
        self.leaf().prop_recursive(3, 24, 5, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(self.key(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}

impl JsonShape {
    /// A sync mapping's `kind`: `file`, `directory`, or arbitrary JSON.
    pub fn mapping_kind(&'static self) -> impl Strategy<Value = Value> + Clone {
        prop_oneof![
            Just(Value::from("file")),
            Just(Value::from("directory")),
            self.any_json()
        ]
    }

    /// A sync mapping's host path, three times in four one of [`host_path`]'s, else arbitrary
    /// JSON.
    pub fn host_path_or_json(
        &'static self,
        root: &str,
    ) -> impl Strategy<Value = Value> + Clone + use<> {
        prop_oneof![3 => host_path(root), 1 => self.any_json()]
    }
}

/// A host path of a sync mapping that stays inside the [`SyncFixture`] at `root` (its file, its
/// directory, a missing name, a `..` that ends inside) or is refused before any I/O (relative,
/// empty), so that nothing outside the fixture is ever read or written.
pub fn host_path(root: &str) -> impl Strategy<Value = Value> + Clone + use<> {
    prop_oneof![
        Just(format!("{root}/file.txt")),
        Just(format!("{root}/dir")),
        Just(format!("{root}/missing")),
        Just(format!("{root}/dir/../file.txt")),
        Just("relative/path".to_owned()),
        Just(String::new()),
    ]
    .prop_map(Value::String)
}

/// Hook results that are a `Value` and those that are an `Option<Value>` alike.
pub trait OptionLike {
    fn into_option(self) -> Option<Value>;
}

impl OptionLike for Value {
    fn into_option(self) -> Option<Value> {
        Some(self)
    }
}

impl OptionLike for Option<Value> {
    fn into_option(self) -> Option<Value> {
        self
    }
}

/// What one bounded hook call did: `None` when it hung past [`HOOK_TIMEOUT`].
pub type Outcome = Option<ProviderResult<Option<Value>>>;

/// Runs one hook call within [`HOOK_TIMEOUT`].
pub async fn bounded<R: OptionLike>(call: impl Future<Output = ProviderResult<R>>) -> Outcome {
    tokio::time::timeout(HOOK_TIMEOUT, call)
        .await
        .ok()
        .map(|result| result.map(OptionLike::into_option))
}

/// Calls each named hook of `$provider` with `$params` and a [`crate::NullSink`], each within
/// [`HOOK_TIMEOUT`], giving `Vec<(&str, Outcome)>`.
#[macro_export]
macro_rules! fuzz_hooks {
    ($provider:expr, $params:expr, $($name:ident),+ $(,)?) => {{
        let mut outcomes: Vec<(&'static str, $crate::fuzz::Outcome)> = Vec::new();
        $(
            outcomes.push((
                stringify!($name),
                $crate::fuzz::bounded($provider.$name($params, &$crate::NullSink)).await,
            ));
        )+
        outcomes
    }};
}

/// Texts of V8 and Node that the original passed through from an unguarded JS operation on a
/// hostile value, each with its reason; `None` for any other message.
pub fn node_pass_through(message: &str) -> Option<&'static str> {
    // A property read of null/undefined (`config.apiUrl` and friends without a guard).
    if message.starts_with("Cannot read properties of ") {
        return Some("V8 TypeError text of an unguarded property read");
    }
    // `for…of` over a non-iterable (`params.operations`, `operation.files`).
    if message.ends_with(js_compat::value::NOT_ITERABLE) {
        return Some("V8 TypeError text of an unguarded for-of");
    }
    // A string/array method called on another type (`value.includes`).
    if message.ends_with(js_compat::value::NOT_A_FUNCTION) {
        return Some("V8 TypeError text of a method call on the wrong type");
    }
    // ERR_INVALID_ARG_TYPE (`path.resolve(null)` in the original's sync).
    if message.starts_with("The \"") && message.contains("\" argument must be ") {
        return Some("Node ERR_INVALID_ARG_TYPE text");
    }
    // fs errors (`ENOENT: no such file or directory, lstat '…'`).
    if let Some((code, _)) = message.split_once(": ")
        && code.len() > 1
        && code.starts_with('E')
        && code.chars().all(|c| c.is_ascii_uppercase())
    {
        return Some("Node fs errno text");
    }
    None
}

/// The properties of one provider's outcomes.
pub struct Properties {
    /// A secret planted in every config: it must never appear in an error or a result.
    pub canary: &'static str,
    /// What the canary stands for, in failure reports (`key`, `token`).
    pub secret: &'static str,
    /// Messages deliberately outside the catalogue, with the reason; `None`: not allowed.
    pub pass_through: fn(&ProviderError) -> Option<&'static str>,
    /// Whether the catalogue explains a message (`error_catalog::explain(m).is_some()`).
    pub catalogued: fn(&str) -> bool,
}

impl Properties {
    /// A failure carries no secret and a catalogued or passed-through message.
    pub fn check_error(
        &self,
        what: &str,
        input: &Value,
        error: &ProviderError,
    ) -> Result<(), TestCaseError> {
        prop_assert!(
            !error.message.contains(self.canary),
            "{what}: the {} leaked: {error:?}",
            self.secret
        );
        prop_assert!(
            (self.catalogued)(&error.message) || (self.pass_through)(error).is_some(),
            "{what}: uncatalogued error {error:?} for {input}"
        );
        Ok(())
    }

    /// A result carries no secret.
    pub fn check_result(&self, what: &str, result: &Value) -> Result<(), TestCaseError> {
        prop_assert!(
            !result.to_string().contains(self.canary),
            "{what}: the {} in a result: {result}",
            self.secret
        );
        Ok(())
    }

    /// Every outcome finished in time and has the properties above.
    pub fn check_outcomes(
        &self,
        input: &Value,
        outcomes: Vec<(&str, Outcome)>,
    ) -> Result<(), TestCaseError> {
        for (name, outcome) in outcomes {
            match outcome {
                None => prop_assert!(false, "{name} hung on {input}"),
                Some(Ok(Some(result))) => self.check_result(name, &result)?,
                Some(Ok(None)) => {}
                Some(Err(error)) => self.check_error(name, input, &error)?,
            }
        }
        Ok(())
    }
}

/// The host-side tree the sync fuzzing maps from and to (`file.txt`, `dir/inner.txt` in a fresh
/// temporary directory), removed however the test ends.
pub struct SyncFixture(PathBuf);

impl SyncFixture {
    pub fn new(name: &str) -> Self {
        let root = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(root.join("dir")).expect("fixture directory");
        std::fs::write(root.join("file.txt"), "fuzz").expect("fixture file");
        std::fs::write(root.join("dir/inner.txt"), "fuzz").expect("fixture file");
        Self(root)
    }

    pub fn root(&self) -> &Path {
        &self.0
    }

    /// The names at the top of the tree, sorted: `["dir", "file.txt"]` unless a sync wrote there.
    pub fn top_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .expect("fixture directory")
            .map(|e| {
                e.expect("fixture entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }
}

impl Drop for SyncFixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Hook params for a fuzz case: `params`, `extra`'s entries added (but a `config`), and then
/// `config` as the config: the fuzzer's configs are built to name no real host, and an
/// arbitrary `config` from `extra` could.
pub fn params_with(
    mut params: serde_json::Map<String, Value>,
    extra: impl IntoIterator<Item = (String, Value)>,
    config: Value,
) -> Value {
    for (key, value) in extra {
        if key != "config" {
            params.insert(key, value);
        }
    }
    params.insert("config".into(), config);
    Value::Object(params)
}
