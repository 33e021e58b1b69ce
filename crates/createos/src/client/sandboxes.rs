//! Sandbox lifecycle calls: create, fork, get, delete, auto-pause, egress, state transitions,
//! the rootfs catalog and one-shot exec.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Map, Value, json};

use super::{CreateOsClient, identifier, identifier_str, object};
use crate::error::{Error, Result};
use crate::messages;
use crate::signal::Signal;
use js_compat::string;

/// How often a transition or a conflicting fork is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(250);
/// 409 answers to a fork that are retried before the 41st is reported.
const MAX_FORK_CONFLICTS: u32 = 40;

/// The label every sandbox this provider creates carries: a fresh random token per acquisition,
/// so that a sandbox whose create reply never arrived can still be found and deleted (the API
/// has no idempotency key; see `lease::acquire`).
pub const ACQUISITION_LABEL: &str = "paperclip.ai/acquisition-id";

/// A sandbox as `GET /sandboxes/{id}` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxInfo {
    pub id: String,
    pub status: String,
}

/// The target of [`CreateOsClient::transition`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Desired {
    Running,
    Paused,
}

impl Desired {
    pub fn as_str(self) -> &'static str {
        match self {
            Desired::Running => "running",
            Desired::Paused => "paused",
        }
    }
}

impl CreateOsClient {
    /// `GET /sandboxes/{id}`: the answer must name the same sandbox and a string status.
    pub async fn get_sandbox(&self, id: &str, signal: Option<&Signal>) -> Result<SandboxInfo> {
        let path = format!("/sandboxes/{}", identifier_str(id)?);
        let data = self.json(Method::GET, &path, None, signal).await?;
        match (data.get("id"), data.get("status")) {
            (Some(Value::String(got)), Some(Value::String(status))) if got == id => {
                Ok(SandboxInfo {
                    id: id.to_owned(),
                    status: status.clone(),
                })
            }
            _ => Err(Error::msg(messages::SANDBOX_IDENTITY_INVALID)),
        }
    }

    /// `POST /sandboxes`: optional fields are left out when empty; the idle timer is the
    /// service's (`auto_pause_after_seconds`), destruction stays with the host.
    pub async fn create_sandbox(
        &self,
        signal: &Signal,
        rootfs: Option<&str>,
        egress: &[String],
        auto_pause_after_seconds: Option<u64>,
        acquisition: Option<&str>,
    ) -> Result<String> {
        let mut body = Map::new();
        body.insert("shape".into(), json!(self.config.shape));
        if let Some(rootfs) = rootfs.filter(|r| !r.is_empty()) {
            body.insert("rootfs".into(), json!(rootfs));
        }
        if let Some(region) = self.config.region.as_deref().filter(|r| !r.is_empty()) {
            body.insert("region".into(), json!(region));
        }
        if !egress.is_empty() {
            body.insert("egress".into(), json!(egress));
        }
        if let Some(seconds) = auto_pause_after_seconds {
            body.insert("auto_pause_after_seconds".into(), json!(seconds));
        }
        body.insert("ingress_enabled".into(), json!(false));
        if let Some(token) = acquisition {
            body.insert("labels".into(), json!({ ACQUISITION_LABEL: token }));
        }
        let created = self
            .json(
                Method::POST,
                "/sandboxes",
                Some(Value::Object(body)),
                Some(signal),
            )
            .await
            .and_then(|data| identifier(data.get("id")));
        match (created, acquisition) {
            (Err(error), Some(token)) => Err(self.delete_unconfirmed_creation(token, error).await),
            (created, _) => created,
        }
    }

    /// After a create or fork request failed: unless the service answered with a 4xx (it
    /// refused, so nothing was made), deletes every sandbox labelled with acquisition `token`,
    /// under fresh per-request deadlines (the caller's may be what failed). Returns the error to
    /// report: the original one, or, when the lookup or a delete fails, one naming the label.
    async fn delete_unconfirmed_creation(&self, token: &str, error: Error) -> Error {
        if error
            .status()
            .is_some_and(|status| (400..500).contains(&status))
        {
            return error;
        }
        let cleaned = async {
            for id in self.sandboxes_of_acquisition(token, None).await? {
                self.destroy_sandbox(&Value::from(id), None).await?;
            }
            Ok::<(), Error>(())
        };
        match cleaned.await {
            Ok(()) => error,
            Err(_) => Error::msg(messages::creation_cleanup_unconfirmed(token)),
        }
    }

