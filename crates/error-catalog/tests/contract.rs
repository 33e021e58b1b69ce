//! The catalogue covers the contract exactly: every line of both contract files has exactly one
//! entry, every contract entry is a contract line, and every addition is not.

use error_catalog::{Entry, Origin, Provider, Template, entries, explain, provider_entries};
use std::collections::HashSet;

fn contract_lines(file: &str) -> Vec<String> {
    // The repository's copy of the contract (tests/data/contract), or `$PAPERCLIP_CONTRACT_DIR`.
    let path = sandbox_core::golden::contract_file(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

fn contract_entries(provider: Provider) -> Vec<&'static Entry> {
    provider_entries(provider)
        .iter()
        .filter(|e| e.origin == Origin::Contract)
        .collect()
}

fn check_provider(provider: Provider, file: &str) {
    let lines = contract_lines(file);
    let table = contract_entries(provider);
    let mut problems = Vec::new();
    for (number, line) in lines.iter().enumerate() {
        let matching: Vec<&str> = entries()
            .iter()
            .filter(|e| e.template == line && e.origin == Origin::Contract)
            .map(|e| e.code)
            .collect();
        if matching.len() != 1 {
            problems.push(format!(
                "{file}:{}: {} entries {:?} for {line:?}",
                number + 1,
                matching.len(),
                matching
            ));
        }
    }
    for entry in provider_entries(provider) {
        if let Origin::Addition(note) = entry.origin {
            if lines.iter().any(|l| l == entry.template) {
                problems.push(format!(
                    "{} is a contract line, not an addition",
                    entry.code
                ));
            }
            if note.len() < 20 {
                problems.push(format!("{} does not say where it comes from", entry.code));
            }
            continue;
        }
        if !lines.iter().any(|l| l == entry.template) {
            problems.push(format!(
                "{} is not a line of {file}: {:?}",
                entry.code, entry.template
            ));
        }
        if entry.provider != provider {
            problems.push(format!("{} has the wrong provider", entry.code));
        }
    }
    assert_eq!(table.len(), lines.len(), "{file}: entry count");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_createos_contract_line_has_exactly_one_entry() {
    check_provider(Provider::CreateOs, "createos-errors.txt");
}

#[test]
fn every_kubernetes_contract_line_has_exactly_one_entry() {
    check_provider(Provider::Kubernetes, "kubernetes-errors.txt");
}

#[test]
fn table_order_follows_the_contract_files() {
    for (provider, file) in [
        (Provider::CreateOs, "createos-errors.txt"),
        (Provider::Kubernetes, "kubernetes-errors.txt"),
    ] {
        let templates: Vec<&str> = contract_entries(provider)
            .iter()
            .map(|e| e.template)
            .collect();
        assert_eq!(templates, contract_lines(file), "{file}");
    }
}

#[test]
fn codes_are_unique_and_well_formed() {
    let mut seen = HashSet::new();
    for e in entries() {
        assert!(seen.insert(e.code), "duplicate code {}", e.code);
        let prefix = match e.provider {
            Provider::CreateOs => "CREATEOS_",
            Provider::Kubernetes => "K8S_",
        };
        assert!(e.code.starts_with(prefix), "{} lacks {prefix}", e.code);
        assert!(
            e.code
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'),
            "{} is not UPPER_SNAKE",
            e.code
        );
    }
}

#[test]
fn every_entry_is_complete() {
    for e in entries() {
        assert!(!e.hooks.is_empty(), "{}: no hooks", e.code);
        assert!(e.meaning.len() > 20, "{}: meaning too short", e.code);
        assert!(!e.causes.is_empty(), "{}: no causes", e.code);
        assert!(e.causes.iter().all(|c| !c.trim().is_empty()), "{}", e.code);
        assert!(e.fix.len() > 20, "{}: fix too short", e.code);
        for text in [e.meaning, e.fix]
            .into_iter()
            .chain(e.causes.iter().copied())
        {
            assert!(!text.contains('\n'), "{}: multi-line text", e.code);
            assert_eq!(text.trim(), text, "{}: untrimmed text", e.code);
        }
    }
}

/// Each template, with its interpolations filled in, is explained by its own entry (so no
/// template is shadowed by a more specific one).
#[test]
fn every_filled_template_explains_to_its_own_entry() {
    let mut problems = Vec::new();
    for e in entries() {
        let template = Template::compile(e.match_text());
        for fill in ["x", "some value 42", ""] {
            let message = template.instantiate(fill);
            match explain(&message) {
                Some(found) if found.code == e.code => {}
                other => problems.push(format!(
                    "{}: {message:?} explained as {:?}",
                    e.code,
                    other.map(|o| o.code)
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
