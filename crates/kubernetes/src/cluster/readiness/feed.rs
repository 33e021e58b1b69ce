//! One kind of object followed by a watch that survives its own end, as kube-rs' watcher does
//! it, over [`ClusterApi::watch`]:
//!
//! - the first watch starts at the current state (no resourceVersion: the server sends each
//!   matching object as ADDED first);
//! - a watch that ends (its `timeoutSeconds`, a dropped connection, a failed read) is opened
//!   again from the last resourceVersion seen (of an event or a bookmark), so nothing between
//!   the two is missed;
//! - when the server cannot continue from there (an ERROR event, 410 when the version is too
//!   old) or a watch cannot be opened for a reason other than an HTTP answer, the feed says
//!   [`Item::Restart`]: its owner reads the current state again, and the next watch starts at
//!   the current state;
//! - an HTTP error opening a watch (403: the credential may not watch; 405: not served) is
//!   [`Item::Refused`], after which the feed stays silent.
//!
//! A watch opened again without having delivered anything waits first (250 ms, doubling, at
//! most 2 s), so a server that ends every watch at once is not asked in a loop. Each watch asks
//! for a `timeoutSeconds` within the wait's deadline.

use futures::StreamExt;
use serde_json::Value;

use super::sandbox::resource_version;
use crate::cluster::{ApiMethod, Clock, ClusterApi, WatchEvent, WatchStream};

/// The longest `timeoutSeconds` of one watch.
const MAX_WATCH_SECONDS: u64 = 290;
/// The first wait before a watch that delivered nothing is opened again.
const FIRST_RETRY_MS: u64 = 250;
/// The longest such wait.
const MAX_RETRY_MS: u64 = 2_000;

/// What the feed has to tell.
#[derive(Debug)]
pub(super) enum Item {
    /// An object as it is now (ADDED or MODIFIED).
    Changed(Value),
    Deleted(Value),
    /// The feed lost its place: read the current state again; the next watch starts there.
    Restart,
    /// The server answered the watch with an HTTP error; the feed says nothing more.
    Refused,
}

pub(super) struct Feed {
    method: ApiMethod,
    /// The watch request without `resourceVersion` and `timeoutSeconds`.
    request: Value,
    resource_version: Option<String>,
    stream: Option<WatchStream>,
    refused: bool,
    /// Watches in a row that ended without delivering anything.
    empty_watches: u32,
    delivered: bool,
    /// When (on the clock) the next watch may be opened.
    retry_at: u64,
}

impl Feed {
    pub fn new(method: ApiMethod, request: Value) -> Self {
        Self {
            method,
            request,
            resource_version: None,
            stream: None,
            refused: false,
            empty_watches: 0,
            delivered: false,
            retry_at: 0,
        }
    }

    /// The next item; `deadline_ms` (on `clock`) bounds each watch's `timeoutSeconds`.
    pub async fn next<C: ClusterApi + ?Sized>(
        &mut self,
        cluster: &C,
        clock: &dyn Clock,
        deadline_ms: u64,
    ) -> Item {
        loop {
            if self.refused {
                return std::future::pending().await;
            }
            let Some(stream) = self.stream.as_mut() else {
                if let Err(item) = self.open(cluster, clock, deadline_ms).await {
                    return item;
                }
                continue;
            };
            let event = stream.next().await;
            if let Some(Ok(event)) = &event {
                self.note_version(event);
            }
            match event {
                Some(Ok(WatchEvent::Added(object) | WatchEvent::Modified(object))) => {
                    self.delivered = true;
                    return Item::Changed(object);
                }
                Some(Ok(WatchEvent::Deleted(object))) => {
                    self.delivered = true;
                    return Item::Deleted(object);
                }
                Some(Ok(WatchEvent::Bookmark(_))) => self.delivered = true,
                Some(Ok(WatchEvent::Error(_))) => {
                    self.close(clock);
                    self.resource_version = None;
                    return Item::Restart;
                }
                Some(Err(_)) | None => self.close(clock),
            }
        }
    }

    /// Opens the first watch: `None` once it is open, else what its failure means.
    pub async fn open_first<C: ClusterApi + ?Sized>(
        &mut self,
        cluster: &C,
        clock: &dyn Clock,
        deadline_ms: u64,
    ) -> Option<Item> {
        self.open(cluster, clock, deadline_ms).await.err()
    }

    /// The resourceVersion to go on from, when the owner read the state itself.
    pub fn start_over(&mut self) {
        self.resource_version = None;
    }

    fn note_version(&mut self, event: &WatchEvent) {
        let object = match event {
            WatchEvent::Added(o)
            | WatchEvent::Modified(o)
            | WatchEvent::Deleted(o)
            | WatchEvent::Bookmark(o) => o,
            WatchEvent::Error(_) => return,
        };
        if let Some(version) = resource_version(object) {
            self.resource_version = Some(version);
        }
    }

    /// Ends the current watch; the next one waits when this one delivered nothing.
    fn close(&mut self, clock: &dyn Clock) {
        self.stream = None;
        if self.delivered {
            self.empty_watches = 0;
        } else {
            let doublings = self.empty_watches.min(8);
            self.empty_watches += 1;
            let wait_ms = (FIRST_RETRY_MS << doublings).min(MAX_RETRY_MS);
            self.retry_at = clock.now_ms().saturating_add(wait_ms);
        }
    }

    /// Opens the next watch, once its retry time has come (kept across cancellations: the
    /// wait's other branches can interrupt this one).
    async fn open<C: ClusterApi + ?Sized>(
        &mut self,
        cluster: &C,
        clock: &dyn Clock,
        deadline_ms: u64,
    ) -> Result<(), Item> {
        let now = clock.now_ms();
        if self.retry_at > now {
            clock.sleep(self.retry_at - now).await;
        }
        let left_ms = deadline_ms.saturating_sub(clock.now_ms());
        let seconds = left_ms.div_ceil(1000).clamp(1, MAX_WATCH_SECONDS);
        let mut request = self.request.clone();
        if let Some(version) = &self.resource_version {
            request["resourceVersion"] = Value::String(version.clone());
        }
        request["timeoutSeconds"] = Value::from(seconds);
        self.delivered = false;
        match cluster.watch(self.method, request).await {
            Ok(stream) => {
                self.stream = Some(stream);
                Ok(())
            }
            Err(err) if err.http_status().is_some() => {
                self.refused = true;
                Err(Item::Refused)
            }
            Err(_) => {
                self.close(clock);
                self.resource_version = None;
                Err(Item::Restart)
            }
        }
    }
}
