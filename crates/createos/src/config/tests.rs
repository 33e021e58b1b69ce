//! Unit tests: one per contract message (exact text), plus the JS and WHATWG quirks that decide
//! which message or which normalised value the user sees.

use serde_json::{Value, json};

use super::messages::*;
use super::*;

fn base() -> Value {
    json!({ "apiUrl": "https://api.sb.createos.sh", "shape": "s-1vcpu-1gb" })
}

/// The base config with `key` set to `value`.
fn with(key: &str, value: Value) -> Value {
    let mut raw = base();
    raw[key] = value;
    raw
}

fn error_of(raw: &Value) -> String {
    parse_config(raw)
        .expect_err("config should be rejected")
        .message
}

fn parsed(raw: &Value) -> CreateOsConfig {
    parse_config(raw).unwrap_or_else(|e| panic!("config should be accepted: {}", e.message))
}

/// The `normalizedConfig` that validation answers `raw` with.
fn normalized(raw: &Value) -> Value {
    let result = validate_config(raw).into_value();
    assert_eq!(result["ok"], true, "config should be accepted: {result}");
    result["normalizedConfig"].clone()
}

fn api_url_of(url: &str) -> Result<String, String> {
    parse_config(&with("apiUrl", json!(url)))
        .map(|c| c.api_url)
        .map_err(|e| e.message)
}

// --- `${key} must be a non-empty string.` ---------------------------------------------------

#[test]
fn every_text_field_reports_its_own_name() {
    for key in ["apiUrl", "shape", "apiKey", "snapshot", "rootfs", "region"] {
        let expected = format!("{key} must be a non-empty string.");
        for bad in [
            json!(""),
            json!(" \u{3000}\u{feff} "),
            json!(5),
            json!(true),
            json!(["x"]),
            json!({}),
            json!("a\0b"),
        ] {
            assert_eq!(error_of(&with(key, bad.clone())), expected, "{key} = {bad}");
        }
    }
}

#[test]
fn text_fields_allow_inner_line_breaks_and_are_trimmed() {
    let config = parsed(&with("region", json!(" eu\nwest \u{2028}")));
    assert_eq!(config.region.as_deref(), Some("eu\nwest"));
}

// --- apiUrl -------------------------------------------------------------------------------------

#[test]
fn missing_or_null_api_url_is_required() {
    assert_eq!(
        error_of(&json!({ "shape": "s" })),
        "CreateOS requires an API URL."
    );
    assert_eq!(
        error_of(&json!({ "apiUrl": null, "shape": "s" })),
        API_URL_REQUIRED
    );
}

#[test]
fn unparseable_api_url_is_invalid() {
    for url in [
        "not a url",
        "api.sb.createos.sh",
        "https://",
        "https://a b.com",
        "https://[::1",
        "https://1.2.3.256",
    ] {
        assert_eq!(
            api_url_of(url),
            Err("CreateOS API URL is invalid.".into()),
            "{url}"
        );
    }
}

#[test]
fn non_origin_api_url_is_refused() {
    let expected = "CreateOS API URL must be an HTTPS origin (optionally ending in /v1); HTTP is allowed on loopback only.";
    for url in [
        "http://api.sb.createos.sh",
        "http://127.0.0.2",
        "http://localhost.localdomain",
        "ftp://api.sb.createos.sh",
        "wss://api.sb.createos.sh",
        "https://user@api.sb.createos.sh",
        "https://:secret@api.sb.createos.sh",
        "https://api.sb.createos.sh/v1?region=eu",
        "https://api.sb.createos.sh#top",
        "https://api.sb.createos.sh/v2",
        "https://api.sb.createos.sh/V1",
        "https://api.sb.createos.sh//v1",
        "https://api.sb.createos.sh/%76%31",
        "https://api.sb.createos.sh/v1/sandboxes",
    ] {
        assert_eq!(api_url_of(url), Err(expected.into()), "{url}");
        assert_eq!(expected, API_URL_NOT_ORIGIN);
    }
}

