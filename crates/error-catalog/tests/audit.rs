//! The message audit: every message a hook can throw or return is in the catalogue.
//!
//! The test parses the production sources of both provider crates, sandbox-core and js-compat
//! (whose V8 texts the providers throw), from each `lib.rs`, following `mod` declarations,
//! skipping `#[cfg(test)]` / test-feature modules and items, and takes every string literal of
//! at least 20 characters that contains a space, in code and inside macro invocations (so
//! `format!` templates count), but not in attributes (doc comments), `expect(…)` arguments or
//! `panic!`-family macros. A literal passes when:
//!
//! - with each `{…}` placeholder filled in, it is a message the catalogue explains; or
//! - it is a piece of a catalogued message (its literal parts, in order, are in one template:
//!   a message assembled from several pieces, like `Sandbox ns/x` + ` failed: …`); or
//! - it is in [`NOT_MESSAGES`], the short explicit list of literals that are not messages
//!   (shell scripts, log lines, test-double texts), each with its reason.
//!
//! A new message that is in neither the contract nor the catalogue's additions fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use error_catalog::{entries, explain};
use syn::visit::Visit;

/// Literals that are not messages a hook throws or returns: `(file suffix, literal prefix, why)`.
const NOT_MESSAGES: &[(&str, &str, &str)] = &[
    // Fills of contract templates in the confined sync-out (the ${name} of A41 / A44).
    (
        "kubernetes/src/sync/host.rs",
        "archive check did not finish",
        "the ${name} of the escaping-member line when the extraction task dies",
    ),
    (
        "kubernetes/src/sync/stream.rs",
        "archive check did not finish",
        "the ${name} of the escaping-member line when the receiving (checking) thread dies",
    ),
    (
        "kubernetes/src/sync/stream.rs",
        "Total bytes written: ",
        "the line of GNU tar's `--totals` output the sizing pass parses",
    ),
    (
        "kubernetes/src/sync/tar_list.rs",
        "an entry the archive check refused",
        "the ${name} of the escaping-member line",
    ),
    (
        "kubernetes/src/sync/tar_list.rs",
        "the archive is not a readable tar stream",
        "the detail of the unparseable-listing line",
    ),
    // Fragments and library texts the provider matches or substitutes (not messages themselves).
    (
        "kubernetes/src/cluster/client.rs",
        "peer closed connection without sending TLS close_notify",
        "rustls's own text, matched so that it is replaced",
    ),
    (
        "kubernetes/src/cluster/client.rs",
        "the API server closed the TLS connection",
        "the plain words that replace rustls's text inside a passed-through transport error",
    ),
    (
        "kubernetes/src/cluster/credentials.rs",
        "duplicate mapping key",
        "the YAML parser's text, matched to choose the reason",
    ),
    (
        "kubernetes/src/cluster/credentials.rs",
        "a key appears twice",
        "a ${reason} of K8S_KUBECONFIG_YAML_INVALID",
    ),
    (
        "kubernetes/src/cluster/credentials.rs",
        "it is not a well-formed kubeconfig",
        "a ${reason} of K8S_KUBECONFIG_YAML_INVALID",
    ),
    (
        "kubernetes/src/cluster/credentials.rs",
        "line {line}, column {column}",
        "the ${position} of K8S_KUBECONFIG_YAML_INVALID",
    ),
    // The image-reference grammar's reasons (issue #37).
    (
        "kubernetes/src/config/image_reference/mod.rs",
        "",
        "the ${reason}s of K8S_CONFIG_IMAGE_REGISTRY_INVALID and K8S_RUNTIME_IMAGE_INVALID: the module's only texts are the grammar's reasons, each asserted by its unit tests",
    ),
    (
        "kubernetes/src/cluster/readiness/pod.rs",
        "last exit {reason} (exit code {code})",
        "the start of the ${message} of K8S_POD_CONTAINER_CRASHING (how the container last ended)",
    ),
    // The permission list and the RBAC written from it (issue #37).
    (
        "kubernetes/src/cluster/permissions.rs",
        "",
        "the permission list: each `why` is the ${why} of K8S_PROBE_PERMISSION_MISSING, each condition a comment of docs/rbac/*.yaml",
    ),
    (
        "kubernetes/src/cluster/rbac_yaml.rs",
        "",
        "the operator's RBAC files (docs/rbac/*.yaml), written by a test; no hook returns them",
    ),
    (
        "kubernetes/src/cluster/probe_checks/grants.rs",
        "in namespace ",
        "the ${place} of K8S_PROBE_PERMISSION_MISSING",
    ),
    // In-pod shell scripts and commands.
    (
        "kubernetes/src/sync/script.rs",
        "",
        "the in-pod sync scripts",
    ),
    (
        "kubernetes/src/builders/sandbox_cr.rs",
        "deadline=",
        "the hard-stop entrypoint script",
    ),
    (
        "kubernetes/src/exec/upload_interceptor.rs",
        " && : > '",
        "the upload protocol's init command",
    ),
    (
        "kubernetes/src/exec/upload_interceptor.rs",
        " > '{target}'",
        "the upload protocol's finalize command",
    ),
    (
        "kubernetes/src/exec/upload_interceptor.rs",
        "mkdir -p '{dir}'",
        "the fast-upload flush script",
    ),
    (
        "kubernetes/src/exec/upload_interceptor.rs",
        "init dir/target",
        "a decision's debug reason, never shown",
    ),
    (
        "kubernetes/src/exec/upload_interceptor.rs",
        "init upload to",
        "a decision's debug reason, never shown",
    ),
    (
        "kubernetes/src/exec/upload_interceptor.rs",
        "chunk without prior",
        "a decision's debug reason, never shown",
    ),
    (
        "kubernetes/src/exec/upload_interceptor.rs",
        "buffered {} base64",
        "a decision's debug reason, never shown",
    ),
    (
        "kubernetes/src/exec/upload_interceptor.rs",
        "finalize without",
        "a decision's debug reason, never shown",
    ),
    (
        "kubernetes/src/login/manager.rs",
        "exec ",
        "login commands run in the pod",
    ),
    (
        "kubernetes/src/login/manager.rs",
        "mkdir -p {quoted_home}",
        "the login command's prelude",
    ),
    (
        "kubernetes/src/builders/scoped_egress.rs",
        "could not resolve host",
        "a stderr pattern the egress hint looks for",
    ),
    (
        "kubernetes/src/builders/scoped_egress.rs",
        "network is unreachable",
        "a stderr pattern the egress hint looks for",
    ),
    (
        "kubernetes/src/builders/scoped_egress.rs",
        "connection timed out",
        "a stderr pattern the egress hint looks for",
    ),
    (
        "kubernetes/src/builders/scoped_egress.rs",
        "temporary failure in",
        "a stderr pattern the egress hint looks for",
    ),
    (
        "kubernetes/src/builders/scoped_egress.rs",
        " No task-scoped destinations",
        "the `${detail}` of the egress hint (B10)",
    ),
    (
        "kubernetes/src/builders/scoped_egress.rs",
        " Current task grant:",
        "the `${detail}` of the egress hint (B10)",
    ),
    (
        "kubernetes/src/sync/sync_in.rs",
        "sync",
        "sync transfer labels inside contract messages",
    ),
    (
        "kubernetes/src/sync/sync_out.rs",
        "sync",
        "sync transfer labels inside contract messages",
    ),
    (
        "kubernetes/src/sync/sync_in.rs",
        "post-upload command cwd",
        "a path label inside a contract message",
    ),
    (
        "kubernetes/src/provider.rs",
        "Kubernetes sandbox provider plugin ready",
        "the setup info log line",
    ),
    (
        "kubernetes/src/exec/pod_exec.rs",
        "this pod exec does not support",
        "test doubles' default; the production exec streams",
    ),
    (
        "kubernetes/src/cluster/credentials.rs",
        "Redactor(",
        "Debug output",
    ),
    (
        "kubernetes/src/cluster/client.rs",
        "handled in KubeCluster",
        "an unreachable!() branch",
    ),
    (
        "kubernetes/src/builders/string_map.rs",
        "value of {k:?}",
        "a serde error of a builder input, never from hook params",
    ),
    (
        "createos/src/provider.rs",
        "CreateOS sandbox provider ready",
        "the setup info log line",
    ),
    (
        "createos/src/exec/script.rs",
        "until [ -e",
        "the in-sandbox command script",
    ),
    (
        "createos/src/exec/script.rs",
        "exec env",
        "the in-sandbox command script",
    ),
    (
        "createos/src/exec/script.rs",
        "exec < ",
        "the in-sandbox command script's staged-stdin line",
    ),
    (
        "createos/src/exec/end.rs",
        "",
        "the module's only texts are in-sandbox shell: the wrapper that lets a timed-out execute's command be ended, and the script of the request that ends it (its outcome is ignored, it has no message)",
    ),
    (
        "kubernetes/src/exec/request.rs",
        "head -c {} | {{",
        "the in-pod stdin wrapper (head -c, then the rest of stdin drained after the command)",
    ),
    (
        "kubernetes/src/exec/group.rs",
        "g=; command -v setsid",
        "the in-pod wrapper that runs an execute's command in a process group of its own",
    ),
    (
        "kubernetes/src/exec/group.rs",
        "{{ echo \"$1$$\" > {file}",
        "the in-pod wrapper's inner script, which records the group and execs the command",
    ),
    (
        "kubernetes/src/exec/group.rs",
        "f={}; [ -f \"$f\" ] || exit 0",
        "the in-pod kill script sent when an execute's deadline passes",
    ),
    (
        "kubernetes/src/exec/group.rs",
        "t=; for f in {}; do",
        "the in-pod kill script worker shutdown sends for the commands of the executes it stopped",
    ),
    (
        "kubernetes/src/exec/group.rs",
        "t=; for f in {all}*.pid; do",
        "the in-pod script of resume's kill exec of the commands other workers left (issue #38)",
    ),
    (
        "createos/src/session/login.rs",
        "login_command=",
        "the login shell script",
    ),
    (
        "createos/src/session/login.rs",
        "case \"$login_command\"",
        "the login shell script",
    ),
    (
        "createos/src/session/login.rs",
        "[ -x ",
        "the login shell script",
    ),
    (
        "createos/src/session/login.rs",
        "exec env",
        "the login shell script",
    ),
    (
        "createos/src/sync/paths.rs",
        "root=$(realpath",
        "the in-sandbox path guard script",
    ),
    (
        "createos/src/sync/mod.rs",
        "{guard} && ",
        "the in-sandbox sync scripts",
    ),
    (
        "createos/src/setup/mod.rs",
        "createos sandbox shell",
        "a session label",
    ),
    (
        "createos/src/process/messages.rs",
        "CreateOS login PTY ",
        "the login PTY hooks' info log lines (ctx.logger), not results",
    ),
    (
        "createos/src/session/login.rs",
        "Received ",
        "the `${received}` part of Node's ERR_INVALID_ARG_TYPE",
    ),
    (
        "createos/src/sync/paths.rs",
        "an instance of ",
        "the `${received}` part of Node's ERR_INVALID_ARG_TYPE",
    ),
    (
        "kubernetes/src/config/zod/issue.rs",
        "",
        "zod 3's default message table; the config schema can reach only the catalogued ones (the original's config validation messages)",
    ),
    (
        "sandbox-core/src/archive/node_fs_errors.rs",
        "",
        "Node's own `fs` error texts, reproduced for host file-system failures",
    ),
    (
        "sandbox-core/src/archive/mod.rs",
        "",
        "node-tar's own texts; the archive's rejections are the providers' messages, chosen by the callers",
    ),
    (
        "sandbox-core/src/archive/write.rs",
        "encountered unexpected EOF",
        "std's text of a short read, inside a Node `fs` error",
    ),
];

