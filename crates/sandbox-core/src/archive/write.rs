//! Packing a host directory into an archive laid out exactly as node-tar wrote it (so byte
//! counts match the original providers).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use js_compat::path::basename;
use js_compat::string::utf16_len;

use super::posix_dirname;
use super::{ArchiveError, BLOCK, current_uid};

/// What [`pack_directory`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackSummary {
    /// Regular-file entries (`File`).
    pub files: u64,
    /// Archive size in bytes.
    pub bytes: u64,
}

/// Writes the archive of directory `root` to `out` as node-tar did. `follow` follows symbolic
/// links (`follow: true`); `keep` sees each entry's path as node-tar's filter did (`.` for the
/// root, `./a`, `./dir/b`) and prunes what it refuses (a refused directory is not descended).
/// Sockets, FIFOs and devices are skipped.
pub fn pack_directory(
    root: &Path,
    follow: bool,
    keep: &dyn Fn(&str) -> bool,
    out: &mut dyn Write,
) -> Result<PackSummary, ArchiveError> {
    let mut writer = CountingWriter { out, bytes: 0 };
    let mut files = 0;
    let mut links: HashMap<(u64, u64), PathBuf> = HashMap::new();
    // With `follow`, every directory is entered once: a second visit (a link loop, or two
    // links to one directory) fails instead of copying the tree again and again.
    let mut directories: HashSet<(u64, u64)> = HashSet::new();
    let mut queue: VecDeque<(String, PathBuf)> = VecDeque::new();
    queue.push_back((".".to_owned(), root.to_path_buf()));
    let user = std::env::var("USER").unwrap_or_default();
    let my_uid = current_uid();
    while let Some((job_path, absolute)) = queue.pop_front() {
        let meta = if follow {
            fs::metadata(&absolute).map_err(|e| ArchiveError::fs(e, "stat", &absolute))?
        } else {
            fs::symlink_metadata(&absolute).map_err(|e| ArchiveError::fs(e, "lstat", &absolute))?
        };
        if !keep(&job_path) {
            continue;
        }
        let file_type = meta.file_type();
        let uname = if Some(meta.uid()) == my_uid {
            user.as_str()
        } else {
            ""
        };
        let mut header = HeaderFields {
            path: job_path.clone(),
            linkpath: None,
            mode: meta.mode() & 0o7777,
            uid: meta.uid() as u64,
            gid: meta.gid() as u64,
            size: 0,
            mtime_ms: ms(meta.mtime(), meta.mtime_nsec()),
            atime_ms: ms(meta.atime(), meta.atime_nsec()),
            ctime_ms: ms(meta.ctime(), meta.ctime_nsec()),
            flag: b'0',
            uname: uname.to_owned(),
            dev: meta.dev(),
            ino: meta.ino(),
            nlink: meta.nlink(),
        };
        if file_type.is_dir() {
            if follow && !directories.insert((meta.dev(), meta.ino())) {
                return Err(ArchiveError::RepeatedDirectory { path: absolute });
            }
            if !header.path.ends_with('/') {
                header.path.push('/');
            }
            header.flag = b'5';
            header.mode = dir_mode(header.mode);
            header.write(&mut writer)?;
            let base = if job_path == "./" {
                String::new()
            } else {
                format!("{}/", job_path.trim_end_matches('/'))
            };
            let entries =
                fs::read_dir(&absolute).map_err(|e| ArchiveError::fs(e, "scandir", &absolute))?;
            let mut names = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| ArchiveError::fs(e, "scandir", &absolute))?;
                names.push(entry.file_name());
            }
            // libuv's scandir (Node's readdir) sorts names by their bytes.
            names.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
            for name in names {
                let text = name.to_string_lossy().into_owned();
                queue.push_back((format!("{base}{text}"), absolute.join(&name)));
            }
        } else if file_type.is_symlink() {
            let link =
                fs::read_link(&absolute).map_err(|e| ArchiveError::fs(e, "readlink", &absolute))?;
            header.flag = b'2';
            header.linkpath = Some(link.to_string_lossy().into_owned());
            header.write(&mut writer)?;
        } else if file_type.is_file() {
            if meta.nlink() > 1 {
                let key = (meta.dev(), meta.ino());
                if let Some(first) = links.get(&key) {
                    let relative = first.strip_prefix(root).unwrap_or(first);
                    header.flag = b'1';
                    header.linkpath = Some(relative.to_string_lossy().into_owned());
                    header.write(&mut writer)?;
                    continue;
                }
                links.insert(key, absolute.clone());
            }
            header.size = meta.len();
            header.write(&mut writer)?;
            files += 1;
            let source =
                fs::File::open(&absolute).map_err(|e| ArchiveError::fs(e, "open", &absolute))?;
            let copied = io::copy(&mut source.take(meta.len()), &mut writer)
                .map_err(|e| ArchiveError::fs(e, "read", &absolute))?;
            if copied != meta.len() {
                return Err(ArchiveError::fs(
                    io::Error::new(io::ErrorKind::UnexpectedEof, "encountered unexpected EOF"),
                    "read",
                    &absolute,
                ));
            }
            pad(&mut writer, meta.len())?;
        }
        // Other types: node-tar writes nothing for them.
    }
    writer
        .write_all(&[0; BLOCK * 2])
        .map_err(|e| ArchiveError::fs(e, "write", root))?;
    Ok(PackSummary {
        files,
        bytes: writer.bytes,
    })
}

