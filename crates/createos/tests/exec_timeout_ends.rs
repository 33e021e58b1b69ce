//! A timed-out CreateOS execute does not outlive its call: the provider aborts the exec's NDJSON
//! stream on the deadline, and the service tears the command down with it (the emulator kills
//! the command's process tree when the stream closes, as the vendor's client says the service
//! does: "cancel it so the server-side command or log stream is torn down instead of running
//! on"). Checked while the sandbox lives on, so it is not the destroy that ends it.

mod common;

use std::time::Duration;

use common::*;
use sandbox_core::poll::poll;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_command_and_what_it_started_end_with_the_stream() {
    let h = Harness::start().await;
    let lease = h.acquire(&h.run_params(json!({}))).await;
    assert_eq!(h.emu.counts().live_processes, 0, "{:?}", h.emu.counts());
    // It ignores TERM, and leaves a child of its own running in the background.
    let params = h.exec_params(
        &lease,
        "bash",
        &["-c", "trap '' TERM; sleep 300 & exec sleep 301"],
        json!({ "timeoutMs": 1500 }),
    );
    let result = h.provider.execute(&params, &*h.sink).await.unwrap();
    assert_eq!(result["timedOut"], json!(true), "{result}");
    assert_eq!(result["exitCode"], json!(null));
    poll(
        "the timed-out command to end in the sandbox",
        Duration::from_secs(10),
    )
    .until(|| h.emu.counts().live_processes == 0)
    .await;
    assert_eq!(h.emu.counts().sandboxes, 1, "the sandbox lives on");
    h.destroy(&lease).await;
    h.finish().await;
}
