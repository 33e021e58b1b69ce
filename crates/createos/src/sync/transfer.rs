//! Moving bytes through the files API: a host file streamed up as the request body, a sandbox
//! file streamed down into an exclusively created host file. No base64, no chunking.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use reqwest::Method;
use sandbox_core::archive::{self, node_fs_message};
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

/// `GET /sandboxes/{id}/files?path=<remote>` into `local`, created exclusively with `mode`
/// (before the umask). Returns the number of bytes written.
///
/// Bounded by [`archive::EXTRACTION_LIMIT`] (the original had no bound: a 10 GB sparse file in
/// the sandbox became 10 GB on the host): a declared `Content-Length` over it is refused before
/// the file is created, and the stream is cut as soon as it passes it (the partial file goes
/// with the temp directory). Both fail with the archive-limit message.
pub(crate) async fn download_file(
    client: &CreateOsClient,
    id: &str,
    remote: &str,
    local: &Path,
    mode: u32,
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
    if response
        .content_length()
        .is_some_and(|declared| declared > archive::EXTRACTION_LIMIT)
    {
        return Err(ProviderError::new(messages::ARCHIVE_UNSAFE));
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(local)
        .map_err(|e| fs_error(e, "open", local))?;
    let mut written = 0u64;
    loop {
        let chunk = tokio::select! {
            chunk = response.chunk() => chunk,
            reason = signal.aborted() => return Err(reason.to_error()),
        };
        match chunk {
            Ok(Some(bytes)) => {
                if written + bytes.len() as u64 > archive::EXTRACTION_LIMIT {
                    return Err(ProviderError::new(messages::ARCHIVE_UNSAFE));
                }
                file.write_all(&bytes)
                    .map_err(|e| fs_error(e, "write", local))?;
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
