//! The shape of a crate's source, checked by its tests: which module refers to which (so a test
//! can assert that the modules form a tree, or obey a layering), and which files and functions
//! have grown past a size limit.
//!
//! It reads the source as text, the way a reviewer would: comments and string literals are
//! blanked out, then every `crate::…`, `super::…` and `self::…` path is taken as a reference
//! from the module whose file (or inline `mod`) it is in. Paths through a `{…}` group
//! (`use crate::a::{b, c::d}`) count once per leaf. This is not the compiler's name resolution
//! (a glob import or a macro can hide an edge), but it sees every written path, which is what
//! keeps the layering honest.
//!
//! A crate's shape test is two calls:
//!
//! ```ignore
//! use sandbox_core::module_graph::{self as shape, MAX_FILE_LINES, MAX_FN_LINES};
//! let src = shape::src_dir(env!("CARGO_MANIFEST_DIR"));
//! shape::assert_no_cycles(&src);
//! shape::assert_within(&src, MAX_FILE_LINES, MAX_FN_LINES);
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

mod scan;

use scan::{
    blank_non_code, function_spans, ident_end, is_ident, line_of, parse_tree, skip_ws,
    strongly_connected, word_at,
};

/// The most lines a provider or core source file may have (issue #31).
pub const MAX_FILE_LINES: usize = 600;
/// The most lines a provider or core function may span (issue #31).
pub const MAX_FN_LINES: usize = 120;

/// The `src` dir of the crate whose manifest dir is `manifest_dir` (the caller's
/// `env!("CARGO_MANIFEST_DIR")`).
pub fn src_dir(manifest_dir: &str) -> PathBuf {
    Path::new(manifest_dir).join("src")
}

/// Fails (panics, for a test) with [`cycle_report`]'s account when any scope of the crate in
/// `src` has a module cycle.
pub fn assert_no_cycles(src: &Path) {
    let report = cycle_report(src).unwrap_or_else(|e| panic!("reading {}: {e}", src.display()));
    assert!(report.is_empty(), "module cycles:\n{report}");
}

/// The shape tests of a crate, written once: in the crate's `tests/shape.rs`,
/// `sandbox_core::shape_tests!();` adds a test that its modules have no cycle and one that no
/// file or function is over [`MAX_FILE_LINES`] / [`MAX_FN_LINES`].
#[macro_export]
macro_rules! shape_tests {
    () => {
        #[test]
        fn no_module_imports_one_that_imports_it_back() {
            use $crate::module_graph as shape;
            shape::assert_no_cycles(&shape::src_dir(env!("CARGO_MANIFEST_DIR")));
        }

        #[test]
        fn no_file_over_600_lines_and_no_function_over_120() {
            use $crate::module_graph as shape;
            let src = shape::src_dir(env!("CARGO_MANIFEST_DIR"));
            shape::assert_within(&src, shape::MAX_FILE_LINES, shape::MAX_FN_LINES);
        }
    };
}

/// Fails (panics, for a test) listing every file and function [`oversized`] finds in `src`.
pub fn assert_within(src: &Path, max_lines: usize, max_fn_lines: usize) {
    let found = oversized(src, max_lines, max_fn_lines)
        .unwrap_or_else(|e| panic!("reading {}: {e}", src.display()));
    assert!(
        found.is_empty(),
        "over {max_lines} lines per file or {max_fn_lines} per fn:\n{}",
        found.join("\n")
    );
}

/// A module path, one segment per module, from the crate root (`[]` is `lib.rs`).
pub type ModulePath = Vec<String>;

/// One written reference from one module to another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    /// The file the path is written in, relative to the `src` dir.
    pub file: PathBuf,
    /// Its 1-based line.
    pub line: usize,
    /// The path as resolved from the crate root (`sync::engine::perform_sync_in`).
    pub path: String,
}

/// The references between the children of one module (`scope`): the top-level modules when
/// `scope` is empty, the submodules of `sync` when it is `["sync"]`, and so on.
#[derive(Debug, Clone, Default)]
pub struct ModuleGraph {
    /// The module whose children are the nodes.
    pub scope: ModulePath,
    /// Every child of `scope` that has a file (or an inline `mod`) in the source.
    pub nodes: BTreeSet<String>,
    /// `from -> to -> the references that make the edge`. A reference from a child to itself,
    /// to `scope` itself or to something outside `scope` is not an edge here.
    pub edges: BTreeMap<String, BTreeMap<String, Vec<Reference>>>,
}

impl ModuleGraph {
    /// Whether `from` refers to `to` anywhere.
    pub fn has_edge(&self, from: &str, to: &str) -> bool {
        self.edges
            .get(from)
            .is_some_and(|targets| targets.contains_key(to))
    }

