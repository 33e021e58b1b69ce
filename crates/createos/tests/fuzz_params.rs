//! Property-based fuzzing: config parsing, lease metadata, sync mappings and
//! the params object of every hook, with arbitrary JSON.
//!
//! Properties: no panic; no hang (every hook call is bounded by a timeout); every `Err` carries
//! a catalogued message (`error_catalog::explain`) or a documented pass-through; the canary API
//! key never appears in an error or a result.
//!
//! No network: hook configs point at a closed loopback port (connection refused at once) or
//! fail validation before any I/O. Cases: `PROPTEST_CASES` (default 256 per property, 4,096 under
//! `PAPERCLIP_SOAK=long`).

use std::sync::Arc;
use std::time::Duration;

use createos::{CreateOsProvider, HostApiKey, Pacer, ProviderOptions};
use proptest::prelude::*;
use sandbox_core::fuzz::{self, JsonShape, Properties, SyncFixture, bounded, runner};
use sandbox_core::{NullSink, ProviderError};
use serde_json::{Map, Value, json};

const CANARY: &str = "canary-secret-fuzz-91e4d07a";
/// No service listens here: a request fails with a refused connection, without delay.
const DEAD_URL: &str = "http://127.0.0.1:9";

/// Keys the providers read somewhere, so that random objects hit real code paths.
const KEYS: &[&str] = &[
    "apiUrl",
    "apiKey",
    "shape",
    "snapshot",
    "rootfs",
    "rootfsByAdapter",
    "egressAllowlist",
    "networkEgress",
    "region",
    "timeoutMs",
    "reuseLease",
    "autoPauseAfterSeconds",
    "providerLeaseId",
    "leaseMetadata",
    "metadata",
    "lease",
    "provider",
    "marker",
    "remoteCwd",
    "companyId",
    "environmentId",
    "runId",
    "issueId",
    "executionWorkspaceId",
    "adapterType",
    "command",
    "args",
    "env",
    "cwd",
    "stdin",
    "operations",
    "operationId",
    "files",
    "kind",
    "localPath",
    "remotePath",
    "mode",
    "exclude",
    "followSymlinks",
    "postUploadCommands",
    "workspace",
    "executionWorkspaceSettings",
    "sessionId",
    "workerSessionId",
    "hostRouteId",
    "data",
    "cols",
    "rows",
    "templateId",
    "setupId",
    "length",
    "__proto__",
    "toString",
];

static SHAPE: JsonShape = JsonShape {
    keys: KEYS,
    floats: &[0.5, -0.0, 1e308, 86_400_001.0, 59.9],
    integers: &[60, 86_400_000],
    strings: &[
        "",
        " ",
        "\0",
        "a\nb",
        "../..",
        "/",
        "/paperclip-workspace",
        "createos",
        "file",
        "directory",
        "s-1vcpu-1gb",
        "sb_0123456789abcdef",
    ],
};

static PROPERTIES: Properties = Properties {
    canary: CANARY,
    secret: "key",
    pass_through,
    catalogued: |message| error_catalog::explain(message).is_some(),
};

/// `apiUrl` values that never reach a real host.
fn safe_url() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => Just(json!(DEAD_URL)),
        1 => Just(json!("http://example.com")),
        1 => Just(json!("not a url")),
        1 => Just(json!("")),
        1 => Just(json!(7)),
        1 => Just(Value::Null),
    ]
}

/// A config that is valid apart from some arbitrary fields, or entirely arbitrary JSON when it
/// is not an object (which then never has an `apiUrl` to call).
fn config() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (
            safe_url(),
            proptest::collection::btree_map(SHAPE.key(), SHAPE.any_json(), 0..4)
        )
            .prop_map(|(url, extra)| {
                let mut config = json!({ "apiKey": CANARY, "shape": "s-1vcpu-1gb", "timeoutMs": 2000 });
                for (k, v) in extra {
                    config[k] = v;
                }
                config["apiUrl"] = url;
                config
            }),
        1 => SHAPE.any_json().prop_filter_map("no object (an object needs a safe apiUrl)", |v| {
            (!v.is_object()).then_some(v)
        }),
    ]
}

