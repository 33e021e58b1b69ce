//! onEnvironmentExecute: streaming exec against the emulator.

mod common;

use common::*;
use createos::exec::end::wrap;
use serde_json::{Value, json};

fn id_of(lease: &Value) -> String {
    lease["providerLeaseId"]
        .as_str()
        .expect("a lease id")
        .to_owned()
}

fn text(value: &Value) -> String {
    serde_json::to_string(value).unwrap()
}

/// The FIFO a wrapped script names on its first line (`f='/tmp/paperclip-exec-<uuid>'; …`),
/// after the staged stdin's line if there is one.
fn control_of(script: &str) -> String {
    let line = script
        .lines()
        .find(|line| line.starts_with("f='/tmp/paperclip-exec-"))
        .unwrap_or_else(|| panic!("not a wrapped script: {script}"));
    let control = &line[3..line.find("';").unwrap()];
    assert_eq!(
        control.len(),
        "/tmp/paperclip-exec-".len() + 36,
        "{control}"
    );
    control.to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_commands_with_quoted_cwd_env_and_args_and_staged_stdin() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let id = id_of(&lease);
    let mk = h
        .provider
        .execute(
            &h.exec_params(
                &lease,
                "mkdir",
                &["-p", "/paperclip-workspace/it's here"],
                json!({}),
            ),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(mk["exitCode"], json!(0));
    h.clear_log();

    let script = r#"read -r first; printf '%s|%s|%s|%s\n' "$first" "$GREETING" "$1" "$(pwd)"; cat; echo done >&2; exit 3"#;
    let params = h.exec_params(
        &lease,
        "bash",
        &["-c", script, "arg0", "x'y z"],
        json!({
            "cwd": "/paperclip-workspace/it's here",
            "env": { "GREETING": "hello 'world'", "EMPTY": "" },
            "stdin": "line one\nline two\n",
        }),
    );
    let result = h.provider.execute(&params, &*h.sink).await.unwrap();
    assert_eq!(
        text(&result),
        text(&json!({
            "exitCode": 3,
            "signal": null,
            "timedOut": false,
            "stdout": "line one|hello 'world'|x'y z|/paperclip-workspace/it's here\nline two\n",
            "stderr": "done\n",
            "metadata": { "outputTruncated": false },
        }))
    );
    // Stdin is staged as a file (the exec request has no stdin field), which the script makes
    // its stdin and removes before the command runs.
    let calls = h.calls();
    assert_eq!(calls.len(), 2, "{}", show(&calls));
    let staged = calls[0]
        .path
        .strip_prefix(&format!(
            "/sandboxes/{id}/files?path=%2Ftmp%2Fpaperclip-stdin-"
        ))
        .unwrap_or_else(|| panic!("{}", show(&calls)));
    assert!(staged.len() == 36, "{staged}");
    assert_eq!(calls[0].method, "PUT");
    assert!(calls[1].is("POST", &format!("/sandboxes/{id}/exec?stream=true")));
    let path = format!("/tmp/paperclip-stdin-{staged}");
    // The original's script, in the wrapper that lets a timed-out command be ended
    // (`exec_timeout_ends.rs`), after the staged stdin's line.
    let original = [
        r#"cd -- '/paperclip-workspace/it'"'"'s here' || exit"#,
        &format!(
            r#"exec env GREETING='hello '"'"'world'"'"'' EMPTY='' 'bash' '-c' '{}' 'arg0' 'x'"'"'y z'"#,
            script.replace('\'', r#"'"'"'"#)
        ),
    ]
    .join("\n");
    let sent = calls[1].body.as_ref().unwrap()["args"][1].as_str().unwrap();
    let expected_script = format!(
        "exec < '{path}' && rm -f -- '{path}' || exit\n{}",
        wrap(&original, &control_of(sent)).unwrap()
    );
    assert_eq!(
        text(calls[1].body.as_ref().unwrap()),
        text(&json!({ "cmd": "/bin/bash", "args": ["-lc", expected_script], "stream": true }))
    );
    let root = h.emu.sandbox_root(&id).expect("the sandbox's root");
    assert!(
        !root.join(path.trim_start_matches('/')).exists(),
        "the staged stdin is removed"
    );
    // Every chunk went to the host as it arrived.
    assert!(
        h.sink
            .stdout()
            .ends_with("line one|hello 'world'|x'y z|/paperclip-workspace/it's here\nline two\n")
    );
    assert_eq!(h.sink.stderr(), "done\n");

    // Without env, cwd or stdin: two spaces after `env`, and no upload.
    h.clear_log();
    let result = h
        .provider
        .execute(
            &h.exec_params(&lease, "echo", &["hello"], json!({})),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(result["stdout"], json!("hello\n"));
    assert_eq!(h.calls().len(), 1);
    let sent = h.calls()[0].body.clone().unwrap();
    let script = wrap(
        "exec env  'echo' 'hello'",
        &control_of(sent["args"][1].as_str().unwrap()),
    );
    assert_eq!(
        text(&sent),
        text(&json!({ "cmd": "/bin/bash", "args": ["-lc", script.unwrap()], "stream": true }))
    );
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejects_invalid_commands_before_sending_anything() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    h.clear_log();
    let cases = [
        (
            h.exec_params(&lease, "", &[], json!({})),
            "A sandbox command is required.",
        ),
        (
            h.exec_params(&lease, "env", &[], json!({ "env": { "1BAD": "x" } })),
            "Invalid sandbox environment variable.",
        ),
        (
            h.exec_params(&lease, "env", &[], json!({ "env": { "OK": 1 } })),
            "Invalid sandbox environment variable.",
        ),
        (
            h.exec_params(&lease, "echo", &["a\0b"], json!({})),
            "Sandbox command values cannot contain NUL.",
        ),
        (
            h.exec_params(&lease, "echo", &[], json!({ "cwd": "/tmp\0" })),
            "Sandbox command values cannot contain NUL.",
        ),
        (
            h.exec_params(&lease, "echo", &[], json!({ "env": { "A": "\0" } })),
            "Sandbox command values cannot contain NUL.",
        ),
        (
            h.exec_params(&lease, "echo", &[], json!({ "timeoutMs": 0 })),
            "Invalid CreateOS command timeout.",
        ),
        (
            h.exec_params(&lease, "echo", &[], json!({ "timeoutMs": 1.5 })),
            "Invalid CreateOS command timeout.",
        ),
        (
            h.exec_params(&lease, "echo", &[], json!({ "timeoutMs": "500" })),
            "Invalid CreateOS command timeout.",
        ),
        (
            h.exec_params(&lease, "echo", &[], json!({ "timeoutMs": 86_400_001 })),
            "Invalid CreateOS command timeout.",
        ),
    ];
    for (params, expected) in cases {
        assert_eq!(
            message(h.provider.execute(&params, &*h.sink).await),
            expected,
            "{params}"
        );
    }
    // A lease ID of the wrong shape with matching metadata.
    let mut bad = lease.clone();
    bad["providerLeaseId"] = json!("../etc");
    assert_eq!(
        message(
            h.provider
                .execute(&h.exec_params(&bad, "echo", &[], json!({})), &*h.sink)
                .await
        ),
        "CreateOS returned an invalid resource ID."
    );
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_command_returns_its_partial_output_without_a_signal_key() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let params = h.exec_params(
        &lease,
        "bash",
        &["-c", "echo partial; echo oops >&2; exec sleep 60"],
        json!({ "timeoutMs": 1500 }),
    );
    let result = h.provider.execute(&params, &*h.sink).await.unwrap();
    assert_eq!(
        text(&result),
        r#"{"exitCode":null,"timedOut":true,"stdout":"partial\n","stderr":"oops\n","metadata":{"outputTruncated":false}}"#
    );
    // The config's timeoutMs applies without a per-command one.
    let params = h.exec_params_with(
        json!({ "timeoutMs": 1500 }),
        &lease,
        "sleep",
        &["60"],
        json!({}),
    );
    let result = h.provider.execute(&params, &*h.sink).await.unwrap();
    assert_eq!(result["timedOut"], json!(true));
    assert!(result.get("signal").is_none());
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborts_an_active_streaming_command_before_releasing_its_lease() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let id = id_of(&lease);
    h.clear_log();
    let params = h.exec_params(
        &lease,
        "bash",
        &["-c", "echo started; exec sleep 60"],
        json!({}),
    );
    let execute = h.provider.execute(&params, &*h.sink);
    let release = async {
        // Output reaches the host while the command still runs.
        h.sink.wait_for_stdout("started").await;
        assert_eq!(h.provider.state().active_calls(), 1);
        h.provider
            .release_lease(&h.lease_params(json!({}), &lease), &*h.sink)
            .await
    };
    let (result, released) = tokio::join!(execute, release);
    assert_eq!(message(result), "CreateOS command was cancelled.");
    assert_eq!(released, Ok(None));
    assert_route(
        &h.calls(),
        &[
            ("POST", &format!("/sandboxes/{id}/exec?stream=true")),
            ("DELETE", &format!("/sandboxes/{id}")),
        ],
    );
    assert_eq!(h.provider.state().active_calls(), 0);
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execute_after_release_is_not_refused_locally() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    h.destroy(&lease).await;
    h.clear_log();
    let result = h
        .provider
        .execute(&h.exec_params(&lease, "true", &[], json!({})), &*h.sink)
        .await;
    assert_eq!(
        message(result),
        "CreateOS request failed (HTTP 404) during workspace command."
    );
    assert_eq!(h.calls().len(), 1);
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeps_a_four_mebi_character_tail_and_streams_everything() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    const LIMIT: usize = 4_194_304;
    let script = format!(
        "printf START; head -c {LIMIT} /dev/zero | tr '\\0' a; printf 'é\\360\\237\\230\\200END'"
    );
    let result = h
        .provider
        .execute(
            &h.exec_params(&lease, "bash", &["-c", &script], json!({})),
            &*h.sink,
        )
        .await
        .unwrap();
    let stdout = result["stdout"].as_str().unwrap();
    assert_eq!(stdout.encode_utf16().count(), LIMIT);
    assert!(stdout.ends_with("aé\u{1F600}END"));
    assert!(stdout.starts_with("aaaa"));
    assert_eq!(result["metadata"], json!({ "outputTruncated": true }));
    assert_eq!(result["exitCode"], json!(0));
    // The host got every character.
    let streamed = h.sink.stdout();
    assert_eq!(
        streamed.len(),
        "START".len() + LIMIT + "é\u{1F600}END".len()
    );
    assert!(streamed.starts_with("STARTaaa"));
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maps_broken_streams_to_the_original_errors() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({ "kind": "errorFrame", "afterFrames": 1, "error": "boom" }),
            "CreateOS command stream reported an error.",
        ),
        (
            json!({ "kind": "unknownFrame", "afterFrames": 1 }),
            "CreateOS returned an invalid command stream event.",
        ),
        (
            json!({ "kind": "oversizedFrame", "afterFrames": 1 }),
            "CreateOS process frame is too large.",
        ),
        (
            json!({ "kind": "frame", "afterFrames": 1, "line": "{not json", "end": true }),
            "CreateOS returned an invalid process frame.",
        ),
        (
            json!({ "kind": "frame", "afterFrames": 1, "line": "[1,2]", "end": true }),
            "CreateOS returned an invalid process frame.",
        ),
        (
            json!({ "kind": "cutStream", "afterFrames": 1 }),
            "CreateOS command stream ended without an exit status.",
        ),
        // Cut after the headers: what Node's fetch rejects the body read with.
        (
            json!({ "kind": "cutStream", "afterFrames": 1, "abort": true }),
            "terminated",
        ),
        // Fails before the headers.
        (json!({ "kind": "drop" }), "CreateOS connection failed."),
        (json!({ "kind": "redirect" }), "CreateOS connection failed."),
        (
            json!({ "kind": "status", "status": 502 }),
            "CreateOS request failed (HTTP 502) during workspace command.",
        ),
        (
            json!({ "kind": "status", "status": 204 }),
            "CreateOS returned an empty process stream.",
        ),
    ];
    for (action, expected) in cases {
        h.emu.clear_faults();
        h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/exec", "query": "stream=true", "action": action }));
        let params = h.exec_params(
            &lease,
            "bash",
            &["-c", "echo one; echo two; echo three"],
            json!({}),
        );
        let result = h.provider.execute(&params, &*h.sink).await;
        let err = result.as_ref().err().cloned();
        assert_eq!(message(result), expected, "fault {action}");
        if expected == "terminated" {
            assert_eq!(err.unwrap().class.as_str(), "TypeError");
        }
    }
    h.emu.clear_faults();
    // Heartbeats and frames beyond the exit are ignored.
    h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/exec", "query": "stream=true",
        "action": { "kind": "frame", "afterFrames": 0, "line": "{\"hb\":true,\"stdout\":\"ignored\"}" } }));
    let result = h
        .provider
        .execute(&h.exec_params(&lease, "echo", &["ok"], json!({})), &*h.sink)
        .await
        .unwrap();
    assert_eq!(result["stdout"], json!("ok\n"));
    h.emu.clear_faults();
    h.destroy(&lease).await;
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_concurrent_commands_on_one_lease() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    let a = h.exec_params(
        &lease,
        "bash",
        &["-c", "echo a; sleep 0.2; echo a2"],
        json!({}),
    );
    let b = h.exec_params(
        &lease,
        "bash",
        &["-c", "echo b; sleep 0.2; echo b2"],
        json!({}),
    );
    let (ra, rb) = tokio::join!(
        h.provider.execute(&a, &*h.sink),
        h.provider.execute(&b, &*h.sink)
    );
    assert_eq!(ra.unwrap()["stdout"], json!("a\na2\n"));
    assert_eq!(rb.unwrap()["stdout"], json!("b\nb2\n"));
    h.destroy(&lease).await;
    h.finish().await;
}
