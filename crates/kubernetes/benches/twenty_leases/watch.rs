//! When each pod turned Ready, as an admin watch of all pods sees it, on a thread and a runtime
//! of its own so that the worker's busy runtime cannot delay the moment it is taken.

use std::collections::HashMap;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Instant;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::WatchParams;
use kube::core::WatchEvent;
use tokio::sync::oneshot;

/// What the watch has seen of one pod.
enum Seen {
    /// Not Ready yet.
    Pending,
    /// Turned Ready at this moment.
    Ready(Instant),
    /// Ready when first seen: its transition was not observed.
    ReadyAtFirstSight,
}

/// A running watch; [`ReadyWatch::stop`] ends it and hands over the transitions.
pub struct ReadyWatch {
    stop: oneshot::Sender<()>,
    thread: JoinHandle<HashMap<String, Seen>>,
}

impl ReadyWatch {
    /// Starts the watch and returns once the API server has accepted it.
    pub fn start(kubeconfig: String) -> ReadyWatch {
        let (stop, stopped) = oneshot::channel();
        let (opened, is_open) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the watch's runtime")
                .block_on(follow(kubeconfig, opened, stopped))
        });
        is_open.recv().expect("the pod watch opens");
        ReadyWatch { stop, thread }
    }

    /// Ends the watch: pod name → the moment it turned Ready, for the transitions it saw.
    pub fn stop(self) -> HashMap<String, Instant> {
        let _ = self.stop.send(());
        let seen = self.thread.join().expect("the pod watch thread");
        seen.into_iter()
            .filter_map(|(name, seen)| match seen {
                Seen::Ready(at) => Some((name, at)),
                Seen::Pending | Seen::ReadyAtFirstSight => None,
            })
            .collect()
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Follows every pod until `stopped`; a watch that ends (its timeout) is opened again.
async fn follow(
    kubeconfig: String,
    opened: mpsc::Sender<()>,
    mut stopped: oneshot::Receiver<()>,
) -> HashMap<String, Seen> {
    let pods: Api<Pod> = Api::all(crate::support::client(&kubeconfig).await);
    let mut seen: HashMap<String, Seen> = HashMap::new();
    loop {
        let params = WatchParams::default().timeout(290);
        let stream = pods.watch(&params, "0").await.expect("the pod watch opens");
        let _ = opened.send(());
        let mut stream = Box::pin(stream);
        loop {
            let event = tokio::select! {
                _ = &mut stopped => return seen,
                event = stream.try_next() => event,
            };
            let pod = match event {
                Ok(Some(WatchEvent::Added(pod) | WatchEvent::Modified(pod))) => pod,
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => break,
            };
            let Some(name) = pod.metadata.name.clone() else {
                continue;
            };
            let ready = is_ready(&pod);
            let now = Instant::now();
            seen.entry(name)
                .and_modify(|s| {
                    if ready && matches!(s, Seen::Pending) {
                        *s = Seen::Ready(now);
                    }
                })
                .or_insert(if ready {
                    Seen::ReadyAtFirstSight
                } else {
                    Seen::Pending
                });
        }
    }
}