    /// The sandboxes labelled with acquisition `token` (`GET /sandboxes?label=…`). The answer is
    /// checked here as well: only a sandbox whose own `labels` carry the token is returned, so a
    /// service that ignored the filter could never make us delete someone else's sandbox.
    pub async fn sandboxes_of_acquisition(
        &self,
        token: &str,
        signal: Option<&Signal>,
    ) -> Result<Vec<String>> {
        let selector = format!("{ACQUISITION_LABEL}={token}");
        let path = format!(
            "/sandboxes?label={}",
            js_compat::uri::encode_uri_component(&selector)
        );
        let data = self.json(Method::GET, &path, None, signal).await?;
        let Some(Value::Array(sandboxes)) = data.get("sandboxes") else {
            return Err(Error::msg(messages::INVALID_RESPONSE));
        };
        let ours = sandboxes.iter().filter(|sandbox| {
            sandbox
                .get("labels")
                .and_then(|labels| labels.get(ACQUISITION_LABEL))
                .and_then(Value::as_str)
                == Some(token)
        });
        ours.map(|sandbox| identifier(sandbox.get("id"))).collect()
    }

    /// The requested root filesystem, or the catalog's default (`GET /rootfs`) when none was
    /// requested.
    pub async fn resolve_rootfs(&self, requested: Option<&str>, signal: &Signal) -> Result<String> {
        if let Some(rootfs) = requested.filter(|r| !r.is_empty()) {
            return Ok(rootfs.to_owned());
        }
        let data = self
            .json(Method::GET, "/rootfs", None, Some(signal))
            .await?;
        match data.get("default") {
            Some(Value::String(default))
                if !string::trim(default).is_empty() && !default.contains(['\0', '\r', '\n']) =>
            {
                Ok(string::trim(default).to_owned())
            }
            _ => Err(Error::msg(messages::ROOTFS_DEFAULT_INVALID)),
        }
    }

    /// `PUT /sandboxes/{id}/egress` (sent even when the list is empty).
    pub async fn set_egress(&self, id: &str, egress: &[String], signal: &Signal) -> Result<()> {
        let path = format!("/sandboxes/{}/egress", identifier_str(id)?);
        self.json(
            Method::PUT,
            &path,
            Some(json!({ "egress": egress })),
            Some(signal),
        )
        .await
        .map(drop)
    }

    /// `DELETE /sandboxes/{id}`; a sandbox that is already gone (404) counts as deleted.
    /// Without a signal the delete gets its own `timeoutMs` deadline.
    pub async fn destroy_sandbox(&self, id: &Value, signal: Option<&Signal>) -> Result<()> {
        let path = format!("/sandboxes/{}", identifier(Some(id))?);
        match self.json(Method::DELETE, &path, None, signal).await {
            Err(error) if !error.is_status(404) => Err(error),
            _ => Ok(()),
        }
    }

    /// `PATCH /sandboxes/{id}`: the idle window, or no auto-pause at all for `None`.
    pub async fn set_auto_pause(
        &self,
        id: &str,
        seconds: Option<u64>,
        signal: &Signal,
    ) -> Result<()> {
        let path = format!("/sandboxes/{}", identifier_str(id)?);
        let body = match seconds {
            None => json!({ "disable_auto_pause": true }),
            Some(seconds) => json!({ "auto_pause_after_seconds": seconds }),
        };
        self.json(Method::PATCH, &path, Some(body), Some(signal))
            .await
            .map(drop)
    }

