//! `pods/{name}/exec` over WebSocket, as the API server proxies it from the kubelet:
//! subprotocols `v5.channel.k8s.io` and `v4.channel.k8s.io`; binary frames whose first byte is
//! the channel (0 stdin, 1 stdout, 2 stderr, 3 status, 4 resize; v5 adds `[255, 0]` to close
//! stdin); the status channel carries a `metav1.Status` with the exit code. The command runs
//! for real in the pod's bubblewrap root.

use std::hash::{BuildHasher, Hasher, RandomState};
use std::path::Path;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};

use super::faults::FaultAction;
use super::kubelet::{self, effective_argv};
use super::pod_runtime::{ContainerEnv, PodRuntime, TreeGuard};
use super::route::{Query, ResourceRequest};
use super::state::App;
use super::status::{KubeError, KubeResult};
use super::store::{ObjKey, meta_str};
use crate::sandbox_runner::{IoMode, Launched, LaunchedIo, ProcessTree, PtyMaster};

const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const STATUS: u8 = 3;
const RESIZE: u8 = 4;
const CLOSE: u8 = 255;
/// Not a channel: output the client did not ask for, read so the command never blocks on it
/// and dropped.
const DROPPED: u8 = 0xfe;

/// A validated exec request, ready to upgrade.
pub struct ExecPlan {
    pod: Arc<PodRuntime>,
    container: ContainerEnv,
    argv: Vec<String>,
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
    protocol: Option<String>,
}

/// Whether the request asks for a WebSocket upgrade.
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Checks the pod, container, command and streams, and negotiates the subprotocol.
pub fn prepare(
    app: &App,
    rr: &ResourceRequest,
    q: &Query,
    headers: &HeaderMap,
) -> KubeResult<ExecPlan> {
    let rt = app.rt("", "pods");
    let name = rr.name.clone().unwrap_or_default();
    let ns = rr.namespace.clone().unwrap_or_default();
    let pod = app
        .store
        .get(&ObjKey::pod(&ns, &name))
        .ok_or_else(|| KubeError::not_found(rt, &name))?;
    let argv = q.all("command");
    if argv.is_empty() {
        return Err(KubeError::bad_request(
            "you must specify at least one command for the container",
        ));
    }
    let (stdin, stdout, stderr, tty) = (
        q.flag("stdin"),
        q.flag("stdout"),
        q.flag("stderr"),
        q.flag("tty"),
    );
    if !(stdin || stdout || stderr) {
        return Err(KubeError::bad_request(
            "you must specify at least 1 of stdin, stdout, stderr",
        ));
    }
    let container_name = kubelet::container_named(&pod, &name, q.get("container"))?;
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending");
    if phase == "Succeeded" || phase == "Failed" {
        return Err(KubeError::bad_request(format!(
            "cannot exec into a container in a completed pod; current phase is {phase}"
        )));
    }
    let uid = meta_str(&pod, "uid").unwrap_or_default();
    let runtime = app.pod_runtime(uid);
    let container = runtime
        .as_ref()
        .and_then(|r| r.container(Some(&container_name)))
        .ok_or_else(|| {
            KubeError::bad_request(format!(
                "unable to upgrade connection: container not found (\"{container_name}\")"
            ))
        })?;
    let offered: Vec<String> = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    let served = app.settings().exec_protocols;
    let protocol = if offered.is_empty() {
        None
    } else {
        match offered.iter().find(|p| served.contains(p)) {
            Some(p) => Some(p.clone()),
            None => {
                return Err(KubeError::bad_request(format!(
                    "unable to upgrade connection: unable to negotiate protocol: client supports {offered:?}, server supports {served:?}"
                )));
            }
        }
    };
    Ok(ExecPlan {
        pod: runtime.expect("checked"),
        container,
        argv,
        stdin,
        stdout,
        stderr: stderr && !tty,
        tty,
        protocol,
    })
}

/// The 101 response; the session runs once hyper hands over the connection.
pub fn upgrade(
    app: Arc<App>,
    plan: ExecPlan,
    headers: &HeaderMap,
    on_upgrade: OnUpgrade,
    fault: Option<FaultAction>,
) -> KubeResult<Response<Body>> {
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .ok_or_else(|| KubeError::bad_request("missing Sec-WebSocket-Key"))?;
    let accept = derive_accept_key(key.as_bytes());
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(
        header::SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).expect("ascii"),
    );
    if let Some(p) = &plan.protocol {
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_str(p).expect("ascii"),
        );
    }
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        session(app, plan, ws, fault).await;
    });
    Ok(resp)
}

