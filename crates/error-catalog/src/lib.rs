//! The error reference of the CreateOS and Kubernetes sandbox providers: one source of truth.
//!
//! Every catalogued message template of both providers (`tests/data/contract/*-errors.txt`, one
//! template per line, `${…}` marking interpolated parts) has exactly one [`Entry`] here, with a
//! stable code, the hooks that raise it (as [`Hook`] values of the providers' hook table), what it means, its common causes and the fix. So does
//! every other message a hook can throw or return ([`Origin::Addition`]: texts of the original
//! that the contract list leaves out, such as success summaries, JavaScript runtime errors and
//! later upstream generations, and the few texts this implementation adds), each saying where it
//! comes from. A test (`tests/audit.rs`) walks the providers' sources so that no message exists
//! outside this table. From this
//! table come [`explain`] (message → entry), the addon's `explainError`, the CLI's `explain`
//! command, `docs/errors.md` ([`render_markdown`]) and the troubleshooting table of
//! `docs/operators.md` ([`render_operator_troubleshooting`]).
//!
//! The providers keep throwing plain errors with the exact catalogued text; nothing here changes
//! a message. The catalogue only reads them.

mod createos;
mod docs;
mod kubernetes;
mod matcher;
mod operators;

use std::sync::OnceLock;

pub use docs::render_markdown;
pub use matcher::Template;
pub use operators::{
    OPERATOR_SECTION_END, OPERATOR_SECTION_START, render_operator_troubleshooting,
};
pub use sandbox_core::Hook;

/// Which provider raises a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    CreateOs,
    Kubernetes,
}

impl Provider {
    /// The provider's driver key, as used in environment configs (`createos`, `kubernetes`).
    pub fn key(self) -> &'static str {
        match self {
            Provider::CreateOs => "createos",
            Provider::Kubernetes => "kubernetes",
        }
    }

    /// Human-readable name.
    pub fn title(self) -> &'static str {
        match self {
            Provider::CreateOs => "CreateOS",
            Provider::Kubernetes => "Kubernetes",
        }
    }
}

/// How a message reaches the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Thrown: the hook's promise rejects with an `Error` carrying this message.
    Thrown,
    /// Returned in a hook result (`errors[]`, `summary`, `stderr`, `reason`).
    Returned,
    /// A config-validation message (zod / parseConfig), in `errors[]` or a thrown error.
    Validation,
    /// A token printed by an in-pod script; appears inside a sync failure message.
    Diagnostic,
    /// A non-fatal warning (validation `warnings[]` or the worker log).
    Warning,
    /// Ends an open login PTY or duplex session (the host sees the session exit with code
    /// null); the hook that opened it has already returned.
    Session,
    /// Raised by a library routine that this provider version does not surface to the host.
    Internal,
}

impl Kind {
    pub fn key(self) -> &'static str {
        match self {
            Kind::Thrown => "thrown",
            Kind::Returned => "returned",
            Kind::Validation => "validation",
            Kind::Diagnostic => "diagnostic",
            Kind::Warning => "warning",
            Kind::Session => "session",
            Kind::Internal => "internal",
        }
    }
}

/// Where a catalogued message comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A line of the provider's contract file (`tests/data/contract/*-errors.txt`).
    Contract,
    /// Not a contract line; the text says where it comes from and why a hook surfaces it.
    Addition(&'static str),
}

/// Who raises or returns a catalogued message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raiser {
    /// The hook itself.
    Hook(Hook),
    /// The hook, in the way the note (in parentheses) says: e.g. the output of the session it
    /// opened, after it returned.
    Noted(Hook, &'static str),
    /// Not a hook: a library routine or an internal caller, as the text says.
    Other(&'static str),
}

impl Raiser {
    /// As `docs/errors.md` and `explainError` show it: the hook's `definePlugin` name, then the
    /// note if any; or the text.
    pub fn text(&self) -> String {
        match self {
            Raiser::Hook(hook) => hook.js_name().to_owned(),
            Raiser::Noted(hook, note) => format!("{} {note}", hook.js_name()),
            Raiser::Other(text) => (*text).to_owned(),
        }
    }

    /// The hook, unless the raiser is not one.
    pub fn hook(&self) -> Option<Hook> {
        match self {
            Raiser::Hook(hook) | Raiser::Noted(hook, _) => Some(*hook),
            Raiser::Other(_) => None,
        }
    }
}

impl PartialEq<&str> for Raiser {
    fn eq(&self, text: &&str) -> bool {
        self.text() == *text
    }
}

/// Shorthands of the data tables.
const fn on(hook: Hook) -> Raiser {
    Raiser::Hook(hook)
}

const fn noted(hook: Hook, note: &'static str) -> Raiser {
    Raiser::Noted(hook, note)
}

const fn other(text: &'static str) -> Raiser {
    Raiser::Other(text)
}

/// One catalogued message.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Stable code, `CREATEOS_…` or `K8S_…`. Never reused or renamed once published.
    pub code: &'static str,
    pub provider: Provider,
    pub kind: Kind,
    /// The message template exactly as in the contract file (`${…}` = interpolated).
    pub template: &'static str,
    /// A matching form, when the contract line uses notation that is not literal text
    /// (e.g. `[, '${key2}'…]` for a repeated list). `None`: match on `template`.
    pub pattern: Option<&'static str>,
    /// Hooks (or, for library routines, the caller) that raise or return it.
    pub hooks: &'static [Raiser],
    /// What it means.
    pub meaning: &'static str,
    /// Common causes.
    pub causes: &'static [&'static str],
    /// What to do.
    pub fix: &'static str,
    pub origin: Origin,
}