#[test]
fn api_url_is_reduced_to_its_whatwg_origin() {
    let cases = [
        (
            "  HTTPS://API.SB.CREATEOS.SH:443/v1/  ",
            "https://api.sb.createos.sh",
        ),
        ("https://api.sb.createos.sh/?", "https://api.sb.createos.sh"),
        (
            "https://api.sb.createos.sh/v1#",
            "https://api.sb.createos.sh",
        ),
        ("https://:@api.sb.createos.sh", "https://api.sb.createos.sh"),
        (
            "https://api.sb.createos.sh/v1/../",
            "https://api.sb.createos.sh",
        ),
        ("https:api.sb.createos.sh", "https://api.sb.createos.sh"),
        (
            "https:\\\\api.sb.createos.sh\\v1\\",
            "https://api.sb.createos.sh",
        ),
        (
            "https://sandbox.example.com:8443/v1",
            "https://sandbox.example.com:8443",
        ),
        (
            "https://münchen.example/v1",
            "https://xn--mnchen-3ya.example",
        ),
        ("http://127.1:8080", "http://127.0.0.1:8080"),
        ("http://0x7f.0.0.1", "http://127.0.0.1"),
        ("http://2130706433/", "http://127.0.0.1"),
        ("http://[0:0:0:0:0:0:0:1]:9000", "http://[::1]:9000"),
        ("http://LOCALHOST:80/v1", "http://localhost"),
    ];
    for (input, origin) in cases {
        assert_eq!(api_url_of(input), Ok(origin.into()), "{input}");
    }
}

// --- shape --------------------------------------------------------------------------------------

#[test]
fn missing_shape_asks_for_the_catalog() {
    let raw = json!({ "apiUrl": "https://api.sb.createos.sh" });
    assert_eq!(
        error_of(&raw),
        "CreateOS requires a shape from its shape catalog."
    );
    assert_eq!(error_of(&with("shape", Value::Null)), SHAPE_REQUIRED);
}

// --- numbers and flags --------------------------------------------------------------------------

#[test]
fn timeout_must_be_an_integer_in_range() {
    let expected = "timeoutMs must be an integer between 1 and 86400000.";
    for bad in [
        json!(0),
        json!(-1),
        json!(86_400_001),
        json!(1.5),
        json!("60000"),
        json!(true),
        json!([]),
        json!(1e300),
    ] {
        assert_eq!(error_of(&with("timeoutMs", bad.clone())), expected, "{bad}");
    }
    assert_eq!(expected, TIMEOUT_MS_RANGE);
}

#[test]
fn reuse_lease_must_be_a_boolean() {
    for bad in [json!("true"), json!(1), json!(0), json!({}), json!([])] {
        assert_eq!(
            error_of(&with("reuseLease", bad)),
            "reuseLease must be a boolean."
        );
    }
    assert!(!parsed(&with("reuseLease", Value::Null)).reuse_lease);
    assert!(parsed(&with("reuseLease", json!(true))).reuse_lease);
}

#[test]
fn auto_pause_must_be_an_integer_in_range() {
    let expected = "autoPauseAfterSeconds must be an integer between 60 and 86400.";
    for bad in [
        json!(59),
        json!(86_401),
        json!(120.25),
        json!("600"),
        json!(false),
        json!(-60),
    ] {
        assert_eq!(
            error_of(&with("autoPauseAfterSeconds", bad.clone())),
            expected,
            "{bad}"
        );
    }
}

