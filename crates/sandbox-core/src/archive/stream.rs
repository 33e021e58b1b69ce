//! Bounds of a received archive checked on the raw bytes, as they arrive: before the `tar`
//! crate reads a header into memory, and before a download writes more to the host.
//!
//! The `tar` crate reads a PAX extended header (`x`) and a GNU long name or long link (`L`,
//! `K`) into memory whole, whatever size the header declares; a hostile archive could make it
//! allocate gigabytes. [`StreamCheck`] follows the archive's framing block by block (headers,
//! GNU sparse extension blocks, data, padding), exactly as the crate does, including a PAX
//! `size` record overriding the size of the member it describes, and refuses:
//! - an extended header (`x`, `g`, `L`, `K`) over [`EXTENDED_HEADER_LIMIT`], as soon as its
//!   header block arrives ([`ArchiveError::ExtendedHeaderTooLarge`]);
//! - with a declared limit ([`StreamCheck::with_declared_limit`]), a running sum of member sizes
//!   over it, as soon as the header that passes it arrives ([`ArchiveError::Unsafe`]).
//!
//! Where the framing becomes unreadable (a bad checksum or size field) the check stops: the
//! crate fails at the same header, so nothing past it is ever read. The end-of-archive block
//! ends the check the same way.
//!
//! [`CheckedReader`] applies a check to a reader (the crate then never sees a refused header);
//! the CreateOS download feeds each chunk to one before writing it.

use std::io::{self, Read};

use super::ArchiveError;

/// Largest extended header (PAX `x`/`g`, GNU long name `L` or long link `K`) an archive may
/// carry: 1 MiB. Real ones hold a path, a link target, times and perhaps extended attributes
/// (GNU tar and node-tar write well under 64 KiB).
pub const EXTENDED_HEADER_LIMIT: u64 = 1024 * 1024;

const BLOCK: u64 = 512;

#[derive(Debug)]
enum State {
    /// Collecting a header block.
    Header,
    /// Collecting GNU sparse extension blocks; then `data` bytes (padded) follow.
    Extension { data: u64 },
    /// Collecting the data of a PAX `x` member (at most the limit), then `pad` bytes.
    Pax { remaining: u64, pad: u64 },
    /// Skipping data and padding.
    Skip { remaining: u64 },
    /// End of archive, or framing the crate itself refuses: nothing more is checked.
    Done,
}

/// The incremental check (see the module docs).
#[derive(Debug)]
pub struct StreamCheck {
    state: State,
    block: Vec<u8>,
    pax: Vec<u8>,
    /// The `size` of the pending PAX header, for the next member that is not an extension.
    pending_size: Option<Option<u64>>,
    declared: u64,
    declared_limit: Option<u64>,
}

impl Default for StreamCheck {
    fn default() -> Self {
        StreamCheck {
            state: State::Header,
            block: Vec::with_capacity(BLOCK as usize),
            pax: Vec::new(),
            pending_size: None,
            declared: 0,
            declared_limit: None,
        }
    }
}

fn is_extension(flag: u8) -> bool {
    matches!(flag, b'x' | b'g' | b'L' | b'K')
}

fn padded(size: u64) -> u64 {
    size.div_ceil(BLOCK).saturating_mul(BLOCK)
}

impl StreamCheck {
    /// A check of the extended-header bound only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also refuses once the running sum of member sizes passes `limit`.
    pub fn with_declared_limit(limit: u64) -> Self {
        StreamCheck {
            declared_limit: Some(limit),
            ..Self::default()
        }
    }

    /// The running sum of member sizes so far.
    pub fn declared(&self) -> u64 {
        self.declared
    }

