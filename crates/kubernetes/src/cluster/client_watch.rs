//! [`KubeCluster`](super::KubeCluster)'s watches: `GET …?watch=true` through kube-rs
//! (`Request::watch`, `Client::request_events`), its events as plain JSON.
//!
//! Only the opening is cut at the hook's API bound (the stream then lasts the request's
//! `timeoutSeconds`, which the caller keeps within its own wait); a failed read ends the stream
//! after its error, as a dropped connection does.

use futures::StreamExt;
use kube::core::Request;
use kube::core::WatchEvent as KubeWatchEvent;
use kube::core::params::WatchParams;
use serde_json::Value;

use crate::cluster::{WatchEvent, WatchStream};
use crate::error::Error;

/// The longest `timeoutSeconds` a watch asks for (kube-rs's default, under the API server's
/// own limit).
pub const MAX_WATCH_SECONDS: u32 = 290;

/// Opens the watch of the collection at `path` with `request`'s `labelSelector`,
/// `fieldSelector`, `resourceVersion` and `timeoutSeconds`; `fail` makes a kube-rs error the
/// crate's.
pub(super) async fn open_watch(
    client: &kube::Client,
    path: String,
    request: &Value,
    fail: impl Fn(kube::Error) -> Error + Clone + Send + Sync + 'static,
) -> Result<WatchStream, Error> {
    let text = |key: &str| request.get(key).and_then(Value::as_str).map(str::to_string);
    let timeout = request
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .map_or(MAX_WATCH_SECONDS, |s| {
            u32::try_from(s)
                .unwrap_or(MAX_WATCH_SECONDS)
                .clamp(1, MAX_WATCH_SECONDS)
        });
    let params = WatchParams {
        label_selector: text("labelSelector"),
        field_selector: text("fieldSelector"),
        timeout: Some(timeout),
        bookmarks: true,
        ..WatchParams::default()
    };
    // An empty resourceVersion is the API's "unset": start at the current state, with an ADDED
    // event for each object that matches.
    let version = text("resourceVersion").unwrap_or_default();
    let http_request = Request::new(path)
        .watch(&params, &version)
        .map_err(|err| Error::unanswered(err.to_string()))?;
    let opening = client.request_events::<Value>(http_request);
    let events = crate::cluster::api_bound::bounded(opening)
        .await
        .map_err(Error::unanswered)?
        .map_err(fail.clone())?;
    let stream = events.map(move |item| item.map(plain_event).map_err(&fail));
    Ok(stream.boxed())
}

/// A kube-rs watch event as JSON.
fn plain_event(event: KubeWatchEvent<Value>) -> WatchEvent {
    let json = |value: Result<Value, serde_json::Error>| value.unwrap_or(Value::Null);
    match event {
        KubeWatchEvent::Added(object) => WatchEvent::Added(object),
        KubeWatchEvent::Modified(object) => WatchEvent::Modified(object),
        KubeWatchEvent::Deleted(object) => WatchEvent::Deleted(object),
        KubeWatchEvent::Bookmark(bookmark) => {
            WatchEvent::Bookmark(json(serde_json::to_value(bookmark)))
        }
        KubeWatchEvent::Error(status) => WatchEvent::Error(json(serde_json::to_value(*status))),
    }
}
