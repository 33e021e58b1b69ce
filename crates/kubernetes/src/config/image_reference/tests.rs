//! The grammar's cases: references and `imageRegistry` values, accepted and refused, each
//! refusal with its reason verbatim.

use super::*;

const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

#[test]
fn valid_references() {
    let digest = format!("ghcr.io/acme/agent@sha256:{SHA}");
    let tag_and_digest = format!("ghcr.io/acme/agent:v1@sha256:{SHA}");
    let long_tag = format!("a:{}", "t".repeat(128));
    for reference in [
        "busybox",
        "busybox:1.36",
        "library/busybox:latest",
        "docker.io/library/busybox",
        "ghcr.io/paperclipai/agent-runtime-claude:git-38d8f371722b315d2fb3bbaa512518742e33ce2f",
        "localhost/agent",
        "localhost:5000/agent:dev",
        "registry.example:5000/team/sub/agent:1.0",
        "127.0.0.1:5000/a",
        "[::1]:5000/agent:v1",
        "[fe80::1]/agent",
        "Registry.Example.COM/acme/agent",
        "a/b__c/d-e/f.g/h---i",
        "a:_tag",
        "a:TAG.1-x",
        digest.as_str(),
        tag_and_digest.as_str(),
        long_tag.as_str(),
        "localhost:5000",
    ] {
        assert_eq!(check_image_reference(reference), Ok(()), "{reference}");
    }
    let sha512 = format!("a@sha512:{}", "f".repeat(128));
    assert_eq!(check_image_reference(&sha512), Ok(()));
}

fn reason(reference: &str) -> String {
    check_image_reference(reference).expect_err(reference)
}

#[test]
fn invalid_references_say_why() {
    assert_eq!(reason(""), "it is empty");
    assert_eq!(
        reason("https://ghcr.io/acme/agent-runtime-claude:v1"),
        "it starts with a URL scheme; an image reference has none (write host/path:tag)"
    );
    assert_eq!(
        reason("ghcr.io/acme/Agent:v1"),
        "the repository path component \"Agent\" has upper-case letters; repository paths are lower-case"
    );
    assert_eq!(
        reason("ghcr.io/acme/agent:-v1"),
        "the tag \"-v1\" is not 1 to 128 letters, digits, `_`, `.` or `-` starting with a letter, digit or `_`"
    );
    assert_eq!(
        reason("ghcr.io/acme/agent:"),
        "the tag \"\" is not 1 to 128 letters, digits, `_`, `.` or `-` starting with a letter, digit or `_`"
    );
    assert_eq!(
        reason(&format!("a:{}", "t".repeat(129))),
        format!(
            "the tag \"{}\" is not 1 to 128 letters, digits, `_`, `.` or `-` starting with a letter, digit or `_`",
            "t".repeat(129)
        )
    );
    assert_eq!(
        reason("ghcr.io/acme/agent@sha256:abc"),
        "the sha256 digest is not 64 lower-case hex digits"
    );
    assert_eq!(
        reason(&format!("a@sha256:{}", SHA.to_uppercase())),
        "the sha256 digest is not 64 lower-case hex digits"
    );
    assert_eq!(
        reason("a@md5:0123"),
        "the digest algorithm \"md5\" is not sha256, sha384 or sha512"
    );
    assert_eq!(
        reason("a@0123"),
        "the digest \"0123\" is not algorithm:hex (e.g. sha256: and 64 hex digits)"
    );
    assert_eq!(
        reason("ghcr.io//agent"),
        "the path has an empty component (`//`, or a `/` at an end)"
    );
    assert_eq!(
        reason("ghcr.io/acme/"),
        "the path has an empty component (`//`, or a `/` at an end)"
    );
    assert_eq!(reason(":v1"), "it has no repository name");
    assert_eq!(
        reason("ghcr.io/ac me/agent"),
        "it holds a space or another whitespace character"
    );
    assert_eq!(
        reason("registry.example:99999/agent"),
        "the port \"99999\" is not a number from 1 to 65535"
    );
    assert_eq!(
        reason("registry.example:0/agent"),
        "the port \"0\" is not a number from 1 to 65535"
    );
    assert_eq!(
        reason("-bad.example/agent"),
        "the host \"-bad.example\" is not a host name (letters, digits and `-` in dot-separated labels, none starting or ending with `-`)"
    );
    assert_eq!(
        reason("a/b..c"),
        "the repository path component \"b..c\" is not lower-case letters and digits joined by `.`, `_`, `__` or `-`"
    );
    assert_eq!(
        reason("a/b___c"),
        "the repository path component \"b___c\" is not lower-case letters and digits joined by `.`, `_`, `__` or `-`"
    );
    assert_eq!(
        reason("ghcr.io/acmé/agent"),
        "it holds a control or non-ASCII character"
    );
    // Upper case alone in a single component is a path, not a domain.
    assert_eq!(
        reason("Agent"),
        "the repository path component \"Agent\" has upper-case letters; repository paths are lower-case"
    );
    let long = format!("r.example/{}", "a".repeat(250));
    assert_eq!(
        reason(&long),
        "its name is 260 characters long, over the 255 allowed"
    );
}

