//! The generator of `docs/errors.md`.

use std::fmt::Write;

use crate::{Entry, Provider, Raiser, provider_entries};

/// Renders the whole error reference as Markdown. Deterministic: the same table always gives
/// the same bytes, so a test can tell when the checked-in file is stale.
pub fn render_markdown() -> String {
    let mut out = String::new();
    out.push_str(
        "<!-- Generated from crates/error-catalog; do not edit by hand.\n     \
         Regenerate: UPDATE_DOCS=1 cargo test -p error-catalog --test docs -->\n\n",
    );
    out.push_str("# Error reference\n\n");
    out.push_str(
        "Every error, diagnostic and warning message the CreateOS and Kubernetes sandbox providers \
         can produce, with a stable code, the hooks that raise it, what it means, its common causes \
         and the fix. `${…}` marks a part of the message that is filled in at run time.\n\n\
         The providers throw plain `Error`s whose message is exactly the text below (the code is \
         not part of the message). To look a message up from a terminal:\n\n\
         ```sh\n\
         npx paperclip-sandbox explain \"CreateOS API URL is invalid.\"   # where the package is installed\n\
         node bin/paperclip-sandbox.js explain \"CreateOS API URL is invalid.\"   # in this repository\n\
         ```\n\n\
         or from JavaScript: `explainError(message)` of `paperclip-sandbox-native`, which returns \
         the entry (`code`, `provider`, `kind`, `template`, `hooks`, `meaning`, `causes`, `fix`) or \
         `null`.\n\n\
         **Surfaces as** says how a message reaches the host: *thrown* (the hook rejects), \
         *returned* (in the hook result), *validation* (config validation: in `errors[]` of \
         `onEnvironmentValidateConfig`, otherwise thrown; the Kubernetes provider throws a ZodError \
         whose message is the JSON list of issues), *diagnostic* (an in-pod token inside a sync \
         failure message), *warning* (non-fatal), *session* (ends an \
         open login PTY or duplex session, which the host sees exit with code null), or *internal* (raised by a library routine that \
         this provider version does not surface to the host; listed for completeness).\n\n\
         **Origin** says whether a message is a line of the original's contract list, or an \
         addition to it: a text of the original the list leaves out (a success summary, a \
         JavaScript runtime error, a client-library error passed through, a later upstream \
         generation), or one this implementation adds, with the reason.\n\n",
    );
    for provider in [Provider::CreateOs, Provider::Kubernetes] {
        let entries = provider_entries(provider);
        let _ = writeln!(
            out,
            "- [{} ({} messages)](#{})",
            provider.title(),
            entries.len(),
            provider.key()
        );
    }
    out.push('\n');
    for provider in [Provider::CreateOs, Provider::Kubernetes] {
        let entries = provider_entries(provider);
        let _ = writeln!(out, "## {}\n", provider.title());
        out.push_str("| Code | Message |\n|---|---|\n");
        for e in entries {
            let _ = writeln!(
                out,
                "| [`{}`](#{}) | {} |",
                e.code,
                anchor(e.code),
                table_code(e.template)
            );
        }
        out.push('\n');
        for e in entries {
            render_entry(&mut out, e);
        }
    }
    out
}

fn render_entry(out: &mut String, e: &Entry) {
    let _ = writeln!(out, "### {}\n", e.code);
    let _ = writeln!(out, "{}\n", block_code(e.template));
    let _ = writeln!(
        out,
        "- **Provider:** {} · **Surfaces as:** {}",
        e.provider.title(),
        kind_text(e)
    );
    let hooks: Vec<String> = e.hooks.iter().map(hook_text).collect();
    let _ = writeln!(out, "- **Raised by:** {}", hooks.join(", "));
    let origin = match e.origin {
        crate::Origin::Contract => "the original's contract list".to_string(),
        crate::Origin::Addition(note) => format!("not in the contract list: {note}"),
    };
    let _ = writeln!(out, "- **Origin:** {origin}\n");
    let _ = writeln!(out, "**What it means.** {}\n", e.meaning);
    out.push_str("**Common causes.**\n\n");
    for cause in e.causes {
        let _ = writeln!(out, "- {cause}");
    }
    let _ = writeln!(out, "\n**Fix.** {}\n", e.fix);
}

/// A hook as code, with its note; a routine named before a parenthesised note as code too
/// (`execute (…)`); other text stays text.
fn hook_text(raiser: &Raiser) -> String {
    match raiser {
        Raiser::Hook(hook) => format!("`{hook}`"),
        Raiser::Noted(hook, note) => format!("`{hook}` {note}"),
        Raiser::Other(text) => match text.split_once(' ') {
            Some((name, note)) if note.starts_with('(') => format!("`{name}` {note}"),
            _ => (*text).to_owned(),
        },
    }
}

fn kind_text(e: &Entry) -> &'static str {
    use crate::Kind::*;
    match e.kind {
        Thrown => "thrown error (the hook rejects)",
        Returned => "returned in the hook result",
        Validation => "configuration validation message",
        Diagnostic => "in-pod diagnostic inside a sync failure message",
        Warning => "warning (non-fatal)",
        Session => "ends an open login PTY or duplex session (exit code null)",
        Internal => "library error not surfaced by this provider version",
    }
}

/// GitHub's heading anchor for a code: lower-case, underscores kept.
fn anchor(code: &str) -> String {
    code.to_ascii_lowercase()
}

/// Inline code that survives a table cell: pipes escaped, backticks fenced with a longer run.
fn table_code(text: &str) -> String {
    let escaped = text.replace('|', "\\|");
    inline_code(&escaped)
}

fn inline_code(text: &str) -> String {
    let longest = longest_backtick_run(text);
    let fence = "`".repeat(longest + 1);
    if longest > 0 {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

fn block_code(text: &str) -> String {
    let fence = "`".repeat((longest_backtick_run(text) + 1).max(3));
    format!("{fence}text\n{text}\n{fence}")
}

fn longest_backtick_run(text: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}
