//! Login PTY and duplex channel hooks against the emulator's real PTY and pipe processes.

#[path = "../common/mod.rs"]
mod common;
mod follow;
mod sink;

use std::sync::Arc;

use base64_helper::b64;
use common::*;
use createos::process::messages as pm;
use serde_json::{Value, json};
use sink::{Event, SessionSink};

mod base64_helper {
    pub fn b64(bytes: &[u8]) -> String {
        js_compat::base64::encode(bytes)
    }
}

pub const HOME: &str = "/tmp/paperclip-adapter-login/0f8fad5b-d9cb-469f-a165-70867728950e";

/// A fake login CLI: prints its arguments and environment, one character split across two
/// writes, then echoes lines until `quit` (exit 7).
const FAKE_CLI: &str = r#"#!/bin/sh
printf 'args=%s home=%s term=%s codex=%s grok=%s\n' "$*" "$HOME" "$TERM" "$CODEX_HOME" "$GROK_HOME"
printf 'split:'
sleep 0.3
printf '\303'
sleep 0.3
printf '\251\n'
while IFS= read -r line; do
  printf 'got:%s\n' "$line"
  if [ "$line" = quit ]; then exit 7; fi
done
"#;

pub fn lease_id(lease: &Value) -> String {
    lease["providerLeaseId"].as_str().unwrap().to_owned()
}

