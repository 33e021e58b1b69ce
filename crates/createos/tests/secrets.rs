//! The API key is sent as `X-Api-Key` and nowhere else: not in URLs or bodies, not in errors
//! (even when the provider echoes it), not in results, logs or debug output.

mod common;

use common::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_never_leaves_the_header() {
    let h = Harness::start().await;
    let reuse = json!({ "reuseLease": true });
    let mut seen: Vec<String> = Vec::new();

    let lease = h.acquire(&h.run_params(reuse.clone())).await;
    seen.push(lease.to_string());
    let exec = h.exec_params_with(
        reuse.clone(),
        &lease,
        "bash",
        &["-c", "env; echo $X_API_KEY"],
        json!({}),
    );
    seen.push(
        h.provider
            .execute(&exec, &*h.sink)
            .await
            .unwrap()
            .to_string(),
    );
    let params = h.lease_params(reuse.clone(), &lease);
    assert_eq!(h.provider.release_lease(&params, &*h.sink).await, Ok(None));
    seen.push(
        h.provider
            .resume_lease(&params, &*h.sink)
            .await
            .unwrap()
            .to_string(),
    );
    seen.push(
        h.provider
            .probe(&h.params(json!({})), &*h.sink)
            .await
            .unwrap()
            .to_string(),
    );

    // Provider error bodies that echo the key stay out of every error.
    let echo =
        json!({ "status": "fail", "data": format!("private provider diagnostics {CANARY}") });
    for (method, path, query) in [
        ("POST", "/v1/sandboxes/*/exec", Some("stream=true")),
        ("GET", "/v1/sandboxes/*", None),
        ("DELETE", "/v1/sandboxes/*", None),
    ] {
        h.emu.clear_faults();
        h.fault(json!({ "method": method, "path": path, "query": query, "action": { "kind": "status", "status": 500, "body": echo } }));
        seen.push(message(h.provider.execute(&exec, &*h.sink).await));
        seen.push(format!(
            "{:?}",
            h.provider.resume_lease(&params, &*h.sink).await
        ));
        seen.push(format!(
            "{:?}",
            h.provider.destroy_lease(&params, &*h.sink).await
        ));
    }
    h.emu.clear_faults();
    h.provider.destroy_lease(&params, &*h.sink).await.unwrap();
    let probe_failure = h
        .provider
        .probe(
            &h.params_with(json!({ "shape": "s-unknown" }), json!({})),
            &*h.sink,
        )
        .await
        .unwrap();
    assert_eq!(
        probe_failure["summary"],
        json!("CreateOS request failed (HTTP 400) during sandbox lifecycle.")
    );
    seen.push(probe_failure.to_string());

    seen.push(format!("{:?}", h.provider));
    let client = h
        .provider
        .clients()
        .client(&createos::config::parse_config(&h.config()).unwrap())
        .unwrap();
    seen.push(format!("{client:?}"));
    for text in &seen {
        no_canary(text);
    }
    // Only the header carried it.
    for record in h.records() {
        no_canary(&record.path);
        no_canary(record.query.as_deref().unwrap_or(""));
        no_canary(
            &record
                .body_json
                .map(|b: Value| b.to_string())
                .unwrap_or_default(),
        );
    }
    h.finish().await;
}
