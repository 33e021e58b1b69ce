//! The emulator held to the real node: the same exec sessions (stdin, stdin close, stdout and
//! stderr, the status frame with its exit code, a command that is not there, a terminal with a
//! resize) and the same pod log reads go to the real node and to the Kubernetes emulator, and
//! their frames and answers are compared. A difference that stays is listed in the emulator's
//! README ("Known differences from the real node"), and the comparison ignores exactly that
//! observation; a listed difference that no longer differs fails the test too.

use std::collections::BTreeMap;
use std::time::Duration;

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator};
use futures::{SinkExt, StreamExt};
use http_body_util::BodyExt;
use kube::Client;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::node::node;
use crate::support::{
    assert_only_documented_differences, client, documented_differences, get, post, unique, until,
    urlencode,
};

/// The longest one exec session may take (each ends on its own within a second).
const SESSION: Duration = Duration::from_secs(60);

/// One side of the comparison.
struct Side {
    admin: Client,
    image: String,
}

/// What one exec session showed: every frame in order, and how the socket ended.
#[derive(Debug, Default)]
struct Session {
    /// (channel, bytes) of every binary frame, in arrival order.
    frames: Vec<(u8, Vec<u8>)>,
    /// The close frame's code, if one came.
    close: Option<u16>,
    /// The negotiated subprotocol.
    protocol: String,
}

impl Session {
    fn channel(&self, channel: u8) -> Vec<u8> {
        self.frames
            .iter()
            .filter(|(c, _)| *c == channel)
            .flat_map(|(_, b)| b.clone())
            .collect()
    }

    /// The observations compared: each stream's bytes, the status frame, and the order of
    /// the frames with runs of one channel merged (chunking is the pipe's, not the protocol's),
    /// empty frames kept as their own entry.
    fn observe(&self, name: &str, out: &mut BTreeMap<String, Value>) {
        let text = |c| String::from_utf8_lossy(&self.channel(c)).into_owned();
        out.insert(format!("exec {name} protocol"), json!(self.protocol));
        out.insert(format!("exec {name} stdout"), json!(text(1)));
        out.insert(format!("exec {name} stderr"), json!(text(2)));
        let status = self.channel(3);
        out.insert(
            format!("exec {name} status"),
            serde_json::from_str(&exec_id_normalised(&String::from_utf8_lossy(&status)))
                .unwrap_or_else(|_| json!(text(3))),
        );
        // stdout and stderr are two pipes in the pod: which of them a node reads first is a
        // race, so their frames count as one "output" run here (their bytes are compared above).
        let mut order: Vec<String> = Vec::new();
        for (c, bytes) in &self.frames {
            let entry = match (c, bytes.is_empty()) {
                (_, true) => format!("{c}:empty"),
                (1 | 2, false) => "output".to_string(),
                _ => c.to_string(),
            };
            if order.last() != Some(&entry) || bytes.is_empty() {
                order.push(entry);
            }
        }
        out.insert(format!("exec {name} frame order"), json!(order));
        out.insert(format!("exec {name} close"), json!(self.close));
    }
}

/// What a session sends, in order, after the socket opens.
#[derive(Clone)]
enum Send {
    Stdin(&'static [u8]),
    /// v5: `[255, 0]`, the end of stdin.
    CloseStdin,
    Resize(u16, u16),
}

struct Case {
    name: &'static str,
    argv: &'static [&'static str],
    stdin: bool,
    tty: bool,
    sends: Vec<Send>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "stdin, stdin close, stdout, stderr, exit 3",
            argv: &["sh", "-c", "cat; echo err >&2; exit 3"],
            stdin: true,
            tty: false,
            sends: vec![Send::Stdin(b"hello\n"), Send::CloseStdin],
        },
        Case {
            name: "exit 0",
            argv: &["sh", "-c", "exit 0"],
            stdin: false,
            tty: false,
            sends: vec![],
        },
        Case {
            name: "output and exit 0",
            argv: &["sh", "-c", "echo out; echo err >&2"],
            stdin: false,
            tty: false,
            sends: vec![],
        },
        Case {
            name: "command not found",
            argv: &["no-such-command-here"],
            stdin: false,
            tty: false,
            sends: vec![],
        },
        Case {
            name: "tty with resize",
            argv: &[
                "sh",
                "-c",
                "read line; stty size; echo \"got $line\"; exit 4",
            ],
            stdin: true,
            tty: true,
            sends: vec![Send::Resize(100, 30), Send::Stdin(b"x\n")],
        },
    ]
}