fn crates_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `#[cfg(test)]`, `#[test]`, or a cfg naming the `testing` feature.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        if path.is_ident("test") {
            return true;
        }
        if !path.is_ident("cfg") {
            return false;
        }
        let text = attr
            .meta
            .require_list()
            .map(|l| l.tokens.to_string())
            .unwrap_or_default();
        text == "test" || text.contains("\"testing\"") || text.starts_with("any (test")
    })
}

#[derive(Default)]
struct Literals {
    found: Vec<String>,
    modules: Vec<String>,
}

impl Literals {
    fn take(&mut self, text: String) {
        if text.chars().count() >= 20 && text.contains(' ') {
            self.found.push(text);
        }
    }

    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        for token in tokens {
            match token {
                // `#[doc = "…"]` (a doc comment inside a macro) is not a message.
                proc_macro2::TokenTree::Group(group)
                    if group.delimiter() == proc_macro2::Delimiter::Bracket
                        && group.stream().into_iter().next().is_some_and(
                            |t| matches!(t, proc_macro2::TokenTree::Ident(i) if i == "doc"),
                        ) => {}
                proc_macro2::TokenTree::Group(group) => self.tokens(group.stream()),
                proc_macro2::TokenTree::Literal(literal) => {
                    if let syn::Lit::Str(text) = syn::Lit::new(literal) {
                        self.take(text.value());
                    }
                }
                _ => {}
            }
        }
    }
}

