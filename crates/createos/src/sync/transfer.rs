//! Moving bytes through the files API: a host file streamed up as the request body, a sandbox
//! file streamed down into an exclusively created host file. No base64, no chunking.

use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use reqwest::Method;
use sandbox_core::archive::{self, ArchiveError, node_fs_message};
use sandbox_core::sparse::SparseFile;
use sandbox_core::{ErrorClass, ProviderError};

use crate::client::{Body, CreateOsClient};
use crate::messages;
use crate::signal::Signal;
use js_compat::uri::encode_uri_component;

/// Read size of an upload stream.
const UPLOAD_CHUNK: usize = 64 * 1024;

/// A Node `fs` error for `path`.
pub(crate) fn fs_error(error: std::io::Error, syscall: &str, path: &Path) -> ProviderError {
    ProviderError::new(node_fs_message(&error, syscall, path))
}

/// `PUT /sandboxes/{id}/files?path=<remote>` with the bytes of host file `local`, streamed.
pub(crate) async fn upload_file(
    client: &CreateOsClient,
    id: &str,
    local: &Path,
    remote: &str,
    signal: &Signal,
) -> Result<(), ProviderError> {
    let mut file = std::fs::File::open(local).map_err(|e| fs_error(e, "open", local))?;
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(4);
    // The reader stops as soon as the request drops the body (done, failed or aborted).
    tokio::task::spawn_blocking(move || {
        loop {
            let mut buf = vec![0; UPLOAD_CHUNK];
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.blocking_send(Ok(buf.into())).is_err() {
                        break;
                    }
                }
                Err(error) => {
                    let _ = tx.blocking_send(Err(error));
                    break;
                }
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    client
        .upload(id, remote, reqwest::Body::wrap_stream(stream), signal)
        .await
        .map_err(Into::into)
}

/// The most a file sync-out may bring to the host: 8 GiB, the outbound disk guard of the
/// Kubernetes provider (the original CreateOS provider had none for files; the 10 GiB
/// extraction limit of the contract is about archive entries).
pub const SYNC_OUT_FILE_LIMIT: u64 = 8 * 1024 * 1024 * 1024;

/// What a download is, and so how it is bounded.
pub(crate) enum Download<'a> {
    /// The sandbox file `remote` of a file sync-out: at most [`SYNC_OUT_FILE_LIMIT`] bytes.
    File { remote: &'a str },
    /// The archive of a directory sync-out: at most [`archive::EXTRACTION_LIMIT`] bytes, its
    /// members' declared sizes within the same limit and its extended headers within theirs,
    /// all checked as the bytes arrive ([`archive::StreamCheck`]).
    Archive,
}

impl Download<'_> {
    fn limit(&self) -> u64 {
        match self {
            Download::File { .. } => SYNC_OUT_FILE_LIMIT,
            Download::Archive => archive::EXTRACTION_LIMIT,
        }
    }

    fn too_large(&self) -> ProviderError {
        match self {
            Download::File { remote } => {
                ProviderError::new(messages::sync_out_file_too_large(remote))
            }
            Download::Archive => ProviderError::new(messages::ARCHIVE_UNSAFE),
        }
    }
}

/// `GET /sandboxes/{id}/files?path=<remote>` into `local`, created exclusively with `mode`
/// (before the umask). Returns the number of bytes written.
///
/// Bounded (the original had no bound: a 10 GB sparse file in the sandbox became 10 GB on the
/// host, and a 20 GB directory was downloaded whole before its check refused it): a declared
/// `Content-Length` over the bound is refused before the file is created, and the stream is
/// cut as soon as it passes it, or (an archive) as soon as a member header declares more than
/// the extraction limit in all. The partial file goes with the temp directory. All-zero blocks
/// are written as holes, so a sparse file within the bound costs the host no more disk than it
/// cost the sandbox.
pub(crate) async fn download_file(
    client: &CreateOsClient,
    id: &str,
    remote: &str,
    local: &Path,
    mode: u32,
    bound: Download<'_>,
    signal: &Signal,
) -> Result<u64, ProviderError> {
    let path = format!(
        "/sandboxes/{id}/files?path={}",
        encode_uri_component(remote)
    );
    let mut response = client
        .request(Method::GET, &path, Body::Empty, Some(signal))
        .await?;
    // fetch gives a null body for the null-body statuses.
    if matches!(response.status().as_u16(), 204 | 205) {
        return Err(ProviderError::new(messages::DOWNLOAD_NO_BODY));
    }
    let limit = bound.limit();
    if response
        .content_length()
        .is_some_and(|declared| declared > limit)
    {
        return Err(bound.too_large());
    }
    let mut check = match bound {
        Download::Archive => Some(archive::StreamCheck::with_declared_limit(
            archive::EXTRACTION_LIMIT,
        )),
        Download::File { .. } => None,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(local)
        .map_err(|e| fs_error(e, "open", local))?;
    let mut out = SparseFile::new(&mut file);
    let mut written = 0u64;
    loop {
        let chunk = tokio::select! {
            chunk = response.chunk() => chunk,
            reason = signal.aborted() => return Err(reason.to_error()),
        };
        match chunk {
            Ok(Some(bytes)) => {
                if written + bytes.len() as u64 > limit {
                    return Err(bound.too_large());
                }
                if let Some(check) = check.as_mut() {
                    check.feed(&bytes).map_err(|refused| match refused {
                        ArchiveError::ExtendedHeaderTooLarge { size } => {
                            ProviderError::new(messages::archive_extended_header_too_large(size))
                        }
                        _ => ProviderError::new(messages::ARCHIVE_UNSAFE),
                    })?;
                }
                out.write(&bytes).map_err(|e| fs_error(e, "write", local))?;
                written += bytes.len() as u64;
            }
            Ok(None) => break,
            Err(_) => {
                if let Some(reason) = signal.reason() {
                    return Err(reason.to_error());
                }
                return Err(
                    ProviderError::new(messages::TERMINATED).with_class(ErrorClass::TypeError)
                );
            }
        }
    }
    out.finish().map_err(|e| fs_error(e, "write", local))?;
    Ok(written)
}

/// `mkdtemp(<parent>/.paperclip-createos-XXXXXX)`: a fresh 0700 directory.
pub(crate) fn make_temp_dir(parent: &Path) -> Result<PathBuf, ProviderError> {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    loop {
        let mut random = [0u8; 6];
        if getrandom::fill(&mut random).is_err() {
            random = *b"xxxxxx";
        }
        let suffix: String = random
            .iter()
            .map(|b| CHARS[*b as usize % CHARS.len()] as char)
            .collect();
        let path = parent.join(format!(".paperclip-createos-{suffix}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(fs_error(e, "mkdtemp", &path)),
        }
    }
}