/// The runtime names the exec it failed to start by a random 64-hex id: the one field
/// normalised (crates/emulator/README.md, "Known differences from the real node").
fn exec_id_normalised(status: &str) -> String {
    let marker = "failed to start exec \\\"";
    let mut out = String::new();
    let mut rest = status;
    while let Some(at) = rest.find(marker) {
        let (head, tail) = rest.split_at(at + marker.len());
        out.push_str(head);
        let id_len = tail.bytes().take_while(u8::is_ascii_hexdigit).count();
        out.push_str(if id_len == 64 {
            "<id>"
        } else {
            &tail[..id_len]
        });
        rest = &tail[id_len..];
    }
    out.push_str(rest);
    out
}

fn frame(channel: u8, data: &[u8]) -> Message {
    let mut v = vec![channel];
    v.extend_from_slice(data);
    Message::Binary(v.into())
}

/// Opens the exec websocket as the provider does (kube-rs offers `v5.channel.k8s.io` then
/// `v4.channel.k8s.io`), sends `case.sends`, and reads every frame until the socket ends.
async fn exec(admin: &Client, ns: &str, pod: &str, case: &Case) -> Session {
    let mut query = format!(
        "container=main&stdout=true&stdin={}&tty={}",
        case.stdin, case.tty
    );
    query.push_str(if case.tty {
        "&stderr=false"
    } else {
        "&stderr=true"
    });
    for arg in case.argv {
        query.push_str(&format!("&command={}", urlencode(arg)));
    }
    let request = http::Request::get(format!("/api/v1/namespaces/{ns}/pods/{pod}/exec?{query}"))
        .body(Vec::new())
        .unwrap();
    let connection = admin
        .connect(request)
        .await
        .unwrap_or_else(|e| panic!("exec {}: the upgrade failed: {e}", case.name));
    let mut session = Session {
        protocol: if connection.supports_stream_close() {
            "v5.channel.k8s.io".into()
        } else {
            "v4.channel.k8s.io".into()
        },
        ..Session::default()
    };
    let mut ws = connection.into_stream();
    for send in &case.sends {
        let message = match send {
            Send::Stdin(bytes) => frame(0, bytes),
            Send::CloseStdin => frame(255, &[0]),
            Send::Resize(width, height) => frame(
                4,
                json!({"Width": width, "Height": height})
                    .to_string()
                    .as_bytes(),
            ),
        };
        ws.send(message).await.expect("a frame is sent");
    }
    let read = async {
        while let Some(message) = ws.next().await {
            match message {
                Ok(Message::Binary(data)) if !data.is_empty() => {
                    session.frames.push((data[0], data[1..].to_vec()))
                }
                Ok(Message::Close(close)) => {
                    session.close = close.map(|c| u16::from(c.code));
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    };
    tokio::time::timeout(SESSION, read)
        .await
        .unwrap_or_else(|_| panic!("exec {}: the session did not end in {SESSION:?}", case.name));
    session
}

/// A raw GET: its status and body bytes.
async fn get_bytes(admin: &Client, path: &str) -> (u16, Vec<u8>) {
    let request = http::Request::get(path)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = admin.send(request).await.expect("the server answers");
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.expect("a whole body");
    (status, body.to_bytes().to_vec())
}

fn pod(name: &str, image: &str, script: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": image, "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", script]}]}})
}

/// Creates `spec` in `ns` (retried while the namespace's default service account is not there
/// yet, which the real admission requires) and waits for `phase`.
async fn create_pod(side: &Side, ns: &str, spec: &Value, phase: &str) {
    let name = spec["metadata"]["name"].as_str().unwrap();
    until(&format!("pod {name} to be created"), || async {
        let (status, body) =
            post(&side.admin, &format!("/api/v1/namespaces/{ns}/pods"), spec).await;
        match status {
            201 => Some(()),
            403 if body["message"]
                .as_str()
                .unwrap_or("")
                .contains("service account") =>
            {
                None
            }
            _ => panic!("create pod {name}: {status} {body}"),
        }
    })
    .await;
    until(&format!("pod {name} to be {phase}"), || async {
        let (_, body) = get(&side.admin, &format!("/api/v1/namespaces/{ns}/pods/{name}")).await;
        let now = body["status"]["phase"].as_str().unwrap_or("");
        assert!(
            now != "Failed" || phase == "Failed",
            "pod {name} failed: {body}"
        );
        (now == phase).then_some(())
    })
    .await;
}

/// Everything one side shows, keyed by observation.
async fn observe(side: &Side) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let ns = unique("conformance-node");
    let (status, body) = post(
        &side.admin,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .await;
    assert_eq!(status, 201, "create namespace: {body}");

    // Exec sessions, into a pod that sleeps.
    create_pod(
        side,
        &ns,
        &pod("execs", &side.image, "exec sleep 3600"),
        "Running",
    )
    .await;
    for case in cases() {
        exec(&side.admin, &ns, "execs", &case)
            .await
            .observe(case.name, &mut out);
    }

    // Log reads of a pod that printed known lines and ended (on stdout only: which of stdout
    // and stderr a node reads first is a race), and of one that wrote to stderr.
    let script = "echo one; echo two; echo three";
    create_pod(side, &ns, &pod("logs", &side.image, script), "Succeeded").await;
    let errors = "echo oops >&2; exit 2";
    create_pod(side, &ns, &pod("errlogs", &side.image, errors), "Failed").await;
    let base = format!("/api/v1/namespaces/{ns}/pods");
    for (what, path) in [
        ("log", format!("{base}/logs/log")),
        ("log container", format!("{base}/logs/log?container=main")),
        ("log follow", format!("{base}/logs/log?follow=true")),
        ("log tailLines=1", format!("{base}/logs/log?tailLines=1")),
        ("log tailLines=0", format!("{base}/logs/log?tailLines=0")),
        ("log limitBytes=5", format!("{base}/logs/log?limitBytes=5")),
        ("log stderr", format!("{base}/errlogs/log")),
        ("log missing pod", format!("{base}/no-such-pod/log")),
        (
            "log missing container",
            format!("{base}/logs/log?container=nope"),
        ),
    ] {
        let (status, body) = get_bytes(&side.admin, &path).await;
        out.insert(format!("{what} code"), json!(status));
        if status == 200 {
            out.insert(
                format!("{what} body"),
                json!(String::from_utf8_lossy(&body)),
            );
        } else {
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            for field in ["reason", "message", "code"] {
                out.insert(format!("{what} {field}"), body[field].clone());
            }
        }
    }

    let (status, body) =
        crate::support::delete(&side.admin, &format!("/api/v1/namespaces/{ns}")).await;
    assert_eq!(status, 200, "delete namespace: {body}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_execs_and_logs_as_the_real_node() {
    let node = node().await;
    let real = Side {
        admin: client(&node.kubeconfig).await,
        image: node.agent_image.clone(),
    };
    let real_observed = observe(&real).await;

    let emu = KubernetesEmulator::start(KubeEmulatorOptions::for_tests())
        .await
        .expect("emulator starts");
    let emulated = Side {
        admin: client(emu.kubeconfig_yaml()).await,
        image: node.agent_image.clone(),
    };
    let emu_observed = observe(&emulated).await;
    emu.shutdown().await;

    for (key, real_value) in &real_observed {
        let emu_value = emu_observed.get(key).unwrap_or(&Value::Null);
        eprintln!("{key}:\n    real:     {real_value}\n    emulator: {emu_value}");
    }
    assert_only_documented_differences(
        &real_observed,
        &emu_observed,
        &documented_differences("## Known differences from the real node"),
    );
}
