//! The Sandbox's pod as the ready-wait follows it: the container states and the scheduling
//! condition that mean the pod will not become Ready on its own.
//!
//! At once: `InvalidImageName`, `CreateContainerError`, `RunContainerError`,
//! `CrashLoopBackOff`, and an image pull the kubelet has failed twice. The kubelet reports
//! `ErrImagePull` when a pull has just failed, and `ImagePullBackOff` when it comes back to the
//! container after that failure and holds the next pull back (about 15 s later on the real
//! node). So the pull counts as failed twice on `ImagePullBackOff`, or when the wait sees the
//! container enter `ErrImagePull` a second time (the retry failed too, the back-off state not
//! written in between): a single failed pull that the kubelet's next try gets past never fails
//! the wait, and a wait that starts during the back-off (a resumed lease) names it at once.
//!
//! `CreateContainerConfigError` fails at once too, except when the kubelet says the lease's
//! own Secret (`<name>-env`) is missing while the pod is younger than
//! [`super::STARTUP_WINDOW_MS`]: acquire creates that Secret just after the Sandbox, so a fast
//! kubelet can start the pod first and report the error until its next try (about 10 s later).
//!
//! On a timer: `PodScheduled=False` with reason `Unschedulable` for longer than the configured
//! grace, counted from the condition's `lastTransitionTime` (server time, so a pod that was
//! already waiting when the wait began is judged right).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::STARTUP_WINDOW_MS;
use super::messages::{ContainerFailure, ContainerTrouble};
use super::sandbox::{created_ms, timestamp_ms};
use js_compat::value::{array_items, prop_nullish, prop_str};

/// Why the pod will not become Ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PodFailure {
    Container(ContainerFailure),
    /// The scheduler's message.
    Unschedulable(String),
}

/// What the wait has seen of one container.
#[derive(Debug, Default)]
struct ContainerHistory {
    last_reason: Option<String>,
    /// Times the container entered `ErrImagePull`.
    pull_failures: u32,
}

/// The Sandbox's pods (those not being deleted), by name.
#[derive(Debug)]
pub(super) struct PodTracker {
    own_secret: String,
    pods: BTreeMap<String, (Value, HashMap<String, ContainerHistory>)>,
    /// When (Unix ms) the wait first saw each pod unschedulable without a transition time.
    unschedulable_seen: HashMap<String, u64>,
}

fn pod_name(pod: &Value) -> String {
    prop_str(prop_nullish(Some(pod), "metadata"), "name")
        .unwrap_or_default()
        .to_string()
}

impl PodTracker {
    /// The tracker of the pods of Sandbox `sandbox` (whose Secret is `<sandbox>-env`).
    pub fn new(sandbox: &str) -> Self {
        Self {
            own_secret: format!("\"{sandbox}-env\""),
            pods: BTreeMap::new(),
            unschedulable_seen: HashMap::new(),
        }
    }

    /// Forgets every pod (the watch starts over and lists them again).
    pub fn clear(&mut self) {
        self.pods.clear();
        self.unschedulable_seen.clear();
    }

    pub fn deleted(&mut self, pod: &Value) {
        let name = pod_name(pod);
        self.pods.remove(&name);
        self.unschedulable_seen.remove(&name);
    }

    /// A pod as it is now: the failure its containers show, if any.
    pub fn changed(&mut self, pod: Value, unix_now: u64) -> Option<PodFailure> {
        let name = pod_name(&pod);
        let metadata = prop_nullish(Some(&pod), "metadata");
        if metadata
            .and_then(|m| m.get("deletionTimestamp"))
            .is_some_and(|d| !d.is_null())
        {
            self.deleted(&pod);
            return None;
        }
        if unschedulable(&pod).is_some() {
            self.unschedulable_seen
                .entry(name.clone())
                .or_insert(unix_now);
        } else {
            self.unschedulable_seen.remove(&name);
        }
        let (_, histories) = self.pods.entry(name.clone()).or_default();
        let mut failure = None;
        for status in container_statuses(&pod) {
            let container = prop_str(Some(status), "name").unwrap_or_default();
            let history = histories.entry(container.to_string()).or_default();
            let found = judge_container(&pod, status, history, &self.own_secret, unix_now);
            failure = failure.or(found.map(PodFailure::Container));
        }
        self.pods.get_mut(&name).expect("entry made above").0 = pod;
        failure
    }

    /// The failure that has fallen due by `unix_now`, if any: a pod unschedulable for longer
    /// than `grace_ms`, or the lease's Secret still missing after the startup window.
    pub fn due(&self, unix_now: u64, grace_ms: u64) -> Option<PodFailure> {
        for (name, (pod, _)) in &self.pods {
            if let Some(at) = self.unschedulable_due(name, pod, grace_ms)
                && at <= unix_now
            {
                let message = unschedulable(pod).unwrap_or_default();
                return Some(PodFailure::Unschedulable(message));
            }
            if let Some(at) = self.own_secret_due(pod)
                && at <= unix_now
            {
                let mut history = ContainerHistory::default();
                for status in container_statuses(pod) {
                    if let Some(found) = judge_container(pod, status, &mut history, "", unix_now) {
                        return Some(PodFailure::Container(found));
                    }
                }
            }
        }
        None
    }

    /// When (Unix ms) the next failure of [`PodTracker::due`] would fall due.
    pub fn next_due(&self, grace_ms: u64) -> Option<u64> {
        self.pods
            .iter()
            .flat_map(|(name, (pod, _))| {
                [
                    self.unschedulable_due(name, pod, grace_ms),
                    self.own_secret_due(pod),
                ]
            })
            .flatten()
            .min()
    }