    /// The strongly connected groups of more than one module: each is a set of modules that
    /// reach one another, so none of them can be understood (or compiled, or tested) without
    /// the others. Empty when the children of `scope` form a tree (a DAG).
    pub fn cycles(&self) -> Vec<Vec<String>> {
        let nodes: Vec<&String> = self.nodes.iter().collect();
        let index: BTreeMap<&String, usize> =
            nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let successors: Vec<Vec<usize>> = nodes
            .iter()
            .map(|n| {
                self.edges
                    .get(*n)
                    .map(|targets| {
                        targets
                            .keys()
                            .filter_map(|t| index.get(t).copied())
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect();
        strongly_connected(&successors)
            .into_iter()
            .filter(|group| group.len() > 1)
            .map(|group| {
                let mut names: Vec<String> = group.iter().map(|&i| nodes[i].clone()).collect();
                names.sort();
                names
            })
            .collect()
    }

    /// A readable account of each cycle: every edge inside it, with the first reference that
    /// makes it.
    pub fn describe_cycles(&self) -> String {
        let mut out = String::new();
        for group in self.cycles() {
            let scope = if self.scope.is_empty() {
                "crate".to_owned()
            } else {
                format!("crate::{}", self.scope.join("::"))
            };
            let _ = writeln!(out, "cycle in {scope}: {}", group.join(", "));
            for from in &group {
                for to in &group {
                    if let Some(refs) = self.edges.get(from).and_then(|t| t.get(to)) {
                        let first = &refs[0];
                        let _ = writeln!(
                            out,
                            "  {from} -> {to}: {}:{} `{}` ({} reference(s))",
                            first.file.display(),
                            first.line,
                            first.path,
                            refs.len()
                        );
                    }
                }
            }
        }
        out
    }
}

/// The graph between the children of `scope` in the crate whose source is in `src` (the dir
/// holding `lib.rs` or `main.rs`). A reference to a name that `scope`'s own file re-exports
/// from a child (`pub use child::{Name}` in `sync/mod.rs`) counts as a reference to that child.
pub fn module_graph(src: &Path, scope: &[&str]) -> io::Result<ModuleGraph> {
    let files = read_crate(src)?;
    Ok(graph_of(&files, scope))
}

/// Every module of the crate that has child modules: the scopes worth a [`module_graph`].
pub fn module_scopes(src: &Path) -> io::Result<Vec<ModulePath>> {
    let files = read_crate(src)?;
    Ok(scopes_of(&files))
}

/// The cycles of every scope of the crate (the top-level modules, then the children of each
/// module folder), described as [`ModuleGraph::describe_cycles`] does; empty when the whole
/// crate is a tree.
pub fn cycle_report(src: &Path) -> io::Result<String> {
    let files = read_crate(src)?;
    let mut out = String::new();
    for scope in scopes_of(&files) {
        let scope: Vec<&str> = scope.iter().map(String::as_str).collect();
        out.push_str(&graph_of(&files, &scope).describe_cycles());
    }
    Ok(out)
}

/// Each `.rs` file under `src` with more than `max_lines` lines, and each `fn` whose body spans
/// more than `max_fn_lines` lines (from the line of `fn` to that of its closing brace), as
/// `path: N lines` / `path:line fn name: N lines`. Paths are relative to `src`.
pub fn oversized(src: &Path, max_lines: usize, max_fn_lines: usize) -> io::Result<Vec<String>> {
    let mut found = Vec::new();
    for file in read_crate(src)? {
        let lines = file.text.lines().count();
        if lines > max_lines {
            found.push(format!("{}: {lines} lines", file.rel.display()));
        }
        for (name, line, len) in function_spans(&file.code) {
            if len > max_fn_lines {
                found.push(format!(
                    "{}:{line} fn {name}: {len} lines",
                    file.rel.display()
                ));
            }
        }
    }
    Ok(found)
}

struct SourceFile {
    rel: PathBuf,
    module: ModulePath,
    text: String,
    /// `text` with comments and literal contents blanked (same length, same line breaks).
    code: String,
    /// The modules the file defines (itself and its inline `mod`s) and their byte ranges.
    modules: Vec<(ModulePath, std::ops::Range<usize>)>,
    /// Every path the file writes, resolved from the crate root, with the module it is written
    /// in and its line.
    refs: Vec<(ModulePath, ModulePath, usize)>,
}

fn read_crate(src: &Path) -> io::Result<Vec<SourceFile>> {
    let mut paths = Vec::new();
    collect_rs(src, &mut paths)?;
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        let rel = path.strip_prefix(src).unwrap_or(&path).to_path_buf();
        let text = fs::read_to_string(&path)?;
        let code = blank_non_code(&text);
        let module = module_of(&rel);
        let modules = modules_in(&module, &code);
        let mut file = SourceFile {
            module,
            rel,
            text,
            code,
            modules,
            refs: Vec::new(),
        };
        file.refs = references(&file)
            .into_iter()
            .map(|(path, at)| (path, module_at(&file, at), line_of(&file.code, at)))
            .collect();
        files.push(file);
    }
    Ok(files)
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_rs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// `lib.rs` → `[]`, `a.rs` and `a/mod.rs` → `[a]`, `a/b.rs` → `[a, b]`.
fn module_of(rel: &Path) -> ModulePath {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        let is_root = parts.is_empty() && (stem == "lib" || stem == "main");
        if stem != "mod" && !is_root {
            parts.push(stem.to_owned());
        }
    }
    parts
}

fn scopes_of(files: &[SourceFile]) -> Vec<ModulePath> {
    let mut scopes = BTreeSet::new();
    for file in files {
        for (module, _) in &file.modules {
            for depth in 0..module.len() {
                scopes.insert(module[..depth].to_vec());
            }
        }
    }
    scopes.into_iter().collect()
}

/// Every module a file defines (itself and its inline `mod`s), with a byte range.
fn modules_in(file_module: &ModulePath, code: &str) -> Vec<(ModulePath, std::ops::Range<usize>)> {
    let mut modules = vec![(file_module.clone(), 0..code.len())];
    let bytes = code.as_bytes();
    let mut stack: Vec<(ModulePath, usize, usize)> = Vec::new(); // module, start, depth
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if stack.last().is_some_and(|(_, _, d)| *d == depth) {
                    let (module, start, _) = stack.pop().unwrap_or_default();
                    modules.push((module, start..i));
                }
            }
            _ if word_at(bytes, i, "mod") => {
                let mut j = skip_ws(bytes, i + 3);
                let name_start = j;
                while j < bytes.len() && is_ident(bytes[j]) {
                    j += 1;
                }
                let name = &code[name_start..j];
                let k = skip_ws(bytes, j);
                if !name.is_empty() && k < bytes.len() && bytes[k] == b'{' {
                    let mut module = stack
                        .last()
                        .map(|(m, _, _)| m.clone())
                        .unwrap_or_else(|| file_module.clone());
                    module.push(name.to_owned());
                    stack.push((module, k, depth));
                    depth += 1;
                    i = k + 1;
                    continue;
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    modules
}

fn graph_of(files: &[SourceFile], scope: &[&str]) -> ModuleGraph {
    let scope: ModulePath = scope.iter().map(|s| (*s).to_owned()).collect();
    let mut graph = ModuleGraph {
        scope: scope.clone(),
        ..ModuleGraph::default()
    };
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    for file in files {
        for (module, _) in &file.modules {
            if module.len() > scope.len() && module.starts_with(&scope) {
                graph.nodes.insert(module[scope.len()].clone());
            }
        }
        if file.module == scope {
            for (path, _, _) in &file.refs {
                // `pub use child::Name` (resolved to `scope::child::Name`).
                if path.len() == scope.len() + 2 && path.starts_with(&scope) {
                    reexports.insert(path[scope.len() + 1].clone(), path[scope.len()].clone());
                }
            }
        }
    }
    for file in files {
        for (path, from_module, line) in &file.refs {
            if from_module.len() <= scope.len() || !from_module.starts_with(&scope) {
                continue;
            }
            if path.len() <= scope.len() || !path.starts_with(&scope) {
                continue;
            }
            let from = &from_module[scope.len()];
            let mut to = &path[scope.len()];
            if !graph.nodes.contains(to) {
                match reexports.get(to) {
                    Some(child) => to = child,
                    None => continue,
                }
            }
            if to == from {
                continue;
            }
            graph
                .edges
                .entry(from.clone())
                .or_default()
                .entry(to.clone())
                .or_default()
                .push(Reference {
                    file: file.rel.clone(),
                    line: *line,
                    path: path.join("::"),
                });
        }
    }
    graph
}

/// The innermost module at byte `at` of `file`.
fn module_at(file: &SourceFile, at: usize) -> ModulePath {
    file.modules
        .iter()
        .filter(|(_, range)| range.contains(&at))
        .max_by_key(|(module, _)| module.len())
        .map(|(module, _)| module.clone())
        .unwrap_or_else(|| file.module.clone())
}

/// Every `crate::`/`super::`/`self::` path in the file, resolved from the crate root, with the
/// byte offset it starts at. `use` paths of a module file's children (`pub use engine::X;` in
/// `sync/mod.rs`) are resolved too, as `self::` paths.
fn references(file: &SourceFile) -> Vec<(ModulePath, usize)> {
    let bytes = file.code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let anchor = ["crate", "super", "self"]
            .into_iter()
            .find(|w| word_at(bytes, i, w) && file.code[i + w.len()..].starts_with("::"));
        let Some(anchor) = anchor else {
            // `use child::…` in a module file: relative to that module.
            if word_at(bytes, i, "use") {
                let j = skip_ws(bytes, i + 3);
                let k = ident_end(bytes, j);
                if k > j
                    && !matches!(
                        &file.code[j..k],
                        "crate" | "super" | "self" | "std" | "core"
                    )
                    && file.code[k..].starts_with("::")
                {
                    let base = module_at(file, i);
                    let mut leaves = Vec::new();
                    parse_tree(&file.code, j, &mut Vec::new(), &mut leaves);
                    for leaf in leaves {
                        let mut path = base.clone();
                        path.extend(leaf);
                        out.push((path, i));
                    }
                }
            }
            i += 1;
            continue;
        };
        let mut base = match anchor {
            "crate" => Vec::new(),
            _ => module_at(file, i),
        };
        let mut j = i + anchor.len() + 2;
        if anchor == "super" {
            base.pop();
            while word_at(bytes, j, "super") && file.code[j + 5..].starts_with("::") {
                base.pop();
                j += 7;
            }
        }
        let mut leaves = Vec::new();
        parse_tree(&file.code, j, &mut Vec::new(), &mut leaves);
        for leaf in leaves {
            let mut path = base.clone();
            path.extend(leaf);
            out.push((path, i));
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn temp_src(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "sandbox-core-module-graph-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn finds_a_cycle_between_top_level_modules_and_ignores_comments_and_strings() {
        let src = temp_src("top");
        write(&src, "lib.rs", "pub mod a;\npub mod b;\npub mod c;\n");
        write(
            &src,
            "a.rs",
            "use crate::b::thing;\n// crate::c::x\nconst S: &str = \"crate::c\";\n",
        );
        write(&src, "b/mod.rs", "pub mod inner;\npub use inner::Thing;\n");
        write(&src, "b/inner.rs", "pub fn f() { crate::a::g(); }\n");
        write(&src, "c.rs", "use crate::{a::x, b::{y, z}};\n");
        let graph = module_graph(&src, &[]).unwrap();
        assert!(graph.has_edge("a", "b"));
        assert!(graph.has_edge("b", "a"));
        assert!(
            !graph.has_edge("a", "c"),
            "comments and strings are not references"
        );
        assert!(graph.has_edge("c", "a") && graph.has_edge("c", "b"));
        assert_eq!(graph.cycles(), vec![vec!["a".to_owned(), "b".to_owned()]]);
        let report = cycle_report(&src).unwrap();
        assert!(report.contains("cycle in crate: a, b"), "{report}");
        assert!(std::panic::catch_unwind(|| assert_no_cycles(&src)).is_err());
        fs::remove_dir_all(&src).unwrap();
    }

    #[test]
    fn resolves_super_and_reexports_inside_a_folder() {
        let src = temp_src("folder");
        write(&src, "lib.rs", "pub mod s;\n");
        write(
            &src,
            "s/mod.rs",
            "mod one;\nmod two;\npub use two::{Two, other};\n",
        );
        write(
            &src,
            "s/one.rs",
            "use super::Two;\n#[cfg(test)]\nmod tests { use super::*; }\n",
        );
        write(
            &src,
            "s/two.rs",
            "pub struct Two;\nfn f() { crate::s::one::g(); }\n",
        );
        let graph = module_graph(&src, &["s"]).unwrap();
        assert!(graph.has_edge("one", "two"), "{graph:?}");
        assert!(graph.has_edge("two", "one"));
        assert_eq!(graph.cycles().len(), 1);
        let scopes = module_scopes(&src).unwrap();
        let s = |p: &[&str]| p.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        // `s::one` holds an inline `mod tests`.
        assert_eq!(scopes, vec![s(&[]), s(&["s"]), s(&["s", "one"])]);
        fs::remove_dir_all(&src).unwrap();
    }

    #[test]
    fn measures_files_and_functions() {
        let src = temp_src("sizes");
        let long_body = "    let x = '{';\n".repeat(5);
        write(
            &src,
            "lib.rs",
            &format!(
                "fn short() {{}}\nfn long() {{\n{long_body}}}\ntrait T {{ fn decl(&self); }}\n"
            ),
        );
        let found = oversized(&src, 3, 6).unwrap();
        assert_eq!(
            found,
            vec![
                "lib.rs: 9 lines".to_owned(),
                "lib.rs:2 fn long: 7 lines".to_owned()
            ]
        );
        assert!(oversized(&src, 9, 7).unwrap().is_empty());
        assert!(std::panic::catch_unwind(|| assert_within(&src, 9, 6)).is_err());
        assert_within(&src, 9, 7);
        fs::remove_dir_all(&src).unwrap();
    }
}