fn registry(value: &str) -> Result<String, String> {
    parse_image_registry(value)
}

#[test]
fn registry_forms_accepted_and_their_prefix() {
    for (value, prefix) in [
        ("ghcr.io/acme", "ghcr.io/acme"),
        ("https://ghcr.io/acme", "ghcr.io/acme"),
        ("HTTPS://ghcr.io/acme/", "ghcr.io/acme"),
        (
            "http://registry.local:5000/team/sub",
            "registry.local:5000/team/sub",
        ),
        ("registry.local:5000", "registry.local:5000"),
        ("https://r.example", "r.example"),
        ("localhost/mirror", "localhost/mirror"),
        ("localhost:5000/x", "localhost:5000/x"),
        ("[::1]:5000/x", "[::1]:5000/x"),
        ("r.example/m///", "r.example/m"),
    ] {
        assert_eq!(registry(value), Ok(prefix.to_string()), "{value}");
    }
}

#[test]
fn registry_refusals_say_what_is_wrong() {
    let cases = [
        ("", "it is empty"),
        ("  ", "it is empty"),
        (
            "ghcr.io/ac me",
            "it holds a space or another whitespace character",
        ),
        (
            "ftp://ghcr.io/acme",
            "the scheme \"ftp\" is not https or http (or leave the scheme out)",
        ),
        (
            "oci://ghcr.io/acme",
            "the scheme \"oci\" is not https or http (or leave the scheme out)",
        ),
        (
            "https://user:secret@ghcr.io/acme",
            "it holds a user name or password (`…@`); give registry credentials through imagePullSecrets instead",
        ),
        (
            "https://ghcr.io/acme?x=1",
            "it has a query or fragment (`?` or `#`); write only host and path",
        ),
        (
            "ghcr.io/acme#top",
            "it has a query or fragment (`?` or `#`); write only host and path",
        ),
        ("https://", "it has no registry host"),
        ("https:///acme", "it has no registry host"),
        (
            "ghcr.io:port/acme",
            "the port \"port\" is not a number from 1 to 65535",
        ),
        (
            "ghcr.io:70000/acme",
            "the port \"70000\" is not a number from 1 to 65535",
        ),
        (
            "ghcr_io/acme",
            "the host \"ghcr_io\" is not a host name (letters, digits and `-` in dot-separated labels, none starting or ending with `-`)",
        ),
        (
            "ghcr..io/acme",
            "the host \"ghcr..io\" is not a host name (letters, digits and `-` in dot-separated labels, none starting or ending with `-`)",
        ),
        (
            "ghcr.io/Acme",
            "the repository path component \"Acme\" has upper-case letters; repository paths are lower-case",
        ),
        (
            "ghcr.io/a//b",
            "the path has an empty component (`//`, or a `/` at an end)",
        ),
        (
            "ghcr.io/a-/b",
            "the repository path component \"a-\" is not lower-case letters and digits joined by `.`, `_`, `__` or `-`",
        ),
        (
            "acme",
            "\"acme\" has no dot or port and is not localhost, so the container runtime would read it as a Docker Hub path, not a registry host (write the registry's full host, e.g. docker.io/acme)",
        ),
        (
            "nope",
            "\"nope\" has no dot or port and is not localhost, so the container runtime would read it as a Docker Hub path, not a registry host (write the registry's full host, e.g. docker.io/nope)",
        ),
        (
            "[::1/x",
            "the host \"[::1\" opens an IPv6 address it does not close",
        ),
    ];
    for (value, expected) in cases {
        assert_eq!(registry(value), Err(expected.to_string()), "{value:?}");
    }
    // The refused credentials are never quoted back.
    let reason = registry("https://user:secret@ghcr.io/acme").unwrap_err();
    assert!(!reason.contains("secret") && !reason.contains("user:"));
}

#[test]
fn a_rewritten_built_in_image_with_an_accepted_registry_is_a_valid_reference() {
    for value in [
        "https://ghcr.io/acme",
        "registry.local:5000/team",
        "[::1]:5000",
    ] {
        let prefix = registry(value).unwrap();
        let reference = format!("{prefix}/agent-runtime-claude:v1");
        assert_eq!(check_image_reference(&reference), Ok(()), "{reference}");
    }
}
