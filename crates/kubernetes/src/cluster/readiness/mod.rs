//! The wait for a lease's Sandbox to be Ready (`waitForSandboxReady`): followed with watches
//! instead of the original's fixed poll, and failed within seconds, with a named cause, when
//! the pod cannot become Ready.
//!
//! The wait reads the Sandbox once with a GET, as the original's first poll does: a Sandbox
//! that is already Ready, Failed or Terminating ends the wait on the same request as in the
//! original. Otherwise it follows two watches ([`feed`]) until one of them settles it:
//!
//! - the Sandbox (`fieldSelector=metadata.name=<name>`): its Ready, Failed and Terminating
//!   judgement is the original's ([`sandbox`]); a Ready event ends the wait at once, with no
//!   poll interval after the pod is up. A Sandbox that goes away (DELETED) or a watch that
//!   loses its place is read again with a GET, so a 404 or another API error propagates as
//!   the original's next poll would propagate it;
//! - the Sandbox's pod (`fieldSelector=metadata.name=<pod>`: the Sandbox's `status.podName`
//!   when it names one, else the Sandbox's own name, which agent-sandbox gives its pod; the
//!   watch moves when `status.podName` does): its container states and scheduling condition
//!   ([`pod`]), so an image that cannot be pulled, a container that cannot be created or keeps
//!   crashing, or a pod the scheduler cannot place fails the wait with the kubelet's or the
//!   scheduler's words ([`messages`]). It is opened once the Sandbox watch is.
//!
//! And on timers: a Sandbox with no status at all [`STARTUP_WINDOW_MS`] after its
//! `creationTimestamp` (server time, so a resumed lease's old Sandbox is judged at once) fails
//! naming the agent-sandbox controller; an unschedulable pod fails after
//! `unschedulableGraceSec` ([`ReadinessLimits`]).
//!
//! When the API server refuses the Sandbox watch (403: a credential without the `watch` verb;
//! 405: not served), the wait is the original's: a GET every `poll_ms`, and no pod reads. The
//! wait's deadline and its timeout error ([`Error::SandboxReadyTimeout`]) are the original's.

mod feed;
mod messages;
mod pod;
#[cfg(test)]
mod pod_tests;
mod sandbox;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod watch_tests;

use serde_json::{Value, json};

use self::feed::{Feed, Item};
use self::pod::{PodFailure, PodTracker};
use self::sandbox::{Readiness, created_ms, has_no_status, readiness};
use super::clock::{Clock, PollOptions};
use super::sandbox_api_version::{SANDBOX_GROUP, SANDBOX_PLURAL, SandboxApiVersion};
use super::sandbox_backend::{get_sandbox, map_sandbox_phase};
use super::status::SandboxStatus;
use crate::cluster::{ApiMethod, ClusterApi};
use crate::config::KubernetesConfig;
use crate::error::Error;

pub use messages::{
    ContainerFailure, ContainerTrouble, KUBELET_TEXT_MAX_CHARS, container_failure_message,
    kubelet_text, no_controller_message, unschedulable_message,
};

/// How long after its creation a Sandbox may have no status at all (no controller has
/// reconciled it yet), and how long a pod may report the lease's own Secret missing.
pub const STARTUP_WINDOW_MS: u64 = 30_000;

/// The limits of a ready-wait that come from the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadinessLimits {
    /// How long a pod may stay unschedulable (`unschedulableGraceSec`).
    pub unschedulable_grace_ms: u64,
}

impl ReadinessLimits {
    /// The default `unschedulableGraceSec`.
    pub const DEFAULT_UNSCHEDULABLE_GRACE_SEC: u64 = 60;

    /// The limits `config` sets.
    pub fn of(config: &KubernetesConfig) -> Self {
        match config.unschedulable_grace_sec {
            // A validated integer >= 1; `as` saturates one too large for u64.
            Some(seconds) => Self {
                unschedulable_grace_ms: (seconds * 1000.0) as u64,
            },
            None => Self::default(),
        }
    }
}

