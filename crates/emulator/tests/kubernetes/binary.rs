//! The `kubernetes-emulator` binary's contract: one JSON line on stdout, serve until stdin
//! closes, clean up.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Http;

#[tokio::test]
async fn prints_one_json_line_serves_and_exits_when_stdin_closes() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubernetes-emulator"))
        .args([
            "--fast",
            "--token",
            "bin-token",
            "--sandbox-versions",
            "v1alpha1,v1beta1",
            "--namespace",
            "extra",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: Value = serde_json::from_str(&line).expect("one JSON line");
    assert_eq!(ready["token"], "bin-token");
    assert!(
        ready["url"]
            .as_str()
            .unwrap()
            .starts_with("https://127.0.0.1:")
    );
    assert!(
        ready["caPem"]
            .as_str()
            .unwrap()
            .contains("BEGIN CERTIFICATE")
    );
    let kubeconfig = std::fs::read_to_string(ready["kubeconfig"].as_str().unwrap()).unwrap();
    assert!(kubeconfig.contains("certificate-authority-data: "));
    assert!(kubeconfig.contains("token: \"bin-token\""));
    assert_eq!(kubeconfig, ready["kubeconfigYaml"].as_str().unwrap());
    let http = Http {
        addr: ready["httpUrl"]
            .as_str()
            .unwrap()
            .trim_start_matches("http://")
            .to_string(),
        token: "bin-token".into(),
    };
    assert_eq!(http.get("/api/v1/namespaces/extra").await.status, 200);
    let apis = http.get("/apis/agents.x-k8s.io").await.json();
    assert_eq!(apis["preferredVersion"]["version"], "v1alpha1");
    assert_eq!(
        http.get("/_emulator/counts").await.json()["namespaces"][""]["namespaces"],
        3
    );
    let work_dir = std::path::Path::new(ready["kubeconfig"].as_str().unwrap())
        .parent()
        .unwrap()
        .to_path_buf();

    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "exits after stdin closes");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(status.success());
    assert!(!work_dir.exists(), "work dir removed");
}
