//! Sandbox lifecycle calls: create, fork, get, delete, auto-pause, egress, state transitions,
//! the rootfs catalog and one-shot exec.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// How an ownership name starts; 16 random lower-case hex digits follow.
pub const OWNERSHIP_NAME_PREFIX: &str = "pc-";

/// The `name` a new sandbox is created with: `pc-` and 64 random bits as 16 lower-case hex
/// digits (19 characters: lower-case letters, digits and `-`, starting with a letter, within the
/// 22 the vendor's own tooling keeps names to). The API has no idempotency key, but a name is
/// unique per user among live sandboxes, so this token finds the sandbox of a create whose reply
/// was lost (see [`CreateOsClient::create_sandbox`]).
pub fn ownership_name() -> String {
    let mut bytes = [0u8; 8];
    // The OS random source failing is not recoverable here; the UUIDs of markers use it too.
    getrandom::fill(&mut bytes).expect("the OS random source");
    format!("{OWNERSHIP_NAME_PREFIX}{:016x}", u64::from_be_bytes(bytes))
}

/// `GET /sandboxes` page size: the server's maximum (it clamps larger values).
const LIST_PAGE_SIZE: usize = 500;
/// Pages read before the lookup of a lost create gives up (250,000 sandboxes): a service that
/// kept answering full pages must not keep a failed acquire alive for ever.
const MAX_LIST_PAGES: usize = 500;

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
    /// service's (`auto_pause_after_seconds`), destruction stays with the host. `name` (an
    /// [`ownership_name`]) comes last.
    ///
    /// When the create fails without proving that nothing was made (see
    /// [`Error::outcome_unknown`]), the sandbox named `name` is looked up and deleted before the
    /// error is returned, under fresh per-request deadlines (the caller's may be what failed).
    pub async fn create_sandbox(
        &self,
        signal: &Signal,
        rootfs: Option<&str>,
        egress: &[String],
        auto_pause_after_seconds: Option<u64>,
        name: &str,
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
        body.insert("name".into(), json!(name));
        let created = self
            .json(
                Method::POST,
                "/sandboxes",
                Some(Value::Object(body)),
                Some(signal),
            )
            .await
            .and_then(|data| identifier(data.get("id")));
        match created {
            Err(error) if error.outcome_unknown() => {
                Err(self.delete_unconfirmed_creation(name, error).await)
            }
            created => created,
        }
    }

    /// After a create whose outcome is unknown: deletes every live sandbox named `name`. Returns
    /// the error to report: the create's own, or, when the lookup or a delete fails, one naming
    /// the sandbox to delete.
    async fn delete_unconfirmed_creation(&self, name: &str, error: Error) -> Error {
        let cleaned = async {
            for id in self.live_sandboxes_named(name).await? {
                self.destroy_sandbox(&Value::from(id), None).await?;
            }
            Ok::<(), Error>(())
        };
        match cleaned.await {
            Ok(()) => error,
            Err(_) => Error::msg(messages::creation_cleanup_unconfirmed(name)),
        }
    }

    /// The ids of the sandboxes named `name` that are not destroyed, read page by page from
    /// `GET /sandboxes?limit=500&offset=…` (`{data: [SandboxView], pagination: {total, …}}`),
    /// each page under its own `timeoutMs` deadline. A page that is not of that shape fails the
    /// lookup.
    pub async fn live_sandboxes_named(&self, name: &str) -> Result<Vec<String>> {
        let mut found = Vec::new();
        let mut offset = 0;
        for _ in 0..MAX_LIST_PAGES {
            let path = format!("/sandboxes?limit={LIST_PAGE_SIZE}&offset={offset}");
            let page = self.json(Method::GET, &path, None, None).await?;
            let (Some(Value::Array(views)), Some(total)) = (
                page.get("data"),
                page.get("pagination")
                    .and_then(|p| p.get("total"))
                    .and_then(Value::as_u64),
            ) else {
                return Err(Error::msg(messages::INVALID_RESPONSE));
            };
            for view in views {
                let named = view.get("name").and_then(Value::as_str) == Some(name);
                let status = view.get("status").and_then(Value::as_str);
                if named && status != Some("destroyed") {
                    found.push(identifier(view.get("id"))?);
                }
            }
            offset += views.len();
            if views.is_empty() || offset as u64 >= total {
                return Ok(found);
            }
        }
        Err(Error::msg(messages::INVALID_RESPONSE))
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
    /// fork that fails after it exists is deleted; if that fails too, the fork is reported. A
    /// fork request whose outcome is unknown fails with a message naming the template and the
    /// time of the request.
    pub async fn fork_sandbox(
        &self,
        source_id: &str,
        signal: &Signal,
        egress: &[String],
        auto_pause_after_seconds: Option<u64>,
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
        let body = json!({ "start_paused": false, "egress": egress, "ingress_enabled": false });
        let mut conflicts = 0;
        let mut requested_at;
        let forked = loop {
            signal.throw_if_aborted()?;
            requested_at = SystemTime::now();
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
        // A fork request cannot carry a name: a fork whose outcome is unknown cannot be told
        // from anyone else's sandbox, so nothing is deleted and the operator is told what to
        // look for.
        let id = match forked {
            Ok(id) => id,
            Err(error) if error.outcome_unknown() => {
                let at = js_compat::date::to_iso_string(unix_ms(requested_at)).unwrap_or_default();
                return Err(Error::msg(messages::fork_unconfirmed(source_id, &at)));
            }
            Err(error) => return Err(error),
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

/// Milliseconds since the Unix epoch, as JS `Date.now()` counts them.
fn unix_ms(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0.0, |elapsed| elapsed.as_millis() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership_names_are_short_lower_case_and_random() {
        let (a, b) = (ownership_name(), ownership_name());
        assert_ne!(a, b);
        for name in [a, b] {
            assert_eq!(name.len(), 19, "{name}");
            let hex = name
                .strip_prefix(OWNERSHIP_NAME_PREFIX)
                .expect("the prefix");
            assert!(hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
        }
    }
}