impl Default for ReadinessLimits {
    fn default() -> Self {
        Self {
            unschedulable_grace_ms: Self::DEFAULT_UNSCHEDULABLE_GRACE_SEC * 1000,
        }
    }
}

/// [`wait_for_sandbox_ready_with`] with the default limits.
pub async fn wait_for_sandbox_ready<C: ClusterApi + ?Sized>(
    cluster: &C,
    clock: &dyn Clock,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
    options: PollOptions,
) -> Result<SandboxStatus, Error> {
    let limits = ReadinessLimits::default();
    wait_for_sandbox_ready_with(cluster, clock, version, namespace, name, options, limits).await
}

/// `waitForSandboxReady`: waits until the Sandbox's pod can be exec'd into.
///
/// Ready returns the *phase* mapping of the Sandbox (a condition-only Ready reports `Pending`,
/// as in the original). Failed, Terminating, a pod that cannot start and a Sandbox no
/// controller reconciles fail at once; API errors of the Sandbox's reads (404 included)
/// propagate without retry; running out of `options.timeout_ms` is
/// [`Error::SandboxReadyTimeout`].
pub async fn wait_for_sandbox_ready_with<C: ClusterApi + ?Sized>(
    cluster: &C,
    clock: &dyn Clock,
    version: SandboxApiVersion,
    namespace: &str,
    name: &str,
    options: PollOptions,
    limits: ReadinessLimits,
) -> Result<SandboxStatus, Error> {
    let mut wait = Wait {
        cluster,
        clock,
        version,
        namespace,
        name,
        poll_ms: options.poll_ms,
        timeout_ms: options.timeout_ms,
        deadline: clock.now_ms().saturating_add(options.timeout_ms),
        limits,
        no_status_due: None,
        pod_name: name.to_string(),
        pods: PodTracker::new(name),
    };
    if clock.now_ms() >= wait.deadline {
        return Err(wait.timeout());
    }
    let cr = wait.get_through_outage().await?;
    if let Some(done) = wait.judge(&cr) {
        return done;
    }
    wait.follow().await
}

/// The pod a Sandbox names in `status.podName`, when it is not blank.
fn pod_name_of(cr: &Value) -> Option<String> {
    let status = cr.get("status")?;
    let name = status.get("podName")?.as_str()?;
    (!js_compat::string::trim(name).is_empty()).then(|| name.to_string())
}

/// One ready-wait in progress.
struct Wait<'a, C: ?Sized> {
    cluster: &'a C,
    clock: &'a dyn Clock,
    version: SandboxApiVersion,
    namespace: &'a str,
    name: &'a str,
    poll_ms: u64,
    timeout_ms: u64,
    /// On the clock.
    deadline: u64,
    limits: ReadinessLimits,
    /// When (Unix ms) a Sandbox still without status means no controller; `None` while it has
    /// a status.
    no_status_due: Option<u64>,
    /// The name of the Sandbox's pod, as its last reading says.
    pod_name: String,
    pods: PodTracker,
}

/// What woke the wait.
enum Step {
    Sandbox(Item),
    /// A poll's read of the Sandbox (the original's wait, once the watch was refused).
    Polled(Result<Value, Error>),
    Pod(Item),
    /// A timer (or the deadline) came.
    Tick,
}

