//! The ready-wait's own failure messages (additions: the original waits to its deadline), each
//! naming what the kubelet, the scheduler or the missing controller said, bounded and without
//! credentials.

/// The most characters of a kubelet's or scheduler's message a failure carries (an image pull
/// error can run to kilobytes of registry output).
pub const KUBELET_TEXT_MAX_CHARS: usize = 400;
/// The most characters of an image reference a failure carries.
const IMAGE_MAX_CHARS: usize = 256;

/// What kind of trouble a container's state reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerTrouble {
    /// `ErrImagePull` (seen twice), `ImagePullBackOff`, `InvalidImageName`.
    Image,
    /// `CreateContainerConfigError`, `CreateContainerError`.
    Create,
    /// `RunContainerError`, `CrashLoopBackOff`.
    Crash,
}

/// A container that cannot start: which one, its image, and the kubelet's reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerFailure {
    pub trouble: ContainerTrouble,
    pub container: String,
    pub image: String,
    pub reason: String,
    pub message: String,
}

/// `K8S_POD_IMAGE_PULL_FAILED`, `K8S_POD_CONTAINER_CREATE_FAILED` or
/// `K8S_POD_CONTAINER_CRASHING`.
pub fn container_failure_message(
    namespace: &str,
    name: &str,
    failure: &ContainerFailure,
) -> String {
    let ContainerFailure {
        container, reason, ..
    } = failure;
    let image = bounded(&failure.image, IMAGE_MAX_CHARS);
    let message = kubelet_text(&failure.message);
    match failure.trouble {
        ContainerTrouble::Image => format!(
            "Sandbox {namespace}/{name} cannot start: the node cannot pull image {image} for container {container} ({reason}: {message}); check the image reference, that the node can reach its registry, and imagePullSecrets."
        ),
        ContainerTrouble::Create => format!(
            "Sandbox {namespace}/{name} cannot start: the kubelet cannot create container {container} from image {image} ({reason}: {message})."
        ),
        ContainerTrouble::Crash => format!(
            "Sandbox {namespace}/{name} cannot start: container {container} of image {image} does not stay up ({reason}: {message}); the image must provide /usr/bin/tini and /bin/sh."
        ),
    }
}

/// `K8S_POD_UNSCHEDULABLE`: the scheduler's message after the grace.
pub fn unschedulable_message(namespace: &str, name: &str, grace_sec: u64, message: &str) -> String {
    let message = kubelet_text(message);
    format!(
        "Sandbox {namespace}/{name} cannot start: its pod has been unschedulable for more than {grace_sec}s ({message}); free or add node capacity, lower defaultResources, or raise unschedulableGraceSec."
    )
}

/// `K8S_SANDBOX_NO_CONTROLLER`.
pub fn no_controller_message(namespace: &str, name: &str) -> String {
    format!(
        "Sandbox {namespace}/{name} has no status 30s after it was created: no agent-sandbox controller is reconciling it; check that the agent-sandbox controller is installed and running."
    )
}

/// A kubelet's or scheduler's text as a failure carries it: on one line, the user and password
/// of any URL in it dropped, at most [`KUBELET_TEXT_MAX_CHARS`] characters.
pub fn kubelet_text(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    bounded(&without_url_credentials(&one_line), KUBELET_TEXT_MAX_CHARS)
}

/// `text` cut to `max` characters, an ellipsis marking the cut.
fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}\u{2026}", &text[..cut]),
    }
}

/// Every `scheme://user:password@host` as `scheme://host` (a registry URL in a pull error may
/// carry credentials).
fn without_url_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        match tail[..authority_end].rfind('@') {
            Some(userinfo_end) => rest = &tail[userinfo_end + 1..],
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_text_is_one_bounded_line_without_credentials() {
        assert_eq!(
            kubelet_text("pull https://bob:s3cret@reg.example/v2/x failed\nretry"),
            "pull https://reg.example/v2/x failed retry"
        );
        assert_eq!(kubelet_text("a://@b c://d"), "a://b c://d");
        let long = "é".repeat(KUBELET_TEXT_MAX_CHARS + 5);
        let cut = kubelet_text(&long);
        assert_eq!(cut.chars().count(), KUBELET_TEXT_MAX_CHARS + 1);
        assert!(cut.ends_with('\u{2026}'));
        assert_eq!(kubelet_text("short"), "short");
    }
}