/// Hook params: the usual fields, a config, and arbitrary values under the hook's keys.
fn params() -> impl Strategy<Value = Value> {
    (
        config(),
        proptest::collection::btree_map(SHAPE.key(), SHAPE.any_json(), 0..6),
        any::<bool>(),
    )
        .prop_map(|(config, extra, with_lease)| {
            let mut params = Map::new();
            params.insert("driverKey".into(), json!("createos"));
            params.insert("companyId".into(), json!("co_fuzz"));
            params.insert("environmentId".into(), json!("env_fuzz"));
            if with_lease {
                let metadata = json!({ "provider": "createos", "apiUrl": DEAD_URL,
                    "companyId": "co_fuzz", "environmentId": "env_fuzz",
                    "remoteCwd": "/paperclip-workspace", "shape": "s-1vcpu-1gb" });
                params.insert("providerLeaseId".into(), json!("sb_fuzz"));
                params.insert("leaseMetadata".into(), metadata.clone());
                params.insert(
                    "lease".into(),
                    json!({ "providerLeaseId": "sb_fuzz", "metadata": metadata }),
                );
            }
            fuzz::params_with(params, extra, config)
        })
}

/// Messages that are not in the catalogue on purpose, each with its reason. `None`: not allowed.
fn pass_through(error: &ProviderError) -> Option<&'static str> {
    let message = error.message.as_str();
    if let Some(reason) = fuzz::node_pass_through(message) {
        return Some(reason);
    }
    if message.starts_with("Cannot convert ") || message.starts_with("Cannot use 'in' operator") {
        return Some("V8 TypeError text of a conversion of the wrong type");
    }
    None
}