#[test]
fn integral_floats_are_emitted_as_integers() {
    let raw: Value =
        serde_json::from_str(r#"{"apiUrl":"https://a.example","shape":"s","timeoutMs":1e3,"autoPauseAfterSeconds":120.0}"#)
            .unwrap();
    let normalized = normalized(&raw);
    assert_eq!(normalized["timeoutMs"].to_string(), "1000");
    assert_eq!(normalized["autoPauseAfterSeconds"].to_string(), "120");
}

// --- rootfsByAdapter ----------------------------------------------------------------------------

#[test]
fn rootfs_by_adapter_must_be_an_object() {
    let expected = "rootfsByAdapter must be an object of adapter names to root filesystems.";
    for bad in [
        json!([]),
        json!(["devbox:1"]),
        json!("devbox:1"),
        json!(1),
        json!(true),
    ] {
        assert_eq!(
            error_of(&with("rootfsByAdapter", bad.clone())),
            expected,
            "{bad}"
        );
    }
}

#[test]
fn rootfs_by_adapter_entries_must_be_clean_strings() {
    let expected = "rootfsByAdapter must contain non-empty adapter and root filesystem strings.";
    for bad in [
        json!({ "": "devbox:1" }),
        json!({ " \u{a0}": "devbox:1" }),
        json!({ "claude\nlocal": "devbox:1" }),
        json!({ "claude_local": "" }),
        json!({ "claude_local": " " }),
        json!({ "claude_local": 1 }),
        json!({ "claude_local": null }),
        json!({ "claude_local": "devbox:1\n" }),
        json!({ "claude_local": "dev\0box" }),
    ] {
        assert_eq!(
            error_of(&with("rootfsByAdapter", bad.clone())),
            expected,
            "{bad}"
        );
    }
}

#[test]
fn rootfs_by_adapter_follows_js_object_assignment() {
    let raw = with(
        "rootfsByAdapter",
        json!({ "b": " x ", "claude_local\r": "c:1", " 2 ": "two", "__proto__": "p", " b": "y", "1": "one" }),
    );
    let normalized = normalized(&raw);
    // Array-index keys first (ascending), then insertion order; a re-assigned key keeps its
    // first position; `__proto__` is ignored; trailing CR is trimmed from keys.
    assert_eq!(
        normalized["rootfsByAdapter"].to_string(),
        r#"{"1":"one","2":"two","b":"y","claude_local":"c:1"}"#
    );
}

// --- egressAllowlist ----------------------------------------------------------------------------

#[test]
fn egress_allowlist_must_hold_clean_strings() {
    let expected = "egressAllowlist must be an array of non-empty host or CIDR strings.";
    for bad in [
        json!("api.openai.com"),
        json!({}),
        json!([""]),
        json!([" "]),
        json!([443]),
        json!(["a\0"]),
        json!(["a\r\n"]),
        json!([null]),
    ] {
        assert_eq!(
            error_of(&with("egressAllowlist", bad.clone())),
            expected,
            "{bad}"
        );
    }
}

#[test]
fn egress_allowlist_is_trimmed_and_deduplicated() {
    let config = parsed(&with("egressAllowlist", json!(["b", " a ", "b", "a", "A"])));
    assert_eq!(config.egress_allowlist, ["b", "a", "A"]);
}

// --- order and JS input quirks ------------------------------------------------------------------

#[test]
fn late_text_fields_fail_after_every_other_check_in_order() {
    let raw = json!({ "apiUrl": "https://a.example", "shape": "s", "apiKey": 1, "snapshot": 1, "rootfs": 1, "region": 1 });
    assert_eq!(error_of(&raw), "apiKey must be a non-empty string.");
    let raw = json!({ "apiUrl": "https://a.example", "shape": "s", "rootfs": 1, "region": 1 });
    assert_eq!(error_of(&raw), "rootfs must be a non-empty string.");
    let raw =
        json!({ "apiUrl": "https://a.example", "shape": "s", "region": 1, "egressAllowlist": "x" });
    assert_eq!(error_of(&raw), EGRESS_ALLOWLIST_INVALID);
}

#[test]
fn null_or_absent_config_fails_like_the_first_js_property_read() {
    let null = parse_config(&Value::Null).unwrap_err();
    assert_eq!(
        null.message,
        "Cannot read properties of null (reading 'apiUrl')"
    );
    assert_eq!(null.class.as_str(), "TypeError");
    let absent = parse_config_arg(None).unwrap_err();
    assert_eq!(
        absent.message,
        "Cannot read properties of undefined (reading 'apiUrl')"
    );
    assert_eq!(
        validate_config_params(&json!({ "driverKey": "createos" })).into_value(),
        json!({ "ok": false, "errors": ["Cannot read properties of undefined (reading 'apiUrl')"] })
    );
    assert_eq!(
        validate_config_params(&Value::Null).into_value(),
        json!({ "ok": false, "errors": ["Cannot read properties of null (reading 'config')"] })
    );
}

#[test]
fn non_object_configs_have_no_properties() {
    for raw in [
        json!([]),
        json!("https://a.example"),
        json!(0),
        json!(false),
    ] {
        assert_eq!(error_of(&raw), API_URL_REQUIRED, "{raw}");
    }
}

#[test]
fn validation_result_keeps_the_original_key_order() {
    let ok = validate_config(&base()).to_string();
    assert_eq!(
        ok,
        r#"{"ok":true,"normalizedConfig":{"apiUrl":"https://api.sb.createos.sh","apiKey":null,"shape":"s-1vcpu-1gb","snapshot":null,"rootfs":null,"rootfsByAdapter":{},"egressAllowlist":[],"region":null,"timeoutMs":300000,"reuseLease":false,"autoPauseAfterSeconds":600}}"#
    );
    assert_eq!(
        validate_config(&json!({})).to_string(),
        r#"{"ok":false,"errors":["CreateOS requires an API URL."]}"#
    );
}

// --- resolveApiKey ------------------------------------------------------------------------------

#[test]
fn custom_endpoint_without_its_own_key_is_refused() {
    let expected = "Custom CreateOS API endpoints require an explicit environment API key; the host fallback is only available for https://api.sb.createos.sh.";
    let custom = parsed(&with("apiUrl", json!("https://sandbox.example.com")));
    assert_eq!(
        resolve_api_key(&custom, Some("env-key"))
            .unwrap_err()
            .message,
        expected
    );
    assert_eq!(
        resolve_api_key(&custom, None).unwrap_err().message,
        CUSTOM_ENDPOINT_NEEDS_KEY
    );
    let with_key =
        parsed(&json!({ "apiUrl": "https://sandbox.example.com", "shape": "s", "apiKey": " k " }));
    assert_eq!(resolve_api_key(&with_key, None).unwrap(), "k");
}

#[test]
fn official_endpoint_needs_a_clean_key_from_config_or_env() {
    let expected = "CreateOS requires an API key in the environment config or CREATEOS_API_KEY.";
    let official = parsed(&base());
    for env in [
        None,
        Some(""),
        Some(" \u{feff} "),
        Some("a\nb"),
        Some("a\rb"),
        Some("a\0b"),
    ] {
        assert_eq!(
            resolve_api_key(&official, env).unwrap_err().message,
            expected,
            "{env:?}"
        );
    }
    assert_eq!(
        resolve_api_key(&official, Some("  env-key\u{2028} ")).unwrap(),
        "env-key"
    );
    let configured = parsed(&with("apiKey", json!("cfg\rkey")));
    assert_eq!(
        resolve_api_key(&configured, Some("env"))
            .unwrap_err()
            .message,
        API_KEY_REQUIRED
    );
    let configured = parsed(&with("apiKey", json!("cfg-key")));
    assert_eq!(
        resolve_api_key(&configured, Some("env")).unwrap(),
        "cfg-key"
    );
}

#[test]
fn env_variant_never_overrides_a_configured_key() {
    // Whatever the process environment holds, a configured key is used as is.
    let configured = parsed(&with("apiKey", json!("cfg-key")));
    assert_eq!(resolve_api_key_from_env(&configured).unwrap(), "cfg-key");
    assert_eq!(API_KEY_ENV, "CREATEOS_API_KEY");
}

// --- resolveEgressAllowlist ---------------------------------------------------------------------

#[test]
fn network_egress_must_be_an_object() {
    let config = parsed(&base());
    for bad in [
        json!([]),
        json!(["github.com"]),
        json!("github.com"),
        json!(1),
        json!(true),
    ] {
        let settings = json!({ "networkEgress": bad });
        let err = resolve_egress_allowlist(&config, Some(&settings)).unwrap_err();
        assert_eq!(err.message, "networkEgress must be an object.");
    }
}

#[test]
fn network_egress_lists_must_hold_clean_strings() {
    let config = parsed(&base());
    for list in ["allowFqdns", "allowCidrs"] {
        for bad in [
            json!("github.com"),
            json!({}),
            json!([""]),
            json!([" "]),
            json!([1]),
            json!(["a\n"]),
            json!(["a\0"]),
        ] {
            let settings = json!({ "networkEgress": { list: bad } });
            let err = resolve_egress_allowlist(&config, Some(&settings)).unwrap_err();
            assert_eq!(
                err.message, "networkEgress allowlists must contain non-empty strings.",
                "{list} {bad}"
            );
        }
    }
}

#[test]
fn egress_merges_dedupes_and_drops_a_wildcard_next_to_real_entries() {
    let config = parsed(&with("egressAllowlist", json!(["*", "github.com"])));
    let settings = json!({ "networkEgress": { "allowFqdns": [" api.openai.com ", "github.com"], "allowCidrs": ["10.0.0.0/8"] } });
    assert_eq!(
        resolve_egress_allowlist(&config, Some(&settings)).unwrap(),
        ["github.com", "api.openai.com", "10.0.0.0/8"]
    );
    let wildcard = parsed(&with("egressAllowlist", json!(["*"])));
    for settings in [
        None,
        Some(Value::Null),
        Some(json!("x")),
        Some(json!({ "networkEgress": null })),
    ] {
        assert_eq!(
            resolve_egress_allowlist(&wildcard, settings.as_ref()).unwrap(),
            ["*"]
        );
    }
}

// --- resolveRootfs ------------------------------------------------------------------------------

#[test]
fn rootfs_prefers_the_adapter_entry() {
    let config = parsed(&json!({
        "apiUrl": "https://a.example", "shape": "s", "rootfs": "devbox:1",
        "rootfsByAdapter": { "claude_local": "claude:2" }
    }));
    assert_eq!(
        resolve_rootfs(&config, Some("claude_local")).as_deref(),
        Some("claude:2")
    );
    assert_eq!(
        resolve_rootfs(&config, Some("codex_local")).as_deref(),
        Some("devbox:1")
    );
    assert_eq!(
        resolve_rootfs(&config, Some("")).as_deref(),
        Some("devbox:1")
    );
    assert_eq!(
        resolve_rootfs(&config, Some("constructor")).as_deref(),
        Some("devbox:1")
    );
    assert_eq!(resolve_rootfs(&config, None).as_deref(), Some("devbox:1"));
    assert_eq!(resolve_rootfs(&parsed(&base()), Some("claude_local")), None);
}

// --- the catalogue itself -----------------------------------------------------------------------

/// Every constant here must be a line of the shared contract, byte for byte.
#[test]
fn messages_are_contract_lines() {
    let path = sandbox_core::golden::contract_file("createos-errors.txt");
    let contract =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lines: Vec<&str> = contract.lines().collect();
    for message in [
        API_URL_REQUIRED,
        API_URL_INVALID,
        API_URL_NOT_ORIGIN,
        SHAPE_REQUIRED,
        TIMEOUT_MS_RANGE,
        REUSE_LEASE_NOT_BOOLEAN,
        AUTO_PAUSE_RANGE,
        ROOTFS_BY_ADAPTER_NOT_OBJECT,
        ROOTFS_BY_ADAPTER_BAD_ENTRY,
        EGRESS_ALLOWLIST_INVALID,
        NETWORK_EGRESS_BAD_LIST,
        NETWORK_EGRESS_NOT_OBJECT,
        CUSTOM_ENDPOINT_NEEDS_KEY,
        API_KEY_REQUIRED,
        INVALID_CONFIGURATION,
    ] {
        assert!(lines.contains(&message), "not in the contract: {message}");
    }
    assert!(lines.contains(&not_a_non_empty_string("${key}").as_str()));
}
