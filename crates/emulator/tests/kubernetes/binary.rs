//! The `kubernetes-emulator` binary's contract: one JSON line on stdout, serve until stdin
//! closes, clean up.

use crate::binary_util::{exit_status, start_binary};
use crate::common::Http;

#[tokio::test]
async fn prints_one_json_line_serves_and_exits_when_stdin_closes() {
    let args = [
        "--fast",
        "--token",
        "bin-token",
        "--sandbox-versions",
        "v1alpha1,v1beta1",
        "--namespace",
        "extra",
    ];
    let (mut child, ready) = start_binary(env!("CARGO_BIN_EXE_kubernetes-emulator"), args).await;
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
    let status = exit_status(&mut child).await;
    assert!(status.success());
    assert!(!work_dir.exists(), "work dir removed");
}