#[test]
fn config_parsing_never_panics_and_fails_with_catalogued_messages() {
    runner()
        .run(&SHAPE.any_json(), |raw| {
            match createos::config::parse_config(&raw) {
                Ok(_) => {}
                Err(error) => PROPERTIES.check_error("parse_config", &raw, &error)?,
            }
            let validated = CreateOsProvider::new()
                .validate_config(&json!({ "config": raw }))
                .into_value();
            PROPERTIES.check_result("validate_config", &validated)?;
            if let Some(errors) = validated.get("errors").and_then(Value::as_array) {
                for message in errors {
                    let message = message.as_str().unwrap_or_default();
                    prop_assert!(
                        error_catalog::explain(message).is_some()
                            || pass_through(&ProviderError::new(message)).is_some(),
                        "validate_config: uncatalogued {message:?} for {raw}"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn valid_looking_configs_with_arbitrary_fields() {
    runner()
        .run(&config(), |raw| {
            if let Err(error) = createos::config::parse_config(&raw) {
                PROPERTIES.check_error("parse_config", &raw, &error)?;
            }
            // `normalizedConfig` is the host's own config handed back for the host to persist
            // (the contract, as in the original), so it carries the key by design; the rest of
            // the result must not.
            let mut validated = CreateOsProvider::new()
                .validate_config(&json!({ "config": raw }))
                .into_value();
            if let Some(object) = validated.as_object_mut() {
                object.remove("normalizedConfig");
            }
            PROPERTIES.check_result("validate_config", &validated)?;
            Ok(())
        })
        .unwrap();
}

#[test]
fn every_hook_with_arbitrary_params() {
    let rt = fuzz::runtime();
    let provider = Arc::new(CreateOsProvider::with_options(ProviderOptions {
        pacer: Pacer::new(Duration::ZERO),
        host_api_key: HostApiKey::Fixed(None),
    }));
    runner()
        .run(&params(), |params| {
            let provider = provider.clone();
            let outcomes = rt.block_on(async {
                let p = &*provider;
                let params = &params;
                let mut outcomes = sandbox_core::fuzz_hooks!(
                    p,
                    params,
                    probe,
                    acquire_lease,
                    resume_lease,
                    release_lease,
                    destroy_lease,
                    realize_workspace,
                    execute,
                    sync_in,
                    sync_out,
                    start_interactive_setup,
                    get_interactive_setup,
                    cancel_interactive_setup,
                    capture_template,
                    delete_template,
                );
                let sink: Arc<dyn sandbox_core::HostSink> = Arc::new(NullSink);
                let login = bounded(p.login_pty_open(params, sink.clone())).await;
                outcomes.push(("login_pty_open", login));
                let duplex = bounded(p.duplex_channel_open(params, sink)).await;
                outcomes.push(("duplex_channel_open", duplex));
                for (name, outcome) in [
                    ("login_pty_input", p.login_pty_input(params).await),
                    ("login_pty_stop", p.login_pty_stop(params).await),
                    ("duplex_channel_write", p.duplex_channel_write(params).await),
                    ("duplex_channel_stop", p.duplex_channel_stop(params).await),
                ] {
                    outcomes.push((name, Some(outcome)));
                }
                outcomes.push((
                    "login_pty_close",
                    Some(p.login_pty_close(params).await.map(Some)),
                ));
                outcomes.push((
                    "duplex_channel_close",
                    Some(p.duplex_channel_close(params).await.map(Some)),
                ));
                outcomes
            });
            PROPERTIES.check_outcomes(&params, outcomes)
        })
        .unwrap();
}

/// One sync mapping: well-formed keys with arbitrary (or nearly right) values. Host paths stay
/// inside `root` (or are relative, which is refused) so that nothing outside it is ever read
/// or written.
fn mapping(root: String) -> impl Strategy<Value = Value> {
    let remote = prop_oneof![
        Just(json!("/paperclip-workspace/x")),
        Just(json!("/paperclip-workspace/../etc")),
        Just(json!("relative")),
        Just(json!("/a\nb")),
        Just(json!("/a\0b")),
        SHAPE.any_json(),
    ];
    (
        SHAPE.mapping_kind(),
        SHAPE.host_path_or_json(&root),
        remote,
        prop_oneof![
            Just(Value::Null),
            Just(json!(0o644)),
            Just(json!("0755")),
            SHAPE.any_json()
        ],
        prop_oneof![Just(Value::Null), SHAPE.any_json()],
        any::<bool>(),
    )
        .prop_map(|(kind, host, remote, mode, exclude, follow)| {
            json!({ "kind": kind, "sourcePath": host.clone(), "targetPath": remote.clone(),
                "localPath": host, "remotePath": remote, "mode": mode, "exclude": exclude,
                "followSymlinks": follow })
        })
        .prop_flat_map(|m| {
            // For sync out the host path is the target: swap them half of the time.
            (Just(m), any::<bool>()).prop_map(|(mut m, swap)| {
                if swap {
                    let source = m["sourcePath"].take();
                    m["sourcePath"] = m["targetPath"].take();
                    m["targetPath"] = source;
                }
                m
            })
        })
}

fn operations(root: String) -> impl Strategy<Value = Value> {
    let command = (SHAPE.any_json(), SHAPE.any_json(), SHAPE.any_json()).prop_map(
        |(command, cwd, timeout)| json!({ "command": command, "cwd": cwd, "timeoutMs": timeout }),
    );
    proptest::collection::vec(
        (
            SHAPE.any_json(),
            proptest::collection::vec(mapping(root), 0..3),
            prop_oneof![Just(Value::Null), proptest::collection::vec(command, 0..2).prop_map(Value::Array)],
        )
            .prop_map(|(id, files, commands)| {
                json!({ "operationId": id, "files": files, "postUploadCommands": commands })
            }),
        0..3,
    )
    .prop_map(Value::Array)
}

#[test]
fn sync_mappings_with_arbitrary_fields() {
    let fixture = SyncFixture::new("createos-fuzz-sync");
    let rt = fuzz::runtime();
    let provider = CreateOsProvider::with_options(ProviderOptions {
        pacer: Pacer::new(Duration::ZERO),
        host_api_key: HostApiKey::Fixed(None),
    });
    let metadata = json!({ "provider": "createos", "apiUrl": DEAD_URL, "companyId": "co_fuzz",
        "environmentId": "env_fuzz", "remoteCwd": "/paperclip-workspace", "shape": "s-1vcpu-1gb" });
    let config =
        json!({ "apiUrl": DEAD_URL, "apiKey": CANARY, "shape": "s-1vcpu-1gb", "timeoutMs": 2000 });
    runner()
        .run(
            &operations(fixture.root().display().to_string()),
            |operations| {
                let params = json!({ "driverKey": "createos", "companyId": "co_fuzz",
                "environmentId": "env_fuzz", "config": config,
                "lease": { "providerLeaseId": "sb_fuzz", "metadata": metadata },
                "operations": operations });
                let outcomes = rt.block_on(async {
                    vec![
                        (
                            "sync_in",
                            bounded(provider.sync_in(&params, &NullSink)).await,
                        ),
                        (
                            "sync_out",
                            bounded(provider.sync_out(&params, &NullSink)).await,
                        ),
                    ]
                });
                PROPERTIES.check_outcomes(&params, outcomes)
            },
        )
        .unwrap();
    // Nothing was written next to the fixtures (the API was never reachable).
    assert_eq!(fixture.top_names(), ["dir", "file.txt"]);
}