    /// Forks a paused template sandbox, waits for the fork to run and sets its auto-pause. A
    /// fork that fails after it exists is deleted; if that fails too, the fork is reported.
    pub async fn fork_sandbox(
        &self,
        source_id: &str,
        signal: &Signal,
        egress: &[String],
        auto_pause_after_seconds: Option<u64>,
        acquisition: Option<&str>,
    ) -> Result<String> {
        let source = self.get_sandbox(source_id, Some(signal)).await?;
        if source.status != "paused" {
            return Err(Error::msg(messages::TEMPLATE_NOT_PAUSED));
        }
        let path = format!("/sandboxes/{}/fork", identifier_str(source_id)?);
        // An empty list would inherit the template's egress: send the explicit allow-all.
        let egress: Vec<&str> = if egress.is_empty() {
            vec!["*"]
        } else {
            egress.iter().map(String::as_str).collect()
        };
        let mut body = json!({ "start_paused": false, "egress": egress, "ingress_enabled": false });
        if let Some(token) = acquisition {
            body["labels"] = json!({ ACQUISITION_LABEL: token });
        }
        let mut conflicts = 0;
        let forked = loop {
            signal.throw_if_aborted()?;
            match self
                .json(Method::POST, &path, Some(body.clone()), Some(signal))
                .await
            {
                Ok(data) => break identifier(data.get("id")),
                // A template can report paused shortly before it becomes forkable.
                Err(error) if error.is_status(409) && conflicts < MAX_FORK_CONFLICTS => {
                    conflicts += 1;
                    signal.sleep(POLL_INTERVAL).await?;
                }
                Err(error) => break Err(error),
            }
        };
        let id = match (forked, acquisition) {
            (Ok(id), _) => id,
            (Err(error), Some(token)) => {
                return Err(self.delete_unconfirmed_creation(token, error).await);
            }
            (Err(error), None) => return Err(error),
        };
        let setup = async {
            self.transition(&id, Desired::Running, signal).await?;
            self.set_auto_pause(&id, auto_pause_after_seconds, signal)
                .await
        };
        if let Err(error) = setup.await {
            if self
                .destroy_sandbox(&Value::from(id.as_str()), None)
                .await
                .is_err()
            {
                return Err(Error::msg(messages::fork_cleanup_unconfirmed(&id)));
            }
            return Err(error);
        }
        Ok(id)
    }

    /// Polls until the sandbox is `desired`, asking for it once when the state allows
    /// (resume from paused or error, pause from running). A 409 on that request is left to the
    /// next poll. No iteration cap: the signal bounds it.
    pub async fn transition(&self, id: &str, desired: Desired, signal: &Signal) -> Result<()> {
        let mut submitted = false;
        loop {
            signal.throw_if_aborted()?;
            let sandbox = self.get_sandbox(id, Some(signal)).await?;
            let status = sandbox.status.as_str();
            if status == desired.as_str() {
                return Ok(());
            }
            let can_submit = match desired {
                Desired::Running => matches!(status, "paused" | "error"),
                Desired::Paused => status == "running",
            };
            if can_submit && !submitted {
                let action = match desired {
                    Desired::Running => "resume",
                    Desired::Paused => "pause",
                };
                let path = format!("/sandboxes/{id}/{action}");
                match self.json(Method::POST, &path, None, Some(signal)).await {
                    Ok(_) => submitted = true,
                    Err(error) if error.is_status(409) => {}
                    Err(error) => return Err(error),
                }
            } else if !can_submit
                && !matches!(status, "creating" | "pausing" | "resuming" | "forking")
            {
                return Err(Error::msg(messages::transition_failed(
                    desired.as_str(),
                    status,
                )));
            }
            signal.sleep(POLL_INTERVAL).await?;
        }
    }

    /// `POST /sandboxes/{id}/exec` (one-shot, buffered): the `result` object.
    pub async fn exec(
        &self,
        id: &str,
        cmd: &str,
        args: &[&str],
        signal: Option<&Signal>,
    ) -> Result<Map<String, Value>> {
        let path = format!("/sandboxes/{id}/exec");
        let data = self
            .json(
                Method::POST,
                &path,
                Some(json!({ "cmd": cmd, "args": args })),
                signal,
            )
            .await?;
        object(data.get("result")).cloned()
    }
}
