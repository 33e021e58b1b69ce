//! The request pacer: request starts to one API origin are >= 300 ms apart, FIFO, across every
//! lease of the worker.

mod common;

use std::time::Duration;

use common::*;
use createos::pacer::DEFAULT_INTERVAL;
use createos::{Pacer, Signal};
use serde_json::json;

/// How far apart two arrivals may look at the emulator for starts that were 300 ms apart at the
/// client: the request and the log stamp add a little latency to each, not always the same.
const ARRIVAL_JITTER_MS: f64 = 10.0;

/// The pacer spaces request *starts*; the emulator stamps *arrivals*. On a loaded machine one
/// request can arrive late after an on-time start: the gap before it grows by that delay and the
/// gap after it shrinks by the same amount. So a gap shorter than 300 ms passes only when it and
/// the gap before it add up to two intervals (one delayed arrival); without a pacer every gap is
/// a few milliseconds and this fails at once.
fn assert_spaced(gaps: &[f64]) {
    let interval = DEFAULT_INTERVAL.as_secs_f64() * 1000.0;
    for (i, gap) in gaps.iter().enumerate() {
        if *gap >= interval - ARRIVAL_JITTER_MS {
            continue;
        }
        let before = if i == 0 { 0.0 } else { gaps[i - 1] };
        assert!(
            before + gap >= 2.0 * interval - ARRIVAL_JITTER_MS,
            "request starts closer than 300 ms: gaps {gaps:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spaces_request_starts_to_one_origin_across_leases() {
    // The production interval, on a pacer of its own so that other tests do not interleave.
    let h = Harness::with_pacer(Pacer::new(DEFAULT_INTERVAL)).await;
    // Warm the connection pool first, so that the first measured request does not carry a
    // connection set-up the others do not (a delete of nothing: 404 counts as deleted).
    h.destroy(&json!({ "providerLeaseId": "sb_warmup", "metadata": { "provider": "createos", "apiUrl": h.emu.base_url(), "companyId": COMPANY, "environmentId": ENVIRONMENT } })).await;
    let a = h.run_params(json!({}));
    let mut b = h.run_params(json!({}));
    b["runId"] = json!("run_2");
    let (la, lb) = tokio::join!(h.acquire(&a), h.acquire(&b));
    let ea = h.exec_params(&la, "echo", &["a"], json!({}));
    let eb = h.exec_params(&lb, "echo", &["b"], json!({}));
    let (ra, rb) = tokio::join!(
        h.provider.execute(&ea, &*h.sink),
        h.provider.execute(&eb, &*h.sink)
    );
    assert_eq!(ra.unwrap()["stdout"], json!("a\n"));
    assert_eq!(rb.unwrap()["stdout"], json!("b\n"));
    tokio::join!(h.destroy(&la), h.destroy(&lb));

    let records = h.records();
    assert_eq!(
        records.len(),
        1 + 2 * (5 + 1 + 1),
        "warm-up, then two leases: acquire, execute, destroy"
    );
    let gaps: Vec<f64> = records
        .windows(2)
        .map(|w| w[1].at_ms - w[0].at_ms)
        .collect();
    assert_spaced(&gaps);
    // The two leases really were interleaved, so the spacing is shared, not per lease.
    let first_ids: Vec<&str> = records
        .iter()
        .filter(|r| r.path.starts_with("/v1/sandboxes/sb"))
        .map(|r| r.path.as_str())
        .collect();
    assert!(
        first_ids
            .windows(2)
            .any(|w| w[0].split('/').nth(3) != w[1].split('/').nth(3))
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_queued_request_does_not_block_the_others() {
    let pacer = Pacer::new(Duration::from_millis(300));
    let origin = "http://127.0.0.1:9";
    pacer.wait(origin, &Signal::new()).await.unwrap();

    // Aborted before its turn: rejects with the signal's reason.
    let aborted = Signal::new();
    aborted.abort();
    assert_eq!(
        pacer.wait(origin, &aborted).await.unwrap_err().message,
        "This operation was aborted"
    );

    // Times out while waiting for its slot: Node's timer abort text.
    let short = Signal::timeout(20);
    let queued = pacer.wait(origin, &short);
    let after = Signal::new();
    let next = pacer.wait(origin, &after);
    let (queued, next) = tokio::join!(queued, next);
    assert_eq!(queued.unwrap_err().message, "The operation was aborted");
    next.expect("the request behind the aborted one still gets its turn");

    // A signal that fired before the turn came reports its reason.
    let timed_out = Signal::timeout(1);
    timed_out.aborted().await;
    assert_eq!(
        pacer.wait(origin, &timed_out).await.unwrap_err().message,
        "The operation was aborted due to timeout"
    );
}

#[test]
fn the_worker_shares_one_300_ms_pacer() {
    assert!(std::sync::Arc::ptr_eq(&Pacer::global(), &Pacer::global()));
    assert_eq!(Pacer::global().interval(), Duration::from_millis(300));
    assert_eq!(
        createos::ProviderOptions::default().pacer.interval(),
        Duration::from_millis(300)
    );
}

#[tokio::test]
async fn origins_are_paced_independently() {
    let pacer = Pacer::new(Duration::from_secs(3600));
    pacer.wait("https://a.test", &Signal::new()).await.unwrap();
    // Another origin does not wait for the first one's hour.
    pacer
        .wait("https://b.test", &Signal::timeout(5_000))
        .await
        .unwrap();
    assert_eq!(pacer.interval(), Duration::from_secs(3600));
}
