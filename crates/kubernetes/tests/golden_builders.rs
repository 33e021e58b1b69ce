//! `kubernetes/builders.json`, the pure functions: builders, naming, images, adapter env, lease
//! expiry, command wrapping, and acquire's checks before it reaches the cluster. Each case's
//! outcome must equal the recording exactly (key order included).
//!
//! Every function in the file is either run here or named in [`covered_elsewhere`], so a vector
//! set with a function nobody runs fails instead of passing silently.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use js_compat::value;
use kubernetes::builders::string_map::{from_json_object, string_map_object};
use kubernetes::builders::{
    CiliumNetworkPolicyInput, JobManifestInput, LabelsInput, NetworkPolicyInput,
    SandboxCrManifestInput, append_network_egress_deny_hint, build_adapter_env,
    build_cilium_network_policy_manifest, build_job_manifest, build_network_policy_manifests,
    build_sandbox_cr_manifest, glob_match, image_pull_policy_for, new_run_ulid_dns,
    paperclip_labels, parse_scoped_network_egress_grant, resolve_image, resolve_image_pull_policy,
};
use kubernetes::config::adapters::{AdapterDefaults, resolve_run_adapter_type};
use kubernetes::exec::command::{sh_quote, wrap_command_with_env};
use kubernetes::lease::expiry::compute_bounded_lease_deadline;
use kubernetes::lease::precheck::prepare_acquire;
use sandbox_core::golden::{Case, load_cases, outcome};
use sandbox_core::{ProviderError, ProviderResult};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

#[path = "support/golden.rs"]
mod golden_support;
use golden_support::{CLUSTER_FUNCTIONS, assert_groups_pass};

const VECTORS: &str = "kubernetes/builders.json";

/// The functions this runner checks.
const PURE_FUNCTIONS: &[&str] = &[
    "buildJobManifest",
    "buildSandboxCrManifest",
    "buildNetworkPolicyManifests",
    "buildCiliumNetworkPolicyManifest",
    "paperclipLabels",
    "newRunUlidDns",
    "parseScopedNetworkEgressGrant",
    "appendNetworkEgressDenyHint",
    "globMatch",
    "resolveImage",
    "imagePullPolicyFor",
    "resolveImagePullPolicy",
    "buildAdapterEnv",
    "resolveRunAdapterType",
    "computeBoundedLeaseDeadline",
    "wrapCommandWithEnv",
    "shQuote",
    "onEnvironmentAcquireLease",
];

/// Functions of the same file that other runners check: the cluster-facing ones in
/// `golden_cluster.rs`, and `getAdapterDefaults` with the config.
fn covered_elsewhere(function: &str) -> bool {
    function == "getAdapterDefaults" || CLUSTER_FUNCTIONS.contains(&function)
}

#[test]
fn pure_builder_vectors() {
    let cases = load_cases(VECTORS);
    let mut by_function: BTreeMap<String, Vec<Case>> = BTreeMap::new();
    let mut unassigned = Vec::new();
    for case in &cases {
        let function = case.input["fn"].as_str().unwrap_or_default();
        if PURE_FUNCTIONS.contains(&function) {
            by_function
                .entry(function.to_string())
                .or_default()
                .push(with_registry_scheme_dropped(case));
        } else if !covered_elsewhere(function) {
            unassigned.push(format!("{:?} ({function:?})", case.name));
        }
    }
    assert!(
        unassigned.is_empty(),
        "cases no runner checks: {}",
        unassigned.join(", ")
    );
    assert!(
        !by_function.is_empty(),
        "{VECTORS} has no pure-builder cases"
    );

    assert_groups_pass(&by_function, run_case);
}

/// The recorded expectation with issue #37's registry rewrite applied (a deliberate difference,
/// docs/wire-parity.md): the original put `imageRegistry` in front of the image verbatim, so an
/// `https://` registry gave the invalid reference `https://host/org/image:tag`; the image
/// reference now never carries the scheme. Where a recorded `resolveImage` result starts with
/// an `http://` or `https://` scheme (any case), the expectation is that result without it.
fn with_registry_scheme_dropped(case: &Case) -> Case {
    let mut case = case.clone();
    if case.input["fn"] != "resolveImage" {
        return case;
    }
    if let Some(image) = case.expected["returns"].as_str() {
        let lower = image.to_ascii_lowercase();
        let scheme = ["https://", "http://"]
            .into_iter()
            .find(|scheme| lower.starts_with(scheme));
        if let Some(scheme) = scheme {
            case.expected["returns"] = image[scheme.len()..].into();
        }
    }
    case
}

/// The scheme rule changes exactly the one recorded rewrite through an `https://` registry.
#[test]
fn the_registry_scheme_rule_changes_only_the_scheme_rewrite() {
    if std::env::var_os("PAPERCLIP_GOLDEN_DIR").is_some() {
        return;
    }
    let adjusted: Vec<(String, Value)> = load_cases(VECTORS)
        .iter()
        .filter_map(|case| {
            let adopted = with_registry_scheme_dropped(case);
            (adopted.expected != case.expected)
                .then(|| (case.name.clone(), adopted.expected["returns"].clone()))
        })
        .collect();
    assert_eq!(
        adjusted,
        [(
            "image: registry rewrite keeps tag (registry string used verbatim, including scheme)"
                .to_string(),
            json!(
                "registry.example.com/acme/agent-runtime-claude:git-38d8f371722b315d2fb3bbaa512518742e33ce2f"
            )
        )]
    );
}

fn run_case(case: &Case) -> Value {
    let args = &case.input["args"];
    match case.input["fn"].as_str().unwrap_or_default() {
        "onEnvironmentAcquireLease" => acquire_before_cluster(&args["params"]),
        function => outcome(&call(function, args)),
    }
}