/// The exit status a real node reports on channel 3 (through the API server's stream
/// translation, for v4 and v5 alike).
pub fn exit_status(code: i32) -> Value {
    if code == 0 {
        return json!({ "metadata": {}, "status": "Success" });
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: command terminated with exit code {code}"
        ),
        "reason": "NonZeroExitCode",
        "details": { "causes": [{ "reason": "ExitCode", "message": code.to_string() }] },
    })
}

/// What a real node (containerd and runc) says when `argv0` cannot be executed: the error of
/// the runtime's exec, which names the exec's random 64-hex id, wrapped twice as an internal
/// error (once in `details.causes`).
fn exec_failure(argv0: &str) -> Value {
    let id: String = (0..4)
        .map(|_| format!("{:016x}", RandomState::new().build_hasher().finish()))
        .collect();
    let cause = format!(
        "Internal error occurred: error executing command in container: failed to exec in container: failed to start exec \"{id}\": OCI runtime exec failed: exec failed: unable to start container process: exec: \"{argv0}\": executable file not found in $PATH: unknown"
    );
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("Internal error occurred: {cause}"),
        "reason": "InternalError",
        "details": { "causes": [{ "message": cause }] },
        "code": 500,
    })
}

/// Whether `argv0` names an executable inside the pod (its root, plus the host's system dirs).
fn resolves(root: &Path, argv0: &str, path_var: &str) -> bool {
    let exists = |p: &str| {
        let inside = root.join(p.trim_start_matches('/'));
        inside.exists() || Path::new(p).exists()
    };
    if argv0.contains('/') {
        return !argv0.starts_with('/') || exists(argv0);
    }
    path_var
        .split(':')
        .any(|dir| exists(&format!("{dir}/{argv0}")))
}

type Ws = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

fn frame(channel: u8, data: &[u8]) -> Message {
    let mut v = Vec::with_capacity(data.len() + 1);
    v.push(channel);
    v.extend_from_slice(data);
    Message::Binary(Bytes::from(v))
}

/// The close a real node ends every session with, after the status frame.
fn normal_close() -> Message {
    Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }))
}

/// The channel of the empty frame a real API server sends first, before anything of the
/// command (its stream translation opens the connection that way): the lowest channel the
/// server writes, stdout if asked for, else stderr, else the status channel.
fn hello_channel(plan: &ExecPlan) -> u8 {
    if plan.stdout {
        STDOUT
    } else if plan.stderr {
        STDERR
    } else {
        STATUS
    }
}

enum Out {
    Frame(u8, Bytes),
}

async fn pump(mut pipe: impl AsyncRead + Unpin, channel: u8, tx: mpsc::Sender<Out>) {
    let mut buf = vec![0u8; 32 * 1024];
    while let Ok(n @ 1..) = pipe.read(&mut buf).await {
        if tx
            .send(Out::Frame(channel, Bytes::copy_from_slice(&buf[..n])))
            .await
            .is_err()
        {
            return;
        }
    }
}

async fn pump_pty(master: Arc<PtyMaster>, tx: mpsc::Sender<Out>) {
    let mut buf = vec![0u8; 32 * 1024];
    while let Ok(n @ 1..) = master.read(&mut buf).await {
        if tx
            .send(Out::Frame(STDOUT, Bytes::copy_from_slice(&buf[..n])))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Stdin for the command, written by its own task so that a command that does not read
/// never blocks the session (output keeps flowing, pings keep being answered).
enum StdinMsg {
    Data(Bytes),
    /// v5 CLOSE of the stdin channel: EOF on a pipe, ^D on a terminal.
    Close,
}

fn stdin_pipe_writer(mut pipe: ChildStdin) -> mpsc::UnboundedSender<StdinMsg> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(StdinMsg::Data(b)) = rx.recv().await {
            if pipe.write_all(&b).await.is_err() {
                // The command stopped reading: later stdin is dropped.
                return;
            }
        }
    });
    tx
}

fn stdin_pty_writer(master: Arc<PtyMaster>) -> mpsc::UnboundedSender<StdinMsg> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            let data = match &msg {
                StdinMsg::Data(b) => &b[..],
                StdinMsg::Close => &[4u8][..],
            };
            if master.write_all(data).await.is_err() {
                return;
            }
        }
    });
    tx
}

