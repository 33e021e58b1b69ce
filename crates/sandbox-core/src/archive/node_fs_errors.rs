//! Node `fs` error texts: what the original (Node, node-tar) printed for a failed system call,
//! reproduced for host file-system failures during a sync. Kept apart from the archive logic:
//! it is a JavaScript-compatibility concern, not an archive one.

use std::io;
use std::path::Path;

/// `CODE: description, syscall 'path'`, the message of a Node `fs` error.
///
/// A path with a NUL byte never reaches a syscall in Node: `fs` throws ERR_INVALID_ARG_VALUE
/// first (std fails the same way, without an errno).
pub fn node_fs_message(error: &io::Error, syscall: &str, path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    if path.as_os_str().as_bytes().contains(&0) {
        // The name of the argument that carries `path` in the `fs` call.
        let argument = match syscall {
            "copyfile" => "src",
            "rename" => "oldPath",
            "mkdtemp" => "prefix",
            _ => "path",
        };
        return format!(
            "The argument '{argument}' must be a string, Uint8Array, or URL without null bytes. Received {}",
            inspect_string(&path.to_string_lossy())
        );
    }
    let (code, text) = match error.raw_os_error() {
        Some(1) => ("EPERM", "operation not permitted"),
        Some(2) => ("ENOENT", "no such file or directory"),
        Some(13) => ("EACCES", "permission denied"),
        Some(17) => ("EEXIST", "file already exists"),
        Some(18) => ("EXDEV", "cross-device link not permitted"),
        Some(20) => ("ENOTDIR", "not a directory"),
        Some(21) => ("EISDIR", "illegal operation on a directory"),
        Some(28) => ("ENOSPC", "no space left on device"),
        Some(36) => ("ENAMETOOLONG", "name too long"),
        Some(39) => ("ENOTEMPTY", "directory not empty"),
        Some(40) => ("ELOOP", "too many symbolic links encountered"),
        _ => return format!("{error}, {syscall} '{}'", path.display()),
    };
    format!("{code}: {text}, {syscall} '{}'", path.display())
}

/// `util.inspect` of a string: single quotes unless the text has one (then double quotes, or
/// backticks when it has both), control characters escaped as Node escapes them.
fn inspect_string(text: &str) -> String {
    let quote = if !text.contains('\'') {
        '\''
    } else if !text.contains('"') {
        '"'
    } else if !text.contains('`') && !text.contains("${") {
        '`'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\\' => out.push_str("\\\\"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// Regression (found by the reliability fuzzer): a host path with a NUL byte read as std's
    /// "file name contained an unexpected NUL byte, open '…'" instead of Node's fs error.
    #[test]
    fn a_nul_in_a_path_fails_like_node_fs() {
        let path = Path::new("/a\0b");
        let error = fs::File::open(path).unwrap_err();
        assert_eq!(
            node_fs_message(&error, "open", path),
            "The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received '/a\\x00b'"
        );
        assert!(
            node_fs_message(&error, "copyfile", path).starts_with("The argument 'src' must be ")
        );
        assert_eq!(inspect_string("it's\n"), "\"it's\\n\"");
        assert_eq!(inspect_string("a'b\"c"), "`a'b\"c`");
        assert_eq!(
            inspect_string("a\u{7f}\u{1}\u{b}\u{8}\u{c}\\z"),
            "'a\\x7F\\x01\\x0B\\b\\f\\\\z'"
        );
    }
}