/// Acquires a lease and installs the fake `claude`, `codex` and `grok` on the login PATH.
async fn lease_with_cli(h: &Harness) -> Value {
    let lease = h.acquire(&h.params(json!({ "runId": "run_login" }))).await;
    let script = format!(
        "mkdir -p /root/bin && cat > /root/bin/claude <<'EOF'\n{FAKE_CLI}EOF\nchmod +x /root/bin/claude && cp /root/bin/claude /root/bin/codex && cp /root/bin/claude /root/bin/grok && echo 'PATH=/root/bin:$PATH' > /root/.bash_profile"
    );
    let result = h
        .provider
        .execute(
            &h.exec_params(&lease, "bash", &["-c", &script], json!({})),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(result["exitCode"], json!(0), "{result}");
    lease
}

fn login_params(lease: &Value, route: &str, key: &str) -> Value {
    json!({
        "hostRouteId": route,
        "driverKey": "createos",
        "companyId": COMPANY,
        "environmentId": ENVIRONMENT,
        "providerLeaseId": lease["providerLeaseId"],
        "loginCommandKey": key,
        "sessionHome": HOME,
    })
}

fn duplex_params(lease: &Value, route: &str, command: Value) -> Value {
    json!({
        "hostRouteId": route,
        "driverKey": "createos",
        "companyId": COMPANY,
        "environmentId": ENVIRONMENT,
        "providerLeaseId": lease["providerLeaseId"],
        "command": command,
    })
}

fn session_of(opened: &Value) -> String {
    opened["workerSessionId"].as_str().unwrap().to_owned()
}

fn text(value: &Value) -> String {
    serde_json::to_string(value).unwrap()
}

async fn open_login(
    h: &Harness,
    sink: &Arc<SessionSink>,
    lease: &Value,
    route: &str,
    key: &str,
) -> String {
    let opened = h
        .provider
        .login_pty_open(&login_params(lease, route, key), sink.clone())
        .await
        .expect("login opens");
    session_of(&opened)
}

async fn open_duplex(
    h: &Harness,
    sink: &Arc<SessionSink>,
    lease: &Value,
    route: &str,
    command: Value,
) -> String {
    let opened = h
        .provider
        .duplex_channel_open(&duplex_params(lease, route, command), sink.clone())
        .await
        .expect("duplex opens");
    assert_eq!(opened["hostRouteId"], json!(route));
    session_of(&opened)
}

fn input(session: &str, data: &str) -> Value {
    json!({ "workerSessionId": session, "data": data })
}

fn write(route: &str, session: &str, data: &str) -> Value {
    json!({ "hostRouteId": route, "workerSessionId": session, "data": data })
}

async fn finish(h: Harness, sink: &SessionSink, lease: &Value) {
    h.destroy(lease).await;
    sink.assert_no_canary();
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_pty_runs_the_fixed_command_and_streams_whole_characters() {
    let h = Harness::start().await;
    let lease = lease_with_cli(&h).await;
    let id = lease_id(&lease);
    h.clear_log();
    let sink = Arc::new(SessionSink::default());
    let session = open_login(&h, &sink, &lease, "route-1", "claude").await;
    assert!(
        session.starts_with("pty-") && session.len() == 40,
        "{session}"
    );

    let calls = h.calls();
    assert_eq!(calls[0].method, "POST");
    assert_eq!(calls[0].path, format!("/sandboxes/{id}/exec"));
    assert_eq!(
        calls[0].body,
        Some(json!({ "cmd": "/bin/mkdir", "args": ["-p", "--", HOME] }))
    );
    assert_eq!(calls[1].path, format!("/sandboxes/{id}/processes"));
    let script = format!(
        r#"login_command="$(command -v 'claude')" || exit 127; login_path="$PATH"; case "$login_command" in */.asdf/shims/*) login_command="$(asdf which 'claude')" || exit 127; login_path="${{login_command%/*}}:$login_path" ;; esac; [ -x "$login_command" ] || exit 126; exec env HOME='{HOME}' TERM='xterm-256color' PATH="$login_path" "$login_command" 'setup-token'"#
    );
    assert_eq!(
        text(calls[1].body.as_ref().unwrap()),
        text(&json!({
            "cmd": "/bin/bash",
            "args": ["-lc", script],
            "cwd": "/paperclip-workspace",
            "pty": { "cols": 120, "rows": 30 },
        }))
    );

    let s = session.clone();
    let sink2 = sink.clone();
    sink.until("the prompt", move |_| sink2.output(&s).contains("split:é"))
        .await;
    let out = sink.output(&session);
    assert!(
        out.contains(&format!(
            "args=setup-token home={HOME} term=xterm-256color codex= grok="
        )),
        "{out:?}"
    );
    // The lone first byte of é produced an empty chunk, which was still reported.
    assert!(
        sink.events()
            .iter()
            .any(|e| matches!(e, Event::Output { text, .. } if text.is_empty()))
    );
    assert!(!out.contains('\u{FFFD}'));

    h.provider
        .login_pty_input(&input(&session, "héllo\n"))
        .await
        .unwrap();
    let (s, sink2) = (session.clone(), sink.clone());
    sink.until("the echo", move |_| sink2.output(&s).contains("got:héllo"))
        .await;
    // Unknown sessions are ignored.
    h.provider
        .login_pty_input(&input("pty-unknown", "x\n"))
        .await
        .unwrap();
    h.provider
        .login_pty_stop(&json!({ "workerSessionId": "pty-unknown" }))
        .await
        .unwrap();

    h.provider
        .login_pty_input(&input(&session, "quit\n"))
        .await
        .unwrap();
    assert_eq!(sink.exited(&session).await, Some(7));
    assert_eq!(sink.exits(&session), vec![("route-1".to_owned(), Some(7))]);
    assert_eq!(
        sink.logs(),
        vec![
            pm::LOG_LOGIN_REQUESTED,
            pm::LOG_LOGIN_HOME_PREPARED,
            pm::LOG_LOGIN_OPENED,
            "CreateOS login PTY exited (code=7).",
        ]
    );
    for event in sink.events() {
        if let Event::Output {
            route, session: s, ..
        } = event
        {
            assert_eq!((route.as_str(), s.as_str()), ("route-1", session.as_str()));
        }
    }
    // The ended session was forgotten: closing its route sends nothing.
    h.clear_log();
    let closed = h
        .provider
        .login_pty_close(&json!({ "hostRouteId": "route-1" }))
        .await
        .unwrap();
    assert_eq!(closed, json!({ "hostRouteId": "route-1" }));
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));
    finish(h, &sink, &lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_keys_set_their_homes_and_stop_and_close_end_the_session() {
    let h = Harness::start().await;
    let lease = lease_with_cli(&h).await;
    let id = lease_id(&lease);
    let sink = Arc::new(SessionSink::default());
    for (route, key, expected) in [
        (
            "route-codex",
            "codex",
            format!("args=login --device-auth home={HOME} term=xterm-256color codex={HOME} grok="),
        ),
        (
            "route-grok",
            "grok",
            format!("args=login --device-auth home={HOME} term=xterm-256color codex= grok={HOME}"),
        ),
    ] {
        h.clear_log();
        let session = open_login(&h, &sink, &lease, route, key).await;
        let script = h.calls()[1].body.clone().unwrap()["args"][1].clone();
        let var = if key == "codex" {
            "CODEX_HOME"
        } else {
            "GROK_HOME"
        };
        assert!(
            script.as_str().unwrap().ends_with(&format!(
                r#"exec env HOME='{HOME}' TERM='xterm-256color' {var}='{HOME}' PATH="$login_path" "$login_command" 'login' '--device-auth'"#
            )),
            "{script}"
        );
        let (s, sink2) = (session.clone(), sink.clone());
        sink.until("the banner", move |_| sink2.output(&s).contains(&expected))
            .await;
        h.clear_log();
        if key == "codex" {
            // Stop: SIGTERM and the tree delete; the host sees exit null once.
            h.provider
                .login_pty_stop(&json!({ "workerSessionId": session }))
                .await
                .unwrap();
            let pid = h.calls()[0].path.split('/').nth(4).unwrap().to_owned();
            assert_route(
                &h.calls(),
                &[
                    ("POST", &format!("/sandboxes/{id}/processes/{pid}/signal")),
                    (
                        "DELETE",
                        &format!("/sandboxes/{id}/processes/{pid}?grace_ms=1000"),
                    ),
                ],
            );
            assert_eq!(h.calls()[0].body, Some(json!({ "signal": "SIGTERM" })));
            // Stopped: further input sends nothing.
            h.provider
                .login_pty_input(&input(&session, "late\n"))
                .await
                .unwrap();
        } else {
            // Close of a PTY: no stdin close, then the stop.
            let closed = h
                .provider
                .login_pty_close(&json!({ "hostRouteId": route, "workerSessionId": session }))
                .await
                .unwrap();
            assert_eq!(closed, json!({ "hostRouteId": route }));
            let methods: Vec<String> = h.calls().iter().map(|c| c.method.clone()).collect();
            assert_eq!(methods, ["POST", "DELETE"], "{}", show(&h.calls()));
        }
        assert_eq!(sink.exited(&session).await, None);
        assert_eq!(sink.exits(&session).len(), 1);
    }
    let logs = sink.logs();
    assert!(
        logs.iter().all(|l| l.starts_with("CreateOS login PTY")),
        "{logs:?}"
    );
    // Each stopped session ended either on its SIGTERM exit or on the stop itself.
    let ends = logs
        .iter()
        .filter(|l| {
            *l == "CreateOS login PTY exited (code=signal)." || *l == pm::LOG_LOGIN_STREAM_FAILED
        })
        .count();
    assert_eq!(ends, 2, "{logs:?}");
    finish(h, &sink, &lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_open_refusals_are_the_catalogued_ones() {
    let h = Harness::start().await;
    let lease = lease_with_cli(&h).await;
    let sink = Arc::new(SessionSink::default());
    let open = |params: Value| {
        let (h, sink) = (&h, sink.clone());
        async move { h.provider.login_pty_open(&params, sink).await }
    };

    // A bad home, an uncached lease, another environment.
    let mut bad = login_params(&lease, "r", "claude");
    bad["sessionHome"] = json!("/tmp/paperclip-adapter-login/../etc");
    assert_eq!(message(open(bad).await), pm::LOGIN_HOME_INVALID);
    let mut bad = login_params(&lease, "r", "claude");
    bad["sessionHome"] = json!(null);
    assert_eq!(message(open(bad).await), pm::LOGIN_HOME_INVALID);
    let mut other = login_params(&lease, "r", "claude");
    other["environmentId"] = json!("env_other");
    assert_eq!(
        message(open(other).await),
        "CreateOS session requires a lease cached for this environment."
    );
    let mut unknown = login_params(&lease, "r", "claude");
    unknown["providerLeaseId"] = json!("sb_unknown");
    assert_eq!(
        message(open(unknown).await),
        "CreateOS session requires a lease cached for this environment."
    );

    // mkdir fails when the parent is a file.
    let blocked = h
        .provider
        .execute(
            &h.exec_params(
                &lease,
                "bash",
                &["-c", "touch /tmp/paperclip-adapter-login"],
                json!({}),
            ),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(blocked["exitCode"], json!(0));
    assert_eq!(
        message(open(login_params(&lease, "r", "claude")).await),
        pm::LOGIN_HOME_FAILED
    );
    h.provider
        .execute(
            &h.exec_params(
                &lease,
                "rm",
                &["-f", "/tmp/paperclip-adapter-login"],
                json!({}),
            ),
            &*h.sink,
        )
        .await
        .unwrap();

    // An unknown key fails as the original's lookup did, after the home was prepared.
    let error = open(login_params(&lease, "r", "gemini")).await.unwrap_err();
    assert_eq!(
        error.message,
        "Cannot read properties of undefined (reading '0')"
    );
    assert_eq!(error.class, sandbox_core::ErrorClass::TypeError);

    // Process creation refused by the API: the status is logged, the error is the client's.
    h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/processes", "action": { "kind": "status", "status": 500 } }));
    assert_eq!(
        message(open(login_params(&lease, "r", "claude")).await),
        "CreateOS request failed (HTTP 500) during process creation."
    );
    // Creation that fails without an HTTP status (invalid JSON) is logged as before binding.
    h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/processes", "action": { "kind": "malformedJson" } }));
    assert_eq!(
        message(open(login_params(&lease, "r", "claude")).await),
        "CreateOS returned invalid JSON."
    );
    let logs = sink.logs();
    assert!(
        logs.contains(&"CreateOS login PTY process creation failed (HTTP 500).".to_owned()),
        "{logs:?}"
    );
    assert!(
        logs.contains(&pm::LOG_LOGIN_CREATION_BEFORE_BINDING.to_owned()),
        "{logs:?}"
    );

    // A route that is open is refused; the existing session is untouched.
    let session = open_login(&h, &sink, &lease, "r", "claude").await;
    assert_eq!(
        message(open(login_params(&lease, "r", "codex")).await),
        pm::LOGIN_ROUTE_OPEN
    );
    let closed = h
        .provider
        .login_pty_close(&json!({ "hostRouteId": "r" }))
        .await
        .unwrap();
    assert_eq!(closed, json!({ "hostRouteId": "r" }));
    assert_eq!(sink.exited(&session).await, None);
    // Close before any bind (or of an unknown route) answers with the route only.
    assert_eq!(
        h.provider
            .login_pty_close(&json!({ "hostRouteId": "never" }))
            .await
            .unwrap(),
        json!({ "hostRouteId": "never" })
    );
    finish(h, &sink, &lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplex_round_trip_routes_by_exact_pair_and_refuses_non_canonical_base64() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.params(json!({ "runId": "run_duplex" }))).await;
    let id = lease_id(&lease);
    let sink = Arc::new(SessionSink::default());
    h.clear_log();
    // stderr is dropped; stdout is the echo.
    let session = open_duplex(
        &h,
        &sink,
        &lease,
        "d-1",
        json!(["sh", "-c", "echo noise >&2; cat"]),
    )
    .await;
    assert!(
        session.starts_with("duplex-") && session.len() == 43,
        "{session}"
    );
    assert_eq!(
        h.calls()[0].body,
        Some(
            json!({ "cmd": "sh", "args": ["-c", "echo noise >&2; cat"], "cwd": "/paperclip-workspace" })
        )
    );
    let bytes: Vec<u8> = (0u8..=255).collect();
    h.provider
        .duplex_channel_write(&write("d-1", &session, &b64(&bytes)))
        .await
        .unwrap();
    let (s, sink2) = (session.clone(), sink.clone());
    sink.until("the echo", move |_| sink2.data(&s).len() == 256)
        .await;
    assert_eq!(sink.data(&session), bytes);

    // Wrong pairs are ignored: nothing is sent, nothing stops.
    h.clear_log();
    h.provider
        .duplex_channel_write(&write("d-other", &session, "aGk="))
        .await
        .unwrap();
    h.provider
        .duplex_channel_write(&write("d-1", "duplex-other", "aGk="))
        .await
        .unwrap();
    h.provider
        .duplex_channel_stop(&json!({ "hostRouteId": "d-other", "workerSessionId": session }))
        .await
        .unwrap();
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));

    // Non-canonical base64 is a protocol error, never empty input; nothing is sent.
    for bad in [
        json!("aGk"),
        json!("aGl="),
        json!("a+/="),
        json!("aGk=\n"),
        json!("-_-_"),
        json!(""),
        json!(null),
        json!(7),
    ] {
        let params = json!({ "hostRouteId": "d-1", "workerSessionId": session, "data": bad });
        assert_eq!(
            message(h.provider.duplex_channel_write(&params).await),
            pm::DUPLEX_DATA_INVALID,
            "{bad}"
        );
    }
    assert!(h.calls().is_empty(), "{}", show(&h.calls()));

    // A second open on the route is refused.
    assert_eq!(
        message(
            h.provider
                .duplex_channel_open(&duplex_params(&lease, "d-1", json!(["cat"])), sink.clone())
                .await
        ),
        pm::DUPLEX_ROUTE_OPEN
    );

    // Close: stdin close, SIGTERM, tree delete; the reply names the bound session.
    let closed = h
        .provider
        .duplex_channel_close(&json!({ "hostRouteId": "d-1", "workerSessionId": session }))
        .await
        .unwrap();
    assert_eq!(
        closed,
        json!({ "hostRouteId": "d-1", "workerSessionId": session })
    );
    let pid = h.calls()[0].path.split('/').nth(4).unwrap().to_owned();
    assert_route(
        &h.calls(),
        &[
            (
                "POST",
                &format!("/sandboxes/{id}/processes/{pid}/stdin/close"),
            ),
            ("POST", &format!("/sandboxes/{id}/processes/{pid}/signal")),
            (
                "DELETE",
                &format!("/sandboxes/{id}/processes/{pid}?grace_ms=1000"),
            ),
        ],
    );
    let code = sink.exited(&session).await;
    assert!(matches!(code, None | Some(0)), "{code:?}");
    assert_eq!(sink.exits(&session).len(), 1);
    assert!(sink.events().iter().all(|e| !matches!(
        e,
        Event::DuplexExit {
            transport_closed: true,
            ..
        }
    )));
    // Closed: a second close is a close before bind.
    assert_eq!(
        h.provider
            .duplex_channel_close(&json!({ "hostRouteId": "d-1" }))
            .await
            .unwrap(),
        json!({ "hostRouteId": "d-1" })
    );
    finish(h, &sink, &lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplex_exit_codes_chunked_input_and_command_checks() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.params(json!({ "runId": "run_duplex" }))).await;
    let sink = Arc::new(SessionSink::default());
    for bad in [
        json!([]),
        json!([""]),
        json!(["cat", "a\u{0}b"]),
        json!(["cat", null]),
    ] {
        assert_eq!(
            message(
                h.provider
                    .duplex_channel_open(&duplex_params(&lease, "x", bad), sink.clone())
                    .await
            ),
            pm::DUPLEX_COMMAND_INVALID
        );
    }
    let mut other = duplex_params(&lease, "x", json!(["cat"]));
    other["companyId"] = json!("co_other");
    assert_eq!(
        message(h.provider.duplex_channel_open(&other, sink.clone()).await),
        "CreateOS session requires a lease cached for this environment."
    );

    // Creation failures are the client's errors.
    for (action, expected) in [
        (json!({ "kind": "drop" }), "CreateOS connection failed."),
        (
            json!({ "kind": "unsuccessful" }),
            "CreateOS returned an unsuccessful response.",
        ),
        (
            json!({ "kind": "status", "status": 201, "body": { "status": "success", "data": { "process_id": "../p" } } }),
            "CreateOS returned an invalid resource ID.",
        ),
    ] {
        h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/processes", "action": action }));
        let opened = h
            .provider
            .duplex_channel_open(&duplex_params(&lease, "x", json!(["cat"])), sink.clone())
            .await;
        assert_eq!(message(opened), expected);
    }

    // 600 KiB of input goes in 256 KiB calls, in order; the process exits on its own.
    let size = 600 * 1024;
    let session = open_duplex(
        &h,
        &sink,
        &lease,
        "big",
        json!([
            "sh",
            "-c",
            format!("head -c {size} | od -An -tx1 | tail -n 3 | tr -d ' \\n'; exit 3")
        ]),
    )
    .await;
    h.clear_log();
    let payload: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    h.provider
        .duplex_channel_write(&write("big", &session, &b64(&payload)))
        .await
        .unwrap();
    let inputs = h
        .calls()
        .iter()
        .filter(|c| c.path.ends_with("/input"))
        .count();
    assert_eq!(inputs, 3, "{}", show(&h.calls()));
    assert_eq!(sink.exited(&session).await, Some(3));
    // The last 48 bytes arrived intact and in order.
    let tail: String = payload[size - 48..]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(String::from_utf8(sink.data(&session)).unwrap(), tail);
    // The ended channel was forgotten: the route is free, writes are ignored.
    h.clear_log();
    h.provider
        .duplex_channel_write(&write("big", &session, "aGk="))
        .await
        .unwrap();
    assert!(h.calls().is_empty());
    assert_eq!(
        h.provider
            .duplex_channel_close(&json!({ "hostRouteId": "big" }))
            .await
            .unwrap(),
        json!({ "hostRouteId": "big" })
    );

    // A failed input call fails every later write with the same error, without sending it.
    let session = open_duplex(&h, &sink, &lease, "poisoned", json!(["cat"])).await;
    h.fault(json!({ "method": "POST", "path": "/v1/sandboxes/*/processes/*/input", "action": { "kind": "status", "status": 503 } }));
    h.clear_log();
    let w = write("poisoned", &session, "aGk=");
    assert_eq!(
        message(h.provider.duplex_channel_write(&w).await),
        "CreateOS request failed (HTTP 503) during process cleanup."
    );
    assert_eq!(
        message(h.provider.duplex_channel_write(&w).await),
        "CreateOS request failed (HTTP 503) during process cleanup."
    );
    let inputs = h
        .calls()
        .iter()
        .filter(|c| c.path.ends_with("/input"))
        .count();
    assert_eq!(inputs, 1, "{}", show(&h.calls()));
    // Stop of the exact pair ends it.
    h.provider
        .duplex_channel_stop(&json!({ "hostRouteId": "poisoned", "workerSessionId": session }))
        .await
        .unwrap();
    assert_eq!(sink.exited(&session).await, None);
    finish(h, &sink, &lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_on_one_lease_are_closed_by_its_release() {
    let h = Harness::start().await;
    let lease = lease_with_cli(&h).await;
    let id = lease_id(&lease);
    let sink = Arc::new(SessionSink::default());
    let (a, b, c, d) = tokio::join!(
        open_login(&h, &sink, &lease, "login-a", "claude"),
        open_login(&h, &sink, &lease, "login-b", "codex"),
        open_duplex(&h, &sink, &lease, "duplex-c", json!(["cat"])),
        open_duplex(
            &h,
            &sink,
            &lease,
            "duplex-d",
            json!(["sh", "-c", "exec cat"])
        ),
    );
    let (w1, w2) = (
        write("duplex-c", &c, &b64(b"to c\n")),
        write("duplex-d", &d, &b64(b"to d\n")),
    );
    let (i1, i2) = (input(&a, "to a\n"), input(&b, "to b\n"));
    let (r1, r2, r3, r4) = tokio::join!(
        h.provider.duplex_channel_write(&w1),
        h.provider.duplex_channel_write(&w2),
        h.provider.login_pty_input(&i1),
        h.provider.login_pty_input(&i2),
    );
    for result in [r1, r2, r3, r4] {
        result.unwrap();
    }
    let (sa, sb, sc, sd) = (a.clone(), b.clone(), c.clone(), d.clone());
    let s2 = sink.clone();
    sink.until("every echo", move |_| {
        s2.output(&sa).contains("got:to a")
            && s2.output(&sb).contains("got:to b")
            && s2.data(&sc) == b"to c\n"
            && s2.data(&sd) == b"to d\n"
    })
    .await;
    assert!(!sink.output(&a).contains("to b") && !sink.output(&b).contains("to a"));

    // Release (a disposable lease: deleted) closes all four first, then deletes the sandbox.
    h.clear_log();
    let released = h
        .provider
        .release_lease(&h.lease_params(json!({}), &lease), &*h.sink)
        .await;
    assert_eq!(released, Ok(None));
    let calls = h.calls();
    let last = calls.last().unwrap();
    assert!(
        last.is("DELETE", &format!("/sandboxes/{id}")),
        "{}",
        show(&calls)
    );
    let process_deletes = calls
        .iter()
        .filter(|c| c.method == "DELETE" && c.path.contains("/processes/"))
        .count();
    assert_eq!(process_deletes, 4, "{}", show(&calls));
    let stdin_closes = calls
        .iter()
        .filter(|c| c.path.ends_with("/stdin/close"))
        .count();
    assert_eq!(
        stdin_closes,
        2,
        "only the pipes close stdin: {}",
        show(&calls)
    );
    for session in [&a, &b, &c, &d] {
        assert_eq!(sink.exits(session).len(), 1, "{session}");
    }
    // Every route is free again.
    for route in ["login-a", "login-b"] {
        assert_eq!(
            h.provider
                .login_pty_close(&json!({ "hostRouteId": route }))
                .await
                .unwrap(),
            json!({ "hostRouteId": route })
        );
    }
    for route in ["duplex-c", "duplex-d"] {
        assert_eq!(
            h.provider
                .duplex_channel_close(&json!({ "hostRouteId": route }))
                .await
                .unwrap(),
            json!({ "hostRouteId": route })
        );
    }
    // The lease is no longer cached for sessions.
    assert_eq!(
        message(
            h.provider
                .duplex_channel_open(&duplex_params(&lease, "late", json!(["cat"])), sink.clone())
                .await
        ),
        "CreateOS session requires a lease cached for this environment."
    );
    sink.assert_no_canary();
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unconfirmed_session_cleanup_fails_release_but_not_destroy() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.params(json!({ "runId": "run_duplex" }))).await;
    let sink = Arc::new(SessionSink::default());
    let session = open_duplex(&h, &sink, &lease, "d", json!(["cat"])).await;
    h.fault(json!({
        "method": "DELETE", "path": "/v1/sandboxes/*/processes/*", "times": 0,
        "action": { "kind": "status", "status": 200, "body": { "status": "success", "data": { "tree_exited": false } } },
    }));
    assert_eq!(
        message(
            h.provider
                .release_lease(&h.lease_params(json!({}), &lease), &*h.sink)
                .await
        ),
        pm::TREE_TERMINATION_UNCONFIRMED
    );
    // The follower was stopped all the same (or saw cat end at its stdin close) and the host
    // saw the end once.
    let code = sink.exited(&session).await;
    assert!(matches!(code, None | Some(0)), "{code:?}");
    // As in the original, the stopped follower forgot the session: its route is free ...
    assert_eq!(
        h.provider
            .duplex_channel_close(&json!({ "hostRouteId": "d" }))
            .await
            .unwrap(),
        json!({ "hostRouteId": "d" })
    );
    // ... the lease now needs a destroy, which deletes the whole sandbox.
    h.destroy(&lease).await;
    assert_eq!(h.emu.counts().sandboxes, 0);
    assert_eq!(sink.exits(&session).len(), 1);
    sink.assert_no_canary();
    h.emu.clear_faults();
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_every_session_of_every_lease() {
    let h = Harness::start().await;
    let first = lease_with_cli(&h).await;
    let second = h.acquire(&h.params(json!({ "runId": "run_2" }))).await;
    let sink = Arc::new(SessionSink::default());
    let sessions = vec![
        open_login(&h, &sink, &first, "l1", "claude").await,
        open_duplex(&h, &sink, &first, "d1", json!(["cat"])).await,
        open_duplex(&h, &sink, &second, "d2", json!(["sleep", "600"])).await,
    ];
    assert_eq!(h.emu.counts().live_processes, 3);
    assert_eq!(h.provider.shutdown().await, Ok(None));
    for session in &sessions {
        assert_eq!(
            sink.exits(session).len(),
            1,
            "{session}: {:#?}",
            sink.events()
        );
    }
    assert_eq!(h.emu.counts().live_processes, 0);
    // New sessions are refused (no cached lease), and the sandboxes can still be destroyed.
    assert_eq!(
        message(
            h.provider
                .duplex_channel_open(&duplex_params(&first, "d3", json!(["cat"])), sink.clone())
                .await
        ),
        "CreateOS session requires a lease cached for this environment."
    );
    h.destroy(&first).await;
    h.destroy(&second).await;
    sink.assert_no_canary();
    h.finish().await;
}

/// The napi layer runs hooks on a multi-threaded runtime: every session hook future is Send.
#[test]
fn session_hooks_are_send() {
    fn is_send<T: Send>(_: &T) {}
    let provider = createos::CreateOsProvider::new();
    let params = json!({});
    let sink: Arc<dyn sandbox_core::HostSink> = Arc::new(SessionSink::default());
    is_send(&provider.login_pty_open(&params, sink.clone()));
    is_send(&provider.login_pty_input(&params));
    is_send(&provider.login_pty_stop(&params));
    is_send(&provider.login_pty_close(&params));
    is_send(&provider.duplex_channel_open(&params, sink));
    is_send(&provider.duplex_channel_write(&params));
    is_send(&provider.duplex_channel_stop(&params));
    is_send(&provider.duplex_channel_close(&params));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_output_ends_the_session_with_exit_null() {
    let h = Harness::start().await;
    let lease = lease_with_cli(&h).await;
    let sink = Arc::new(SessionSink::default());
    // A sequence gap after the banner: the login logs the stream failure, flushes, exits null.
    h.fault(json!({
        "method": "GET", "path": "/v1/sandboxes/*/processes/*/connect",
        "action": { "kind": "sequenceGap", "afterFrames": 1 },
    }));
    let login = open_login(&h, &sink, &lease, "gap", "claude").await;
    assert_eq!(sink.exited(&login).await, None);
    assert_eq!(sink.logs().last().unwrap(), pm::LOG_LOGIN_STREAM_FAILED);
    assert!(
        sink.output(&login).starts_with("args=setup-token"),
        "{}",
        sink.output(&login)
    );
    // An evicted journal (410) ends a duplex channel the same way.
    h.emu.clear_faults();
    h.fault(json!({
        "method": "GET", "path": "/v1/sandboxes/*/processes/*/connect",
        "action": { "kind": "evicted" },
    }));
    let duplex = open_duplex(&h, &sink, &lease, "evicted", json!(["cat"])).await;
    assert_eq!(sink.exited(&duplex).await, None);
    // Both were forgotten; the processes themselves are left to the lease (as the original).
    assert_eq!(
        h.provider
            .duplex_channel_close(&json!({ "hostRouteId": "evicted" }))
            .await
            .unwrap(),
        json!({ "hostRouteId": "evicted" })
    );
    h.emu.clear_faults();
    finish(h, &sink, &lease).await;
}