/// The client went away before the command ended. A kubelet kills nothing then (exec has no
/// kill, and closing the stream ends no command): the command's stdin reaches its end and its
/// output pipes lose their reader (a later write fails with `EPIPE`), and it runs on. A terminal
/// session is the exception here: its shell is killed, where a real node's would get `SIGHUP`
/// from its closing terminal.
fn client_gone(tree: &ProcessTree, tty: bool) {
    if tty {
        tree.kill();
    }
}

type WsSink = futures_util::stream::SplitSink<Ws, Message>;

/// Sends a final status frame and closes: the exec ends without a command.
async fn refuse(sink: &mut WsSink, status: Value) {
    let _ = sink
        .send(frame(STATUS, status.to_string().as_bytes()))
        .await;
    let _ = sink.send(normal_close()).await;
}

/// Starts the plan's command in its container, or tells the client why not (a command that
/// does not resolve in the pod, as a node's runtime reports it; a launch that failed).
async fn start_command(
    app: &App,
    plan: &ExecPlan,
    sink: &mut WsSink,
) -> Option<(Launched, TreeGuard)> {
    let argv = effective_argv(app, plan.argv.clone());
    let path_var = plan
        .container
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let root = plan.pod.root_path().unwrap_or_default();
    if !resolves(&root, &argv[0], &path_var) {
        refuse(sink, exec_failure(&plan.argv[0])).await;
        return None;
    }
    let io = if plan.tty {
        IoMode::Pty { cols: 80, rows: 24 }
    } else {
        IoMode::Pipes { stdin: plan.stdin }
    };
    match plan.pod.launch(&app.bwrap, &plan.container, argv, io) {
        Ok(started) => Some(started),
        Err(e) => {
            let status = json!({ "metadata": {}, "status": "Failure", "reason": "InternalError",
                "message": format!("failed to start exec: {e}"), "code": 500 });
            refuse(sink, status).await;
            None
        }
    }
}

/// The command's streams as the session uses them: its output as frames on one channel (closed
/// once every output is drained), a writer for its stdin, and its terminal if it has one.
struct CommandIo {
    output: mpsc::Receiver<Out>,
    stdin: Option<mpsc::UnboundedSender<StdinMsg>>,
    pty: Option<Arc<PtyMaster>>,
}

/// Pumps the command's output into frames (to its asked-for channels; unwanted output is read
/// and dropped, so the command never blocks on it) and starts its stdin writer.
fn connect_io(io: LaunchedIo, plan: &ExecPlan) -> CommandIo {
    let (tx, output) = mpsc::channel::<Out>(32);
    let (stdin, pty) = match io {
        LaunchedIo::Pipes {
            stdin,
            stdout,
            stderr,
        } => {
            let out_channel = if plan.stdout { STDOUT } else { DROPPED };
            let err_channel = if plan.stderr { STDERR } else { DROPPED };
            let (t1, t2) = (tx.clone(), tx);
            tokio::spawn(async move {
                tokio::join!(pump(stdout, out_channel, t1), pump(stderr, err_channel, t2));
            });
            (stdin.map(stdin_pipe_writer), None)
        }
        LaunchedIo::Pty(master) => {
            let master = Arc::new(master);
            tokio::spawn(pump_pty(master.clone(), tx));
            (Some(stdin_pty_writer(master.clone())), Some(master))
        }
    };
    CommandIo {
        output,
        stdin: stdin.filter(|_| plan.stdin),
        pty,
    }
}

/// The command's exit code, once bwrap is reaped (its tree registration goes with it).
fn exit_code(
    mut child: tokio::process::Child,
    tree: Arc<ProcessTree>,
    guard: TreeGuard,
) -> tokio::sync::oneshot::Receiver<i32> {
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel::<i32>();
    tokio::spawn(async move {
        let ended = tree.wait(&mut child).await;
        drop(guard);
        let _ = exit_tx.send(ended.shell_code());
    });
    exit_rx
}

/// Where a `cutExec` fault cuts a session: after this many output frames, or (instead) once
/// the client has sent this many stdin bytes; `abort`: without a close frame.
#[derive(Clone, Copy)]
struct Cut {
    frames: Option<usize>,
    stdin_bytes: Option<u64>,
    abort: bool,
}

impl Cut {
    fn of(fault: Option<FaultAction>) -> Option<Cut> {
        match fault {
            Some(FaultAction::CutExec {
                after_frames,
                abort,
                after_stdin_bytes,
            }) => Some(Cut {
                frames: after_stdin_bytes.is_none().then_some(after_frames),
                stdin_bytes: after_stdin_bytes,
                abort,
            }),
            _ => None,
        }
    }
}