impl Entry {
    /// The text the matcher compiles.
    pub fn match_text(&self) -> &'static str {
        self.pattern.unwrap_or(self.template)
    }
}

/// Defaults shared by the entries of a table (`..CREATEOS` / `..K8S` in the data files).
const BLANK: Entry = Entry {
    code: "",
    provider: Provider::CreateOs,
    kind: Kind::Thrown,
    template: "",
    pattern: None,
    hooks: &[],
    meaning: "",
    causes: &[],
    fix: "",
    origin: Origin::Contract,
};

/// Every entry: CreateOS first, then Kubernetes, each in contract-file order.
pub fn entries() -> &'static [Entry] {
    static ALL: OnceLock<Vec<Entry>> = OnceLock::new();
    ALL.get_or_init(|| {
        createos::ENTRIES
            .iter()
            .chain(kubernetes::ENTRIES.iter())
            .copied()
            .collect()
    })
}

/// The entries of one provider: its contract lines in contract-file order, then its additions.
pub fn provider_entries(provider: Provider) -> &'static [Entry] {
    match provider {
        Provider::CreateOs => createos::ENTRIES,
        Provider::Kubernetes => kubernetes::ENTRIES,
    }
}

/// The entry with this code.
pub fn by_code(code: &str) -> Option<&'static Entry> {
    entries().iter().find(|e| e.code == code)
}

fn compiled() -> &'static [(Template, &'static Entry)] {
    static COMPILED: OnceLock<Vec<(Template, &'static Entry)>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        entries()
            .iter()
            .map(|e| (Template::compile(e.match_text()), e))
            .collect()
    })
}

/// The entry whose template matches `message`, or `None` for an uncatalogued message.
///
/// `${…}` parts match any text (also none). Surrounding whitespace is ignored, and so is a
/// leading `Error: ` (as printed by Node). When several templates match, the most specific wins:
/// the one with the most literal characters, then the one with fewer interpolations, then the
/// earlier in the table. A thrown ZodError (whose message is the JSON list of issues) is
/// explained by its first catalogued issue message.
pub fn explain(message: &str) -> Option<&'static Entry> {
    candidates(message).into_iter().next()
}

/// Every entry whose template matches `message`, most specific first (see [`explain`]).
pub fn candidates(message: &str) -> Vec<&'static Entry> {
    let forms = forms(message);
    let mut found: Vec<&(Template, &'static Entry)> = compiled()
        .iter()
        .filter(|(t, _)| forms.iter().any(|form| t.matches(form)))
        .collect();
    // Stable: table order among equally specific templates.
    found.sort_by_key(|(t, _)| t.rank());
    found.into_iter().map(|(_, e)| *e).collect()
}

/// The readings of a message; a template matches when it matches any of them: as given (an
/// interpolation may end in whitespace), trimmed, without a leading `Error: `, with `\n`
/// escapes turned into newlines, and each issue message of a ZodError.
fn forms(message: &str) -> Vec<String> {
    let trimmed = message.trim();
    let mut forms = vec![message.to_owned(), trimmed.to_owned()];
    let unprefixed = trimmed
        .strip_prefix("Error: ")
        .map(str::trim_start)
        .unwrap_or(trimmed);
    if unprefixed != trimmed {
        forms.push(unprefixed.to_owned());
    }
    // A message copied from a JSON log (or the contract template itself) carries `\n` escapes.
    if unprefixed.contains("\\n") {
        forms.push(unprefixed.replace("\\n", "\n").trim().to_owned());
    }
    forms.extend(
        zod_issue_messages(unprefixed)
            .into_iter()
            .map(|m| m.trim().to_owned()),
    );
    forms
}

/// The `message` of each issue when `text` is a ZodError's JSON issue list.
fn zod_issue_messages(text: &str) -> Vec<String> {
    if !text.starts_with('[') {
        return Vec::new();
    }
    let Ok(serde_json::Value::Array(issues)) = serde_json::from_str(text) else {
        return Vec::new();
    };
    issues
        .iter()
        .filter_map(|issue| issue.get("message")?.as_str().map(str::to_owned))
        .collect()
}
