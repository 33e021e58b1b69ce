//! Writing received bytes to a host file without expanding holes.
//!
//! A sandbox can hand back a sparse file (10 GB of apparent size on no disk at all); written
//! byte for byte, its zeros become real blocks on the host. [`SparseFile`] writes every
//! all-zero block of [`HOLE_BLOCK`] bytes as a hole (a seek) instead, and sets the final length
//! at the end, so the host file has the same content and costs no more disk than the sandbox's.
//! The bounds on how much may be received at all are the callers' (the sync-out limits).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

/// The granularity of holes: a file-system block.
pub const HOLE_BLOCK: usize = 4096;

/// A file being written from its start, with all-zero blocks left as holes.
pub struct SparseFile<'a> {
    file: &'a mut File,
    /// Bytes of content so far (the file's final length).
    len: u64,
    /// Whether the position is past what was written (a hole is pending).
    pending_hole: bool,
}

impl<'a> SparseFile<'a> {
    /// Writes into `file`, which must be empty and positioned at its start.
    pub fn new(file: &'a mut File) -> Self {
        SparseFile {
            file,
            len: 0,
            pending_hole: false,
        }
    }

    /// Appends `bytes`.
    pub fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            // Keep blocks aligned to the file offset, so holes are whole blocks.
            let offset = (self.len % HOLE_BLOCK as u64) as usize;
            let n = (HOLE_BLOCK - offset).min(bytes.len());
            let (block, rest) = bytes.split_at(n);
            if block.iter().all(|&b| b == 0) {
                self.file.seek(SeekFrom::Current(n as i64))?;
                self.pending_hole = true;
            } else {
                self.file.write_all(block)?;
                self.pending_hole = false;
            }
            self.len += n as u64;
            bytes = rest;
        }
        Ok(())
    }

    /// Sets the file's length to what was written (a trailing hole included); the length.
    pub fn finish(self) -> io::Result<u64> {
        if self.pending_hole {
            self.file.set_len(self.len)?;
        }
        Ok(self.len)
    }
}

/// Why [`copy_sparse`] failed: reading the source or writing the file.
#[derive(Debug)]
pub enum CopyError {
    Read(io::Error),
    Write(io::Error),
}

/// Copies `reader` to the start of the empty `file`, leaving zero blocks as holes; the length.
pub fn copy_sparse(reader: &mut dyn Read, file: &mut File) -> Result<u64, CopyError> {
    let mut out = SparseFile::new(file);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Read(e)),
        };
        out.write(&buf[..n]).map_err(CopyError::Write)?;
    }
    out.finish().map_err(CopyError::Write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn zero_blocks_become_holes_and_content_is_kept() {
        let dir = std::env::temp_dir().join(format!("sparse-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let mut content = vec![0u8; 64 * 1024 * 1024];
        content[5] = 1;
        content[10 * 1024 * 1024 + 3] = 2;
        let mut file = File::create(&path).unwrap();
        // Odd chunk sizes: blocks straddle writes.
        let mut out = SparseFile::new(&mut file);
        for chunk in content.chunks(7777) {
            out.write(chunk).unwrap();
        }
        assert_eq!(out.finish().unwrap(), content.len() as u64);
        drop(file);
        assert_eq!(std::fs::read(&path).unwrap(), content);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.len(), content.len() as u64);
        // Two data blocks (and what the file system rounds up to), not 64 MiB.
        assert!(
            meta.blocks() * 512 < 1024 * 1024,
            "{} blocks",
            meta.blocks()
        );

        let mut file = File::create(&path).unwrap();
        let copied = copy_sparse(&mut &b"abc"[..], &mut file).unwrap();
        assert_eq!(copied, 3);
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