/// A fault that cuts the stream: kills the command and drops the connection (`abort`) or
/// closes it with an error.
async fn cut_stream(tree: &ProcessTree, sink: &mut WsSink, abort: bool) {
    tree.kill();
    if !abort {
        let _ = sink
            .send(Message::Close(Some(CloseFrame {
                code: CloseCode::Error,
                reason: "emulator fault".into(),
            })))
            .await;
    }
}

/// The command has ended and its output is sent: the status frame, a normal close, and a
/// short wait for the client to see it before the connection goes.
async fn finish(sink: &mut WsSink, stream: &mut futures_util::stream::SplitStream<Ws>, code: i32) {
    let _ = sink
        .send(frame(STATUS, exit_status(code).to_string().as_bytes()))
        .await;
    let _ = sink.send(normal_close()).await;
    let _ = sink.flush().await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), async {
        while let Some(Ok(_)) = stream.next().await {}
    })
    .await;
}

/// One binary frame from the client: stdin data, the v5 close of stdin, or a terminal resize.
fn client_frame(data: &Bytes, v5: bool, io: &mut CommandIo) {
    match data[0] {
        STDIN => {
            if let Some(tx) = &io.stdin {
                let _ = tx.send(StdinMsg::Data(data.slice(1..)));
            }
        }
        CLOSE if v5 && data.get(1) == Some(&STDIN) => {
            if let Some(tx) = io.stdin.take() {
                let _ = tx.send(StdinMsg::Close);
                // A terminal's ^D is only a byte: later input still reaches the shell.
                if io.pty.is_some() {
                    io.stdin = Some(tx);
                }
            }
        }
        RESIZE => {
            let size = serde_json::from_slice::<Value>(&data[1..]).ok();
            if let (Some(m), Some(size)) = (&io.pty, size) {
                let w = size["Width"].as_u64().unwrap_or(80) as u16;
                let h = size["Height"].as_u64().unwrap_or(24) as u16;
                let _ = m.resize(w, h);
            }
        }
        _ => {}
    }
}

async fn session(app: Arc<App>, plan: ExecPlan, ws: Ws, fault: Option<FaultAction>) {
    let (mut sink, mut stream) = ws.split();
    if sink.send(frame(hello_channel(&plan), &[])).await.is_err() {
        return;
    }
    let v5 = plan.protocol.as_deref() == Some("v5.channel.k8s.io");
    let Some((launched, guard)) = start_command(&app, &plan, &mut sink).await else {
        return;
    };
    let Launched { tree, io, child } = launched;
    let mut io = connect_io(io, &plan);
    let mut exit_rx = exit_code(child, tree.clone(), guard);
    let tty = io.pty.is_some();

    let cut = Cut::of(fault);
    if let Some(Cut {
        frames: Some(0),
        abort,
        ..
    }) = cut
    {
        cut_stream(&tree, &mut sink, abort).await;
        return;
    }
    let (mut frames_sent, mut stdin_taken) = (0usize, 0u64);
    let mut outputs_open = true;
    let mut exit_code: Option<i32> = None;
    loop {
        if !outputs_open && let Some(code) = exit_code {
            finish(&mut sink, &mut stream, code).await;
            return;
        }
        tokio::select! {
            out = io.output.recv(), if outputs_open => match out {
                Some(Out::Frame(DROPPED, _)) => {}
                Some(Out::Frame(ch, data)) => {
                    if sink.send(frame(ch, &data)).await.is_err() {
                        client_gone(&tree, tty);
                        return;
                    }
                    frames_sent += 1;
                    if let Some(Cut { frames: Some(n), abort, .. }) = cut && frames_sent >= n {
                        cut_stream(&tree, &mut sink, abort).await;
                        return;
                    }
                }
                None => outputs_open = false,
            },
            code = &mut exit_rx, if exit_code.is_none() => {
                exit_code = Some(code.unwrap_or(137));
            },
            msg = stream.next() => match msg {
                Some(Ok(Message::Binary(data))) if !data.is_empty() => {
                    client_frame(&data, v5, &mut io);
                    if data[0] == STDIN {
                        stdin_taken += data.len() as u64 - 1;
                    }
                    if let Some(Cut { stdin_bytes: Some(n), abort, .. }) = cut && stdin_taken >= n {
                        cut_stream(&tree, &mut sink, abort).await;
                        return;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                    client_gone(&tree, tty);
                    return;
                }
                Some(Ok(_)) => {}
            },
        }
    }
}