fn ms(secs: i64, nanos: i64) -> i64 {
    // Node's Date of a stat time: Math.round(sec * 1e3 + nsec / 1e6).
    (secs as f64 * 1e3 + nanos as f64 / 1e6).round() as i64
}

/// node-tar's `modeFix` for directories: readable implies searchable.
fn dir_mode(mut mode: u32) -> u32 {
    if mode & 0o400 != 0 {
        mode |= 0o100;
    }
    if mode & 0o40 != 0 {
        mode |= 0o10;
    }
    if mode & 0o4 != 0 {
        mode |= 0o1;
    }
    mode
}

struct CountingWriter<'a> {
    out: &'a mut dyn Write,
    bytes: u64,
}

impl Write for CountingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn pad(writer: &mut CountingWriter<'_>, size: u64) -> Result<(), ArchiveError> {
    let rest = (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64;
    writer
        .write_all(&vec![0; rest as usize])
        .map_err(|e| ArchiveError::fs(e, "write", Path::new("")))
}

struct HeaderFields {
    path: String,
    linkpath: Option<String>,
    mode: u32,
    uid: u64,
    gid: u64,
    size: u64,
    mtime_ms: i64,
    atime_ms: i64,
    ctime_ms: i64,
    flag: u8,
    uname: String,
    dev: u64,
    ino: u64,
    nlink: u64,
}

/// `padOctal`: `size - 1` octal digits where they fit, then a space and NUL as node-tar wrote.
fn octal(buf: &mut [u8], value: u64) -> bool {
    let size = buf.len();
    let digits = format!("{value:o}");
    if digits.len() > size - 1 {
        return true;
    }
    let text = if digits.len() == size - 1 {
        format!("{digits}\0")
    } else {
        format!("{}{digits} \0", "0".repeat(size - digits.len() - 2))
    };
    buf.copy_from_slice(&text.as_bytes()[..size]);
    false
}

/// Writes `text` into `buf`; true when node-tar would need PAX for it.
fn string(buf: &mut [u8], text: &str) -> bool {
    let bytes = text.as_bytes();
    let n = bytes.len().min(buf.len());
    buf[..n].copy_from_slice(&bytes[..n]);
    utf16_len(text) != bytes.len() || bytes.len() > buf.len()
}

/// node-tar's `splitPrefix` (prefix field of 130 bytes: atime/ctime are set).
fn split_prefix(path: &str) -> (String, String, bool) {
    const NAME: usize = 100;
    const PREFIX: usize = 130;
    if path.len() < NAME {
        return (path.to_owned(), String::new(), false);
    }
    let mut prefix = posix_dirname(path);
    let mut name = basename(path).to_owned();
    loop {
        if name.len() <= NAME && prefix.len() <= PREFIX {
            return (name, prefix, false);
        }
        if name.len() > NAME && prefix.len() <= PREFIX {
            return (truncate(&name, NAME - 1), prefix, true);
        }
        name = format!("{}/{name}", basename(&prefix));
        prefix = posix_dirname(&prefix);
        if prefix == "." || prefix == "/" {
            return (truncate(path, NAME - 1), String::new(), true);
        }
    }
}

fn truncate(text: &str, units: usize) -> String {
    text.chars().take(units).collect()
}

impl HeaderFields {
    fn write(&self, writer: &mut CountingWriter<'_>) -> Result<(), ArchiveError> {
        let (block, need_pax) = self.encode();
        let result = if need_pax {
            writer
                .write_all(&self.pax())
                .and_then(|()| writer.write_all(&block))
        } else {
            writer.write_all(&block)
        };
        result.map_err(|e| ArchiveError::fs(e, "write", Path::new("")))
    }

    fn encode(&self) -> ([u8; BLOCK], bool) {
        let mut b = [0u8; BLOCK];
        let (name, prefix, mut need_pax) = split_prefix(&self.path);
        need_pax |= string(&mut b[0..100], &name);
        need_pax |= octal(&mut b[100..108], self.mode as u64);
        need_pax |= octal(&mut b[108..116], self.uid);
        need_pax |= octal(&mut b[116..124], self.gid);
        need_pax |= octal(&mut b[124..136], self.size);
        let mtime = self.mtime_ms.max(0) as u64 / 1000;
        need_pax |= octal(&mut b[136..148], mtime);
        b[156] = self.flag;
        if let Some(link) = &self.linkpath {
            need_pax |= string(&mut b[157..257], link);
        }
        b[257..263].copy_from_slice(b"ustar\0");
        b[263..265].copy_from_slice(b"00");
        need_pax |= string(&mut b[265..297], &self.uname);
        need_pax |= string(&mut b[345..475], &prefix);
        let sum: u64 = b[..148]
            .iter()
            .chain(&b[156..])
            .map(|&x| x as u64)
            .sum::<u64>()
            + 8 * 0x20;
        octal(&mut b[148..156], sum);
        (b, need_pax)
    }

    /// node-tar's PAX header for this entry: the fields in its order, each `len key=value\n`.
    fn pax(&self) -> Vec<u8> {
        let secs = |ms: i64| js_compat::number::to_string(ms as f64 / 1000.0);
        let mut body = String::new();
        let mut field = |key: &str, value: String| {
            let line = format!(" {key}={value}\n");
            let len = line.len();
            let mut digits = len.to_string().len();
            if len + digits >= 10usize.pow(digits as u32) {
                digits += 1;
            }
            body.push_str(&format!("{}{line}", len + digits));
        };
        field("path", self.path.clone());
        field("ctime", secs(self.ctime_ms));
        field("atime", secs(self.atime_ms));
        field("SCHILY.dev", self.dev.to_string());
        field("SCHILY.ino", self.ino.to_string());
        field("SCHILY.nlink", self.nlink.to_string());
        field("gid", self.gid.to_string());
        if let Some(link) = &self.linkpath {
            field("linkpath", link.clone());
        }
        field("mtime", secs(self.mtime_ms));
        field("size", self.size.to_string());
        field("uid", self.uid.to_string());
        field("uname", self.uname.clone());
        let body = body.into_bytes();
        let mut header = HeaderFields {
            path: truncate(&format!("PaxHeader/{}", basename(&self.path)), 99),
            linkpath: None,
            mode: if self.mode == 0 { 0o644 } else { self.mode },
            uid: self.uid,
            gid: self.gid,
            size: body.len() as u64,
            mtime_ms: self.mtime_ms,
            atime_ms: self.atime_ms,
            ctime_ms: self.ctime_ms,
            flag: b'x',
            uname: self.uname.clone(),
            dev: 0,
            ino: 0,
            nlink: 0,
        };
        header.linkpath = Some(String::new());
        let (block, _) = header.encode();
        let mut out = block.to_vec();
        out.extend_from_slice(&body);
        out.resize(BLOCK * (1 + body.len().div_ceil(BLOCK)), 0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::read::lossy;
    use crate::archive::{excluded, extract_archive, validate_archive};

    #[test]
    fn octal_fields_match_node_tar() {
        let mut b = [0u8; 8];
        octal(&mut b, 0o644);
        assert_eq!(&b, b"000644 \0");
        let mut b = [0u8; 12];
        octal(&mut b, 5);
        assert_eq!(&b, b"0000000005 \0");
    }

    #[test]
    fn packs_node_tar_layout_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("archive-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("src/sub")).unwrap();
        fs::write(dir.join("src/a.txt"), b"hello").unwrap();
        fs::write(dir.join("src/sub/b.bin"), vec![7u8; 700]).unwrap();
        fs::write(dir.join("src/skip.log"), b"x").unwrap();
        std::os::unix::fs::symlink("a.txt", dir.join("src/link")).unwrap();
        let mut bytes = Vec::new();
        let keep = |name: &str| !excluded(name, &["*.log".to_owned()]);
        let summary = pack_directory(&dir.join("src"), false, &keep, &mut bytes).unwrap();
        // ./, a.txt(1+1), link, sub/, sub/b.bin(1+2), EOF(2)
        assert_eq!(summary.bytes, 512 * (1 + 2 + 1 + 1 + 3 + 2));
        assert_eq!(summary.bytes, bytes.len() as u64);
        assert_eq!(summary.files, 2);
        let names: Vec<String> = tar::Archive::new(&bytes[..])
            .entries()
            .unwrap()
            .map(|e| lossy(&e.unwrap().path_bytes()))
            .collect();
        assert_eq!(names[0], "./");
        assert!(names.contains(&"./sub/b.bin".to_owned()));
        fs::write(dir.join("a.tar"), &bytes).unwrap();
        assert_eq!(validate_archive(&dir.join("a.tar")).unwrap(), 2);
        fs::create_dir(dir.join("out")).unwrap();
        extract_archive(&dir.join("a.tar"), &dir.join("out")).unwrap();
        assert_eq!(fs::read(dir.join("out/sub/b.bin")).unwrap(), vec![7u8; 700]);
        assert_eq!(
            fs::read_link(dir.join("out/link")).unwrap(),
            Path::new("a.txt")
        );
        assert!(!dir.join("out/skip.log").exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
