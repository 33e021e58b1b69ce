//! Golden check of the archive layout against node-tar itself: the project's own (devDependency
//! `tar`, the version the original plugins depend on), run by the project's Node (devDependency
//! `node`). Sizes must be identical (they are the providers' `bytesTransferred`), and so must the
//! entry list: paths, types, sizes, link targets, in archive order. Without either, the tests
//! fail: run `npm install`.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use sandbox_core::archive::{excluded, pack_directory};

/// The repository root, whose `node_modules` holds the project's devDependencies.
fn project_root() -> &'static Path {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .nth(2)
        .expect("crates/sandbox-core is two levels down")
}

/// A file of the project's `node_modules`; the test fails when it is missing.
fn installed(relative: &str) -> PathBuf {
    let path = project_root().join("node_modules").join(relative);
    assert!(
        path.exists(),
        "{} is missing: run `npm install` in the repository root (devDependencies `tar` and `node`)",
        path.display()
    );
    path
}

/// The project's node-tar.
fn node_tar() -> PathBuf {
    installed("tar/package.json");
    installed("tar")
}

/// The project's Node, not whichever `node` is on PATH.
fn node() -> Command {
    Command::new(installed(".bin/node"))
}

const LISTER: &str = r#"
const tar = require(process.argv[2]);
const path = require("node:path");
const fs = require("node:fs");
const [src, out, patterns] = [process.argv[3], process.argv[4], JSON.parse(process.argv[5])];
const excluded = (name) => {
  name = name.replace(/^\.\//, "").replace(/\/$/, "");
  return patterns.some((p) => [p, `${p}/**`, `**/${p}`, `**/${p}/**`].some((g) => path.matchesGlob(name, g)));
};
const list = (file) => {
  const entries = [];
  tar.t({ file, sync: true, onReadEntry: (e) => entries.push([e.path, e.type, e.size, e.linkpath ?? null]) });
  return entries;
};
// As the original: asynchronous create, then the archive's size.
tar.c({ file: out, cwd: src, filter: (n) => !excluded(n) }, ["."]).then(() => {
  const rust = process.argv[6];
  console.log(JSON.stringify({ size: fs.statSync(out).size, entries: list(out), rust: list(rust) }));
});
"#;

fn fixture(root: &Path) {
    let long_dir = "d".repeat(60);
    let deep = root
        .join(&long_dir)
        .join("e".repeat(60))
        .join("f".repeat(60));
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("g".repeat(120)), b"deep").unwrap();
    std::fs::write(deep.join("short"), b"s").unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
    std::fs::write(root.join("caf\u{e9}.txt"), b"unicode").unwrap();
    std::fs::write(root.join("a.txt"), vec![b'a'; 1025]).unwrap();
    std::fs::hard_link(root.join("a.txt"), root.join("hard")).unwrap();
    symlink("a.txt", root.join("link")).unwrap();
    symlink("x".repeat(150), root.join("longlink")).unwrap();
    std::fs::write(root.join("skip.log"), b"no").unwrap();
    std::fs::create_dir_all(root.join("node_modules/pkg")).unwrap();
    std::fs::write(root.join("node_modules/pkg/i.js"), b"no").unwrap();
    std::fs::set_permissions(root.join("a.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
}

#[test]
fn archives_match_node_tar() {
    let node_tar = node_tar();
    let dir = std::env::temp_dir().join(format!("node-tar-parity-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    fixture(&src);
    let patterns = vec!["*.log".to_owned(), "node_modules".to_owned()];
    let ours: PathBuf = dir.join("ours.tar");
    let mut file = std::fs::File::create(&ours).unwrap();
    let keep = |name: &str| !excluded(name, &patterns);
    let summary = pack_directory(&src, false, &keep, &mut file).unwrap();
    drop(file);
    let script = dir.join("lister.cjs");
    std::fs::write(&script, LISTER).unwrap();
    let output = node()
        .arg(&script)
        .arg(&node_tar)
        .arg(&src)
        .arg(dir.join("theirs.tar"))
        .arg(serde_json::to_string(&patterns).unwrap())
        .arg(&ours)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["entries"], report["rust"]);
    assert_eq!(report["size"].as_u64(), Some(summary.bytes));
    assert_eq!(std::fs::metadata(&ours).unwrap().len(), summary.bytes);
    // Files: a.txt or hard (one is a Link), empty, café, deep ×2.
    assert_eq!(summary.files, 5);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The exclusion matcher against Node's own `path.matchesGlob` (minimatch).
#[test]
fn exclusions_match_node() {
    let names = [
        "./a.log",
        "./.hidden.log",
        "./sub/a.log",
        "./node_modules",
        "./x/node_modules/y",
        "./.git",
        "./.git/config",
        "./a.txt",
        "./c5",
        "./dir/f.js",
        "./dir/sub/f.js",
        "./abc",
        "./.env",
        "./b",
        "./sub/.git/x",
        ".",
        "./x/",
        "./build/out/",
        "./a.b.c",
    ];
    let patterns = [
        "*.log",
        "node_modules",
        ".git",
        "{a,b}.txt",
        "c[0-9]",
        "dir/*.js",
        "**/x",
        "a?c",
        ".*",
        "*",
        "[!a]*",
        "build/out",
        "*.b.*",
        "sub",
    ];
    let script = r#"
const path = require("node:path");
const [names, patterns] = process.argv.slice(-2).map((a) => JSON.parse(a));
const excluded = (name, p) => {
  name = name.replace(/^\.\//, "").replace(/\/$/, "");
  return [p, `${p}/**`, `**/${p}`, `**/${p}/**`].some((g) => path.matchesGlob(name, g));
};
console.log(JSON.stringify(names.map((n) => patterns.map((p) => excluded(n, p)))));
"#;
    let output = node()
        .args(["-e", script])
        .arg(serde_json::to_string(&names).unwrap())
        .arg(serde_json::to_string(&patterns).unwrap())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let theirs: Vec<Vec<bool>> = serde_json::from_slice(&output.stdout).unwrap();
    let mut differences = Vec::new();
    for (i, name) in names.iter().enumerate() {
        for (j, pattern) in patterns.iter().enumerate() {
            if excluded(name, &[pattern.to_string()]) != theirs[i][j] {
                differences.push(format!("{name} vs {pattern}: node says {}", theirs[i][j]));
            }
        }
    }
    assert!(differences.is_empty(), "{differences:#?}");
}
