//! The fixed operation label of a failed request, chosen from the request path (query included)
//! by substring, in the original's order of precedence. Paths, queries and bodies never reach a
//! message: they can hold credentials or private workspace names.

pub(crate) fn label_for(path: &str) -> &'static str {
    if path.contains("/files?") {
        "file transfer"
    } else if path.contains("/stdin/close") {
        "stdin close"
    } else if path.contains("/connect?") {
        "output connection"
    } else if path.ends_with("/processes") {
        "process creation"
    } else if path.contains("/processes/") {
        "process cleanup"
    } else if path.contains("/exec") {
        "workspace command"
    } else {
        "sandbox lifecycle"
    }
}

#[cfg(test)]
mod tests {
    use super::label_for;

    #[test]
    fn precedence_follows_the_original() {
        let cases = [
            ("/sandboxes/a/files?path=%2Fx%2Fexec", "file transfer"),
            ("/sandboxes/a/processes/p/stdin/close", "stdin close"),
            (
                "/sandboxes/a/processes/p/connect?after=0",
                "output connection",
            ),
            ("/sandboxes/a/processes", "process creation"),
            ("/sandboxes/a/processes/p?grace_ms=1000", "process cleanup"),
            ("/sandboxes/a/processes/p/input", "process cleanup"),
            ("/sandboxes/a/exec?stream=true", "workspace command"),
            ("/sandboxes/a/exec", "workspace command"),
            ("/sandboxes/a/fork", "sandbox lifecycle"),
            ("/sandboxes", "sandbox lifecycle"),
            ("/rootfs", "sandbox lifecycle"),
        ];
        for (path, label) in cases {
            assert_eq!(label_for(path), label, "{path}");
        }
    }
}