fn call(function: &str, args: &Value) -> ProviderResult<Value> {
    match function {
        "buildJobManifest" => Ok(build_job_manifest(&parse::<JobManifestInput>(
            &args["input"],
        )?)),
        "buildSandboxCrManifest" => {
            build_sandbox_cr_manifest(&parse::<SandboxCrManifestInput>(&args["input"])?)
        }
        "buildNetworkPolicyManifests" => {
            Ok(
                build_network_policy_manifests(&parse::<NetworkPolicyInput>(&args["input"])?)
                    .to_json_array(),
            )
        }
        "buildCiliumNetworkPolicyManifest" => Ok(build_cilium_network_policy_manifest(&parse::<
            CiliumNetworkPolicyInput,
        >(
            &args["input"],
        )?)),
        "paperclipLabels" => {
            let labels = paperclip_labels(&parse::<LabelsInput>(&args["input"])?);
            Ok(Value::Object(string_map_object(&labels)))
        }
        "newRunUlidDns" => {
            let digits: Vec<u32> = parse(&args["randomInts"])?;
            let mut digits = digits.into_iter();
            let now_ms = number(&args["nowMs"])?;
            Ok(
                new_run_ulid_dns(now_ms, || digits.next().expect("16 recorded random digits"))
                    .into(),
            )
        }
        "parseScopedNetworkEgressGrant" => {
            Ok(parse_scoped_network_egress_grant(args.get("settings")).to_json())
        }
        "appendNetworkEgressDenyHint" => Ok(append_network_egress_deny_hint(
            string(&args["stderr"])?,
            &parse(&args["grant"])?,
        )
        .into()),
        "globMatch" => Ok(glob_match(string(&args["pattern"])?, string(&args["value"])?).into()),
        "resolveImage" => {
            let allow_list: Vec<String> = parse(&args["config"]["imageAllowList"])?;
            resolve_image(
                args["target"]["imageOverride"].as_str(),
                string(&args["defaults"]["runtimeImage"])?,
                &allow_list,
                args["config"]["imageRegistry"].as_str(),
            )
            .map(Value::from)
        }
        "imagePullPolicyFor" => Ok(image_pull_policy_for(string(&args["image"])?)
            .as_str()
            .into()),
        "resolveImagePullPolicy" => {
            let preloaded = value::truthy(args.get("preloadedImages"));
            Ok(
                resolve_image_pull_policy(string(&args["image"])?, preloaded)
                    .as_str()
                    .into(),
            )
        }
        "buildAdapterEnv" => {
            let defaults = adapter_defaults(&args["defaults"])?;
            let process_env = args["processEnv"].clone();
            let env = build_adapter_env(&defaults, |key| {
                process_env[key].as_str().map(str::to_string)
            });
            Ok(Value::Object(string_map_object(&env)))
        }
        "resolveRunAdapterType" => Ok(resolve_run_adapter_type(
            args.get("runAdapterType"),
            string(&args["configAdapterType"])?,
        )
        .into()),
        "computeBoundedLeaseDeadline" => {
            let deadline = compute_bounded_lease_deadline(
                args.get("requestedExpiresAt"),
                number(&args["nowMs"])?,
            )?;
            Ok(deadline.map_or(Value::Null, |d| d.to_json()))
        }
        "wrapCommandWithEnv" => {
            let command: Vec<String> = parse(&args["command"])?;
            Ok(json!(wrap_command_with_env(
                &command,
                args.get("env"),
                args.get("cwd")
            )))
        }
        "shQuote" => Ok(sh_quote(string(&args["segment"])?).into()),
        other => panic!("not a pure function: {other}"),
    }
}

/// The acquire hook up to its first cluster call, with the `console.warn` lines it printed.
/// These vectors all fail before the cluster; one that got further is reported as such.
fn acquire_before_cluster(params: &Value) -> Value {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as f64;
    let mut warnings = Vec::new();
    let result = prepare_acquire(params, now_ms, &mut |line| warnings.push(line.to_string()));
    let mut recorded = match result {
        Ok(_) => json!({ "returns": "<passed the pre-cluster checks>" }),
        Err(err) => outcome(&Err(err)),
    };
    recorded["consoleWarn"] = json!(warnings);
    recorded
}

fn adapter_defaults(value: &Value) -> ProviderResult<AdapterDefaults> {
    let default_env = match value.get("defaultEnv") {
        Some(Value::Object(env)) => Some(from_json_object(env).map_err(input_error)?),
        _ => None,
    };
    Ok(AdapterDefaults {
        runtime_image: string(&value["runtimeImage"])?.to_string(),
        env_keys: parse(&value["envKeys"])?,
        allow_fqdns: parse(&value["allowFqdns"])?,
        probe_command: parse(&value["probeCommand"])?,
        default_env,
    })
}

fn parse<T: DeserializeOwned>(value: &Value) -> ProviderResult<T> {
    serde_json::from_value(value.clone()).map_err(|e| input_error(e.to_string()))
}

fn string(value: &Value) -> ProviderResult<&str> {
    value
        .as_str()
        .ok_or_else(|| input_error(format!("expected a string, got {value}")))
}

fn number(value: &Value) -> ProviderResult<f64> {
    value
        .as_f64()
        .ok_or_else(|| input_error(format!("expected a number, got {value}")))
}

/// A vector this runner cannot read shows up as a mismatch naming the problem.
fn input_error(message: String) -> ProviderError {
    ProviderError::new(format!("golden runner could not read the input: {message}"))
}