const SKIPPED_MACROS: &[&str] = &[
    "panic",
    "unreachable",
    "todo",
    "unimplemented",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "api_methods",
];

impl<'ast> Visit<'ast> for Literals {
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            _ => &[],
        };
        if is_test_only(attrs) {
            return;
        }
        if let syn::Item::Mod(module) = item
            && module.content.is_none()
        {
            self.modules.push(module.ident.to_string());
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test_only(&item.attrs) {
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
        self.take(lit.value());
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        self.visit_expr(&call.receiver);
        if call.method != "expect" {
            for arg in &call.args {
                self.visit_expr(arg);
            }
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if !SKIPPED_MACROS.contains(&name.as_str()) {
            self.tokens(mac.tokens.clone());
        }
    }
}

/// Every audited literal of the module tree rooted at `file`, with its file.
fn walk(file: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let source =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let parsed = syn::parse_file(&source).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut literals = Literals::default();
    literals.visit_file(&parsed);
    out.extend(literals.found.into_iter().map(|l| (file.to_path_buf(), l)));
    for module in literals.modules {
        let flat = dir.join(format!("{module}.rs"));
        let nested = dir.join(&module).join("mod.rs");
        let (path, child_dir) = if flat.exists() {
            (flat, dir.join(&module))
        } else {
            (nested, dir.join(&module))
        };
        walk(&path, &child_dir, out);
    }
}

/// The literal parts of a format string (`{…}` placeholders removed, `{{`/`}}` unescaped).
fn pieces(literal: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut chars = literal.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                parts.last_mut().unwrap().push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                parts.last_mut().unwrap().push('}');
            }
            '{' => {
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                }
                parts.push(String::new());
            }
            _ => parts.last_mut().unwrap().push(c),
        }
    }
    parts
}