    fn unschedulable_due(&self, name: &str, pod: &Value, grace_ms: u64) -> Option<u64> {
        unschedulable(pod)?;
        let since =
            timestamp_ms(scheduled_condition(pod).and_then(|c| c.get("lastTransitionTime")))
                .or_else(|| self.unschedulable_seen.get(name).copied())?;
        Some(since.saturating_add(grace_ms))
    }

    /// When a pod that reports its own Secret missing stops being forgiven.
    fn own_secret_due(&self, pod: &Value) -> Option<u64> {
        let waiting_for_secret = container_statuses(pod).iter().any(|status| {
            let (reason, message) = waiting(status);
            reason == Some("CreateContainerConfigError")
                && message.is_some_and(|m| m.contains(&self.own_secret))
        });
        waiting_for_secret.then(|| {
            created_ms(pod)
                .unwrap_or(0)
                .saturating_add(STARTUP_WINDOW_MS)
        })
    }
}

/// `status.initContainerStatuses` then `status.containerStatuses`.
fn container_statuses(pod: &Value) -> Vec<&Value> {
    let status = prop_nullish(Some(pod), "status");
    let init = array_items(prop_nullish(status, "initContainerStatuses"));
    let main = array_items(prop_nullish(status, "containerStatuses"));
    init.iter().chain(main.iter()).collect()
}

/// A container status's `state.waiting` reason and message.
fn waiting(status: &Value) -> (Option<&str>, Option<&str>) {
    let waiting = prop_nullish(prop_nullish(Some(status), "state"), "waiting");
    (prop_str(waiting, "reason"), prop_str(waiting, "message"))
}

/// The `PodScheduled` condition.
fn scheduled_condition(pod: &Value) -> Option<&Value> {
    let conditions = prop_nullish(prop_nullish(Some(pod), "status"), "conditions");
    array_items(conditions)
        .iter()
        .find(|c| prop_str(Some(c), "type") == Some("PodScheduled"))
}

/// The scheduler's message when the pod is `PodScheduled=False` for reason `Unschedulable`.
fn unschedulable(pod: &Value) -> Option<String> {
    let condition = scheduled_condition(pod)?;
    let unschedulable = prop_str(Some(condition), "status") == Some("False")
        && prop_str(Some(condition), "reason") == Some("Unschedulable");
    unschedulable.then(|| {
        prop_str(Some(condition), "message")
            .unwrap_or_default()
            .to_string()
    })
}

/// The image the pod's spec gives `container` (what the operator configured), else the one its
/// status names.
fn image_of(pod: &Value, container: &str, status: &Value) -> String {
    let spec = prop_nullish(Some(pod), "spec");
    let declared = ["initContainers", "containers"]
        .iter()
        .flat_map(|key| array_items(prop_nullish(spec, key)).iter())
        .find(|c| prop_str(Some(c), "name") == Some(container))
        .and_then(|c| prop_str(Some(c), "image"));
    declared
        .or_else(|| prop_str(Some(status), "image"))
        .unwrap_or_default()
        .to_string()
}

/// The failure one container status shows, updating what the wait has seen of it.
/// `own_secret` is the quoted name of the lease's Secret (`""` forgives nothing).
fn judge_container(
    pod: &Value,
    status: &Value,
    history: &mut ContainerHistory,
    own_secret: &str,
    unix_now: u64,
) -> Option<ContainerFailure> {
    let (reason, message) = waiting(status);
    let entering = reason.is_some() && history.last_reason.as_deref() != reason;
    history.last_reason = reason.map(str::to_string);
    let reason = reason?;
    let trouble = match reason {
        "ErrImagePull" => {
            history.pull_failures += u32::from(entering);
            (history.pull_failures >= 2).then_some(ContainerTrouble::Image)
        }
        "ImagePullBackOff" | "InvalidImageName" => Some(ContainerTrouble::Image),
        "CreateContainerConfigError" => {
            let forgiven = !own_secret.is_empty()
                && message.is_some_and(|m| m.contains(own_secret))
                && created_ms(pod)
                    .unwrap_or(0)
                    .saturating_add(STARTUP_WINDOW_MS)
                    > unix_now;
            (!forgiven).then_some(ContainerTrouble::Create)
        }
        "CreateContainerError" => Some(ContainerTrouble::Create),
        "RunContainerError" | "CrashLoopBackOff" => Some(ContainerTrouble::Crash),
        _ => None,
    }?;
    let container = prop_str(Some(status), "name")
        .unwrap_or_default()
        .to_string();
    let mut text = message.unwrap_or_default().to_string();
    if trouble == ContainerTrouble::Crash
        && let Some(last) = last_termination(status)
    {
        text = if text.is_empty() {
            last
        } else {
            format!("{last}; {text}")
        };
    }
    Some(ContainerFailure {
        trouble,
        image: image_of(pod, &container, status),
        container,
        reason: reason.to_string(),
        message: text,
    })
}

/// `last exit <reason> (exit code <n>): <message>` of a container that ran and ended (what
/// a crash loop's back-off message leaves out: why it ended).
fn last_termination(status: &Value) -> Option<String> {
    let terminated = prop_nullish(prop_nullish(Some(status), "lastState"), "terminated")?;
    let reason = prop_str(Some(terminated), "reason").unwrap_or("Unknown");
    let code = terminated
        .get("exitCode")
        .and_then(Value::as_i64)
        .map_or_else(|| "?".to_string(), |c| c.to_string());
    let mut text = format!("last exit {reason} (exit code {code})");
    if let Some(message) = prop_str(Some(terminated), "message").filter(|m| !m.is_empty()) {
        text.push_str(": ");
        text.push_str(message);
    }
    Some(text)
}