impl<C: ClusterApi + ?Sized> Wait<'_, C> {
    async fn get(&self) -> Result<Value, Error> {
        get_sandbox(self.cluster, self.version, self.namespace, self.name).await
    }

    /// A read of the Sandbox that rides out an API server it cannot reach (one restarting, a
    /// connection refused or reset: no HTTP answer), tried again every `poll_ms` while the wait
    /// has time left, the last such error returned when it has not (issue #38: a restart of
    /// the API server under a ready-wait failed the execute at once with `connection refused`).
    /// An HTTP answer (404 included) still ends the wait at once.
    async fn get_through_outage(&self) -> Result<Value, Error> {
        loop {
            match self.get().await {
                Err(Error::Api { code: 0, .. })
                    if self.clock.now_ms().saturating_add(self.poll_ms) < self.deadline =>
                {
                    self.clock.sleep(self.poll_ms).await;
                }
                read => return read,
            }
        }
    }

    fn timeout(&self) -> Error {
        Error::SandboxReadyTimeout {
            namespace: self.namespace.into(),
            name: self.name.into(),
            timeout_ms: self.timeout_ms,
        }
    }

    fn sandbox_ref(&self) -> String {
        format!("Sandbox {}/{}", self.namespace, self.name)
    }

    /// Judges one reading of the Sandbox: `Some` ends the wait.
    fn judge(&mut self, cr: &Value) -> Option<Result<SandboxStatus, Error>> {
        if let Some(pod) = pod_name_of(cr) {
            self.pod_name = pod;
        }
        let failed = |message: String| Some(Err(Error::Failed(message)));
        match readiness(cr) {
            Readiness::Ready => Some(Ok(map_sandbox_phase(cr))),
            Readiness::Failed { reason, message } => failed(format!(
                "{} failed: {reason} \u{2014} {message}",
                self.sandbox_ref()
            )),
            Readiness::Terminating => failed(format!(
                "{} is Terminating \u{2014} cannot wait for Ready",
                self.sandbox_ref()
            )),
            Readiness::NotYet if has_no_status(cr) => {
                let unix_now = self.clock.unix_ms();
                let created = created_ms(cr).or(self.no_status_due.map(|d| d - STARTUP_WINDOW_MS));
                let due = created
                    .unwrap_or(unix_now)
                    .saturating_add(STARTUP_WINDOW_MS);
                self.no_status_due = Some(due);
                (due <= unix_now).then(|| {
                    Err(Error::Failed(no_controller_message(
                        self.namespace,
                        self.name,
                    )))
                })
            }
            Readiness::NotYet => {
                self.no_status_due = None;
                None
            }
        }
    }

    /// The failure a timer has brought, if any.
    fn due_failure(&self) -> Option<Error> {
        let unix_now = self.clock.unix_ms();
        if self.no_status_due.is_some_and(|due| due <= unix_now) {
            return Some(Error::Failed(no_controller_message(
                self.namespace,
                self.name,
            )));
        }
        let failure = self
            .pods
            .due(unix_now, self.limits.unschedulable_grace_ms)?;
        Some(self.pod_error(failure))
    }

    fn pod_error(&self, failure: PodFailure) -> Error {
        Error::Failed(match failure {
            PodFailure::Container(failure) => {
                container_failure_message(self.namespace, self.name, &failure)
            }
            PodFailure::Unschedulable(message) => {
                let grace_sec = self.limits.unschedulable_grace_ms / 1000;
                unschedulable_message(self.namespace, self.name, grace_sec, &message)
            }
        })
    }

    /// How long until the deadline or the next timer.
    fn next_wake_ms(&self, now: u64) -> u64 {
        let unix_now = self.clock.unix_ms();
        let timers = [
            self.no_status_due,
            self.pods.next_due(self.limits.unschedulable_grace_ms),
        ];
        timers
            .into_iter()
            .flatten()
            .map(|due| due.saturating_sub(unix_now))
            .fold(self.deadline.saturating_sub(now), u64::min)
    }

    /// The Sandbox's next word: from its watch, or (once the watch was refused) the next poll,
    /// `poll_at` on the clock.
    async fn sandbox_step(&self, feed: &mut Feed, poll_at: &mut Option<u64>) -> Step {
        let Some(at) = *poll_at else {
            return Step::Sandbox(feed.next(self.cluster, self.clock, self.deadline).await);
        };
        let now = self.clock.now_ms();
        if at > now {
            self.clock.sleep(at - now).await;
        }
        if self.clock.now_ms() >= self.deadline {
            return Step::Tick;
        }
        let read = self.get().await;
        *poll_at = Some(self.clock.now_ms().saturating_add(self.poll_ms));
        Step::Polled(read)
    }

    /// The watch of the pod the Sandbox names now.
    fn pod_feed(&self) -> (String, Feed) {
        let request = json!({"namespace": self.namespace,
            "fieldSelector": format!("metadata.name={}", self.pod_name)});
        let feed = Feed::new(ApiMethod::WatchNamespacedPod, request);
        (self.pod_name.clone(), feed)
    }

    /// Follows the Sandbox and its pod until the wait is settled.
    async fn follow(mut self) -> Result<SandboxStatus, Error> {
        let mut sandboxes = Feed::new(
            ApiMethod::WatchNamespacedCustomObject,
            json!({"group": SANDBOX_GROUP, "version": self.version.version(),
                "namespace": self.namespace, "plural": SANDBOX_PLURAL,
                "fieldSelector": format!("metadata.name={}", self.name)}),
        );
        let mut poll_at: Option<u64> = None;
        // The Sandbox watch first: where it is refused, the pod is not watched either.
        if let Some(item) = sandboxes
            .open_first(self.cluster, self.clock, self.deadline)
            .await
        {
            let step = Step::Sandbox(item);
            if let Some(done) = self.take(step, &mut sandboxes, &mut poll_at).await {
                return done;
            }
        }
        let (mut pod_target, mut pods) = self.pod_feed();
        loop {
            if pod_target != self.pod_name {
                self.pods.clear();
                (pod_target, pods) = self.pod_feed();
            }
            if let Some(err) = self.due_failure() {
                return Err(err);
            }
            let now = self.clock.now_ms();
            if now >= self.deadline {
                return Err(self.timeout());
            }
            let wake_ms = self.next_wake_ms(now);
            let polling = poll_at.is_some();
            // Biased: the Sandbox first (a Ready event wins), then the pod, then the timers.
            let step = tokio::select! {
                biased;
                step = self.sandbox_step(&mut sandboxes, &mut poll_at) => step,
                item = pods.next(self.cluster, self.clock, self.deadline), if !polling => {
                    Step::Pod(item)
                }
                () = async { self.clock.sleep(wake_ms).await } => Step::Tick,
            };
            if let Some(done) = self.take(step, &mut sandboxes, &mut poll_at).await {
                return done;
            }
        }
    }

    /// Takes in one step: `Some` ends the wait.
    async fn take(
        &mut self,
        step: Step,
        sandboxes: &mut Feed,
        poll_at: &mut Option<u64>,
    ) -> Option<Result<SandboxStatus, Error>> {
        match step {
            Step::Sandbox(Item::Changed(cr)) => self.judge(&cr),
            Step::Sandbox(Item::Deleted(_) | Item::Restart) => {
                sandboxes.start_over();
                match self.get_through_outage().await {
                    Ok(cr) => self.judge(&cr),
                    Err(err) => Some(Err(err)),
                }
            }
            Step::Sandbox(Item::Refused) => {
                *poll_at = Some(self.clock.now_ms().saturating_add(self.poll_ms));
                None
            }
            Step::Polled(Ok(cr)) => self.judge(&cr),
            Step::Polled(Err(err)) => Some(Err(err)),
            Step::Pod(Item::Changed(pod)) => {
                let failure = self.pods.changed(pod, self.clock.unix_ms())?;
                Some(Err(self.pod_error(failure)))
            }
            Step::Pod(Item::Deleted(pod)) => {
                self.pods.deleted(&pod);
                None
            }
            Step::Pod(Item::Restart) => {
                self.pods.clear();
                None
            }
            Step::Pod(Item::Refused) | Step::Tick => None,
        }
    }
}