fn is_catalogued(literal: &str) -> bool {
    let parts = pieces(literal);
    if explain(&parts.join("x")).is_some() || explain(&parts.join("")).is_some() {
        return true;
    }
    // A piece of a larger message: its literal parts appear, in order, in one template.
    entries().iter().any(|e| {
        let mut rest = e.template;
        parts
            .iter()
            .filter(|p| p.trim().len() >= 4)
            .all(|part| match rest.find(part.as_str()) {
                Some(at) => {
                    rest = &rest[at + part.len()..];
                    true
                }
                None => false,
            })
    })
}

fn allowed(file: &Path, literal: &str) -> bool {
    let path = file.to_string_lossy();
    NOT_MESSAGES
        .iter()
        .any(|(suffix, prefix, _)| path.ends_with(suffix) && literal.starts_with(prefix))
}

#[test]
fn every_message_literal_of_the_providers_is_catalogued() {
    let mut literals = Vec::new();
    for krate in ["kubernetes", "createos", "sandbox-core", "js-compat"] {
        let src = crates_dir().join(krate).join("src");
        walk(&src.join("lib.rs"), &src, &mut literals);
    }
    assert!(
        literals.len() > 150,
        "the walk found only {} literals",
        literals.len()
    );
    let uncatalogued: BTreeSet<String> = literals
        .iter()
        .filter(|(file, literal)| !allowed(file, literal) && !is_catalogued(literal))
        .map(|(file, literal)| {
            let file = file.strip_prefix(crates_dir()).unwrap_or(file);
            format!("{}: {literal:?}", file.display())
        })
        .collect();
    assert!(
        uncatalogued.is_empty(),
        "{} message literals are neither contract lines nor catalogued additions \
         (crates/error-catalog; or, for a literal that is no message, NOT_MESSAGES here):\n{}",
        uncatalogued.len(),
        uncatalogued.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_audit_sees_messages_built_by_format() {
    assert!(is_catalogued("Pod {pod_name} no longer exists"));
    assert!(is_catalogued("{} failed: {reason} \u{2014} {message}"));
    assert!(!is_catalogued(
        "Kubernetes pod {pod} exploded in an unexpected way"
    ));
    assert_eq!(pieces("a {x} b {{c}}"), ["a ", " b {c}"]);
}