    /// Checks the next bytes of the archive.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<(), ArchiveError> {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Done => return Ok(()),
                State::Skip { remaining } => {
                    let n = (*remaining).min(bytes.len() as u64);
                    *remaining -= n;
                    bytes = &bytes[n as usize..];
                    if *remaining == 0 {
                        self.state = State::Header;
                    }
                }
                State::Pax { remaining, pad } => {
                    let n = (*remaining).min(bytes.len() as u64) as usize;
                    self.pax.extend_from_slice(&bytes[..n]);
                    *remaining -= n as u64;
                    bytes = &bytes[n..];
                    if *remaining == 0 {
                        let pad = *pad;
                        self.pending_size = Some(pax_size(&self.pax));
                        self.pax = Vec::new();
                        self.state = if pad == 0 {
                            State::Header
                        } else {
                            State::Skip { remaining: pad }
                        };
                    }
                }
                State::Header | State::Extension { .. } => {
                    let n = (BLOCK as usize - self.block.len()).min(bytes.len());
                    self.block.extend_from_slice(&bytes[..n]);
                    bytes = &bytes[n..];
                    if self.block.len() == BLOCK as usize {
                        let block = std::mem::take(&mut self.block);
                        self.block_complete(&block)?;
                        self.block = block;
                        self.block.clear();
                    }
                }
            }
        }
        Ok(())
    }

    fn block_complete(&mut self, block: &[u8]) -> Result<(), ArchiveError> {
        if let State::Extension { data } = self.state {
            // GNU sparse extension block: byte 504 says whether another one follows.
            self.state = if block[504] != 0 {
                State::Extension { data }
            } else {
                self.after_header(data)
            };
            return Ok(());
        }
        if block.iter().all(|&b| b == 0) {
            self.state = State::Done;
            return Ok(());
        }
        let header = tar::Header::from_byte_slice(block);
        let sum: u32 = block[..148]
            .iter()
            .chain(&block[156..])
            .map(|&b| b as u32)
            .sum::<u32>()
            + 8 * 32;
        let (Ok(cksum), Ok(header_size)) = (header.cksum(), header.entry_size()) else {
            self.state = State::Done;
            return Ok(());
        };
        if sum != cksum {
            self.state = State::Done;
            return Ok(());
        }
        let flag = block[156];
        let recognized = header.as_ustar().is_some() || header.as_gnu().is_some();
        if is_extension(flag) {
            if header_size > EXTENDED_HEADER_LIMIT {
                return Err(ArchiveError::ExtendedHeaderTooLarge { size: header_size });
            }
            if recognized && flag == b'x' {
                if self.pending_size.is_some() {
                    // The crate refuses two PAX headers for one member.
                    self.state = State::Done;
                    return Ok(());
                }
                self.pax = Vec::with_capacity(header_size as usize);
                self.state = if header_size == 0 {
                    self.pending_size = Some(None);
                    State::Header
                } else {
                    State::Pax {
                        remaining: header_size,
                        pad: padded(header_size) - header_size,
                    }
                };
                return Ok(());
            }
            if recognized && matches!(flag, b'L' | b'K') {
                self.state = self.after_header(header_size);
                return Ok(());
            }
            // `g`, or an extension type without a ustar/GNU magic: the crate hands it out as
            // a member (the pending PAX header goes with it, unapplied to its size).
            self.pending_size = None;
            self.state = self.after_header(header_size);
            return Ok(());
        }
        let size = match self.pending_size.take() {
            Some(Some(pax)) => pax,
            _ => header_size,
        };
        self.declared = self.declared.saturating_add(size);
        if self
            .declared_limit
            .is_some_and(|limit| self.declared > limit)
        {
            return Err(ArchiveError::Unsafe);
        }
        // A GNU sparse member: its extension blocks follow the header, before the data.
        if flag == b'S' {
            match header.as_gnu() {
                Some(gnu) if gnu.is_extended() => {
                    self.state = State::Extension { data: size };
                    return Ok(());
                }
                Some(_) => {}
                None => {
                    self.state = State::Done;
                    return Ok(());
                }
            }
        }
        self.state = self.after_header(size);
        Ok(())
    }

    fn after_header(&self, data: u64) -> State {
        match padded(data) {
            0 => State::Header,
            remaining => State::Skip { remaining },
        }
    }
}

/// The PAX `size` record as the crate reads it (the first one; unreadable records: none).
fn pax_size(data: &[u8]) -> Option<u64> {
    for extension in tar::PaxExtensions::new(data) {
        let extension = extension.ok()?;
        if extension.key() == Ok("size") {
            return extension.value().ok()?.parse().ok();
        }
    }
    None
}

/// The error a refused check travels in through the `tar` crate.
#[derive(Debug)]
struct Refused(ArchiveError);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::error::Error for Refused {}

/// A reader that runs a [`StreamCheck`] over every byte before handing it on.
pub struct CheckedReader<R> {
    inner: R,
    check: StreamCheck,
}

impl<R: Read> CheckedReader<R> {
    pub fn new(inner: R, check: StreamCheck) -> Self {
        CheckedReader { inner, check }
    }
}

impl<R: Read> Read for CheckedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.check
            .feed(&buf[..n])
            .map_err(|refused| io::Error::other(Refused(refused)))?;
        Ok(n)
    }
}

/// The archive error behind an error of the `tar` crate: the check's refusal when it is one,
/// otherwise [`ArchiveError::Format`].
pub fn entry_error(error: io::Error) -> ArchiveError {
    match error.into_inner().map(|inner| inner.downcast::<Refused>()) {
        Some(Ok(refused)) => refused.0,
        _ => ArchiveError::Format,
    }
}

/// The archive at `file`, read through a [`StreamCheck`] of the extended-header bound.
pub fn open_checked(file: &std::path::Path) -> Result<tar::Archive<impl Read>, ArchiveError> {
    let reader = std::fs::File::open(file).map_err(|e| ArchiveError::fs(e, "open", file))?;
    Ok(read_checked(reader))
}

/// The archive `reader` yields (a file, or a stream as it arrives), read through a
/// [`StreamCheck`] of the extended-header bound, as [`open_checked`] reads a file.
pub fn read_checked<R: Read>(reader: R) -> tar::Archive<impl Read> {
    tar::Archive::new(io::BufReader::new(CheckedReader::new(
        reader,
        StreamCheck::new(),
    )))
}
