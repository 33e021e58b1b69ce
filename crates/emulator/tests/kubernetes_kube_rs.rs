//! The realism check of the Kubernetes emulator: kube-rs 5 itself, unmodified, drives it
//! through the generated kubeconfig over HTTPS and plain HTTP — typed and dynamic APIs,
//! discovery, Status errors, watches (kube-client's own `Api::watch`: a streaming list with
//! its initial-events bookmark, and list-then-watch waits for a condition), pod logs and
//! `AttachParams` exec with stdin and the exit code from the status channel.

use std::fmt::Debug;
use std::pin::pin;
use std::time::Duration;

use emulator::kubernetes::{KubeEmulatorOptions, KubernetesEmulator, SandboxPlan};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{
    ApiResource, AttachParams, DeleteParams, DynamicObject, GroupVersionKind, ListParams,
    LogParams, Patch, PatchParams, PostParams, PropagationPolicy, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config, Discovery};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(20);

fn install_crypto() {
    let _ = tokio_rustls::rustls::crypto::aws_lc_rs::default_provider().install_default();
}

async fn client(kubeconfig_yaml: &str) -> Client {
    install_crypto();
    let kc = Kubeconfig::from_yaml(kubeconfig_yaml).expect("kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    Client::try_from(config).expect("client")
}

async fn start(opts: KubeEmulatorOptions) -> KubernetesEmulator {
    KubernetesEmulator::start(opts)
        .await
        .expect("emulator starts")
}

async fn ensure_ns(client: &Client, ns: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let body: Namespace = serde_json::from_value(json!({ "metadata": { "name": ns } })).unwrap();
    api.create(&PostParams::default(), &body)
        .await
        .expect("namespace");
}

fn api_error(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Waits until `done` holds for the object called `name` (`None` once it is gone), the way a
/// client without kube-runtime does it: a list (by field selector) for the current state and
/// its resourceVersion, then a watch from that version; a watch that ends, or expires (410),
/// is followed by a fresh list. Returns the object the condition held for.
async fn await_condition<K>(
    api: Api<K>,
    name: &str,
    done: impl Fn(Option<&K>) -> bool,
) -> kube::Result<Option<K>>
where
    K: Clone + DeserializeOwned + Debug,
{
    let fields = format!("metadata.name={name}");
    loop {
        let list = api.list(&ListParams::default().fields(&fields)).await?;
        let mut current = list.items.into_iter().next();
        if done(current.as_ref()) {
            return Ok(current);
        }
        let version = list.metadata.resource_version.unwrap_or_default();
        let mut events = pin!(
            api.watch(&WatchParams::default().fields(&fields), &version)
                .await?
        );
        while let Some(event) = events.try_next().await? {
            match event {
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) => current = Some(obj),
                WatchEvent::Deleted(_) => current = None,
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(status) if status.code == 410 => break,
                WatchEvent::Error(status) => return Err(kube::Error::Api(status)),
            }
            if done(current.as_ref()) {
                return Ok(current);
            }
        }
    }
}

/// The conditions the tests wait for (what kube-runtime's `conditions` module offers).
mod conditions {
    use k8s_openapi::api::core::v1::Pod;
    use kube::Resource;

    /// Gone, or replaced by another object of the same name.
    pub fn is_deleted<K: Resource>(uid: &str) -> impl Fn(Option<&K>) -> bool + '_ {
        move |obj: Option<&K>| obj.is_none_or(|o| o.meta().uid.as_deref() != Some(uid))
    }

    pub fn is_pod_running() -> impl Fn(Option<&Pod>) -> bool {
        |obj: Option<&Pod>| {
            obj.and_then(|p| p.status.as_ref())
                .and_then(|s| s.phase.as_deref())
                == Some("Running")
        }
    }
}

fn pod_manifest(name: &str, command: &[&str]) -> Pod {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "app": "demo", "run": name } },
        "spec": { "containers": [{ "name": "agent", "image": "busybox:1", "command": command }] },
    }))
    .unwrap()
}

/// Reads stdout and stderr concurrently (kube's 1 KiB buffers) and the status.
async fn run_exec(
    mut p: kube::api::AttachedProcess,
    stdin: Option<&[u8]>,
    close_stdin: bool,
) -> (String, String, Status) {
    let status = p.take_status().expect("status channel");
    if let Some(data) = stdin {
        let mut w = p.stdin().expect("stdin");
        w.write_all(data).await.unwrap();
        if close_stdin {
            w.shutdown().await.unwrap();
        } else {
            // Keep the writer open: the command must finish without stdin EOF.
            std::mem::forget(w);
        }
    }
    let read = |r: Option<tokio::io::ReadHalf<tokio::io::SimplexStream>>| async move {
        let mut s = String::new();
        if let Some(mut r) = r {
            r.read_to_string(&mut s).await.unwrap();
        }
        s
    };
    let (out, err) = tokio::join!(read(p.stdout()), read(p.stderr()));
    let status = tokio::time::timeout(WAIT, status)
        .await
        .expect("status in time")
        .expect("a status");
    p.join().await.expect("exec joins");
    (out, err, status)
}

fn exit_code(s: &Status) -> i32 {
    if s.status.as_deref() == Some("Success") {
        return 0;
    }
    s.details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|c| c.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
        .and_then(|c| c.message.as_deref())
        .and_then(|m| m.parse().ok())
        .unwrap_or(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_crud_status_errors_and_discovery_over_https_and_http() {
    let emu = start(KubeEmulatorOptions::for_tests()).await;
    assert!(emu.url().starts_with("https://"));
    for (scheme, yaml) in [
        ("https", emu.kubeconfig_yaml()),
        ("http", emu.kubeconfig_http_yaml()),
    ] {
        let client = client(yaml).await;
        let version = client.apiserver_version().await.expect("version");
        assert_eq!(version.major, "1");
        let ns = format!("crud-{scheme}");
        ensure_ns(&client, &ns).await;

        // Discovery finds every group the provider uses, the Sandbox group included.
        let discovery = Discovery::new(client.clone())
            .run()
            .await
            .expect("discovery");
        for group in [
            "",
            "batch",
            "networking.k8s.io",
            "rbac.authorization.k8s.io",
            "cilium.io",
            "agents.x-k8s.io",
        ] {
            assert!(
                discovery.has_group(group),
                "{scheme}: group {group:?} discovered"
            );
        }
        let (ar, caps) = discovery
            .resolve_gvk(&GroupVersionKind::gvk(
                "agents.x-k8s.io",
                "v1alpha1",
                "Sandbox",
            ))
            .expect("Sandbox resolves");
        assert_eq!(ar.plural, "sandboxes");
        assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
        let aggregated = Discovery::new(client.clone())
            .run_aggregated()
            .await
            .expect("aggregated discovery");
        assert!(aggregated.has_group("cilium.io"));

        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let created = pods
            .create(
                &PostParams::default(),
                &pod_manifest("p1", &["sleep", "60"]),
            )
            .await
            .expect("create");
        let uid = created.metadata.uid.clone().expect("uid");
        assert!(created.metadata.creation_timestamp.is_some());
        assert!(created.metadata.resource_version.is_some());
        pods.create(
            &PostParams::default(),
            &pod_manifest("p2", &["sleep", "60"]),
        )
        .await
        .unwrap();

        // 409 AlreadyExists, 404 NotFound, 422 Invalid.
        let e = api_error(
            pods.create(&PostParams::default(), &pod_manifest("p1", &["true"]))
                .await
                .unwrap_err(),
        );
        assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));
        assert!(e.is_already_exists());
        let e = api_error(pods.get("nope").await.unwrap_err());
        assert!(e.is_not_found());
        assert!(pods.get_opt("nope").await.unwrap().is_none());
        let bad: Pod = serde_json::from_value(
            json!({ "metadata": { "name": "Bad_Name" }, "spec": { "containers": [] } }),
        )
        .unwrap();
        let e = api_error(pods.create(&PostParams::default(), &bad).await.unwrap_err());
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
        assert_eq!(e.details.as_ref().unwrap().causes.len(), 2);

        // Label and field selectors.
        let p1 = pods
            .list(&ListParams::default().labels("run=p1"))
            .await
            .unwrap();
        assert_eq!(p1.items.len(), 1);
        let by_field = pods
            .list(&ListParams::default().fields("metadata.name=p2"))
            .await
            .unwrap();
        assert_eq!(by_field.items[0].metadata.name.as_deref(), Some("p2"));
        let all = pods
            .list(&ListParams::default().labels("app in (demo)").limit(1))
            .await
            .unwrap();
        assert_eq!(all.items.len(), 1);
        let rest = pods
            .list(
                &ListParams::default()
                    .labels("app in (demo)")
                    .continue_token(all.metadata.continue_.as_deref().unwrap()),
            )
            .await
            .unwrap();
        assert_eq!(rest.items.len(), 1);

        // Merge and strategic patches, then a replace with a stale resourceVersion: 409 Conflict.
        let patched = pods
            .patch(
                "p1",
                &PatchParams::default(),
                &Patch::Merge(json!({ "metadata": { "labels": { "x": "1" } } })),
            )
            .await
            .unwrap();
        assert_eq!(patched.metadata.labels.as_ref().unwrap()["x"], "1");
        let patched = pods
            .patch(
                "p1",
                &PatchParams::default(),
                &Patch::Strategic(json!({ "metadata": { "annotations": { "a": "b" } } })),
            )
            .await
            .unwrap();
        assert_eq!(patched.metadata.annotations.as_ref().unwrap()["a"], "b");
        let mut stale = created.clone();
        stale
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("y".into(), "2".into());
        let e = api_error(
            pods.replace("p1", &PostParams::default(), &stale)
                .await
                .unwrap_err(),
        );
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));

        // Delete, then wait for it to be gone through a watch.
        pods.delete("p1", &DeleteParams::default()).await.unwrap();
        tokio::time::timeout(
            WAIT,
            await_condition(pods.clone(), "p1", conditions::is_deleted(&uid)),
        )
        .await
        .expect("deleted in time")
        .unwrap();
        let e = api_error(
            pods.delete("p1", &DeleteParams::default())
                .await
                .unwrap_err(),
        );
        assert!(e.is_not_found());
    }
    let counts = emu.counts();
    assert_eq!(counts.count("crud-https", "pods"), 1);
    emu.shutdown().await;
}

/// Ready when the Sandbox has a `Ready=True` condition.
fn sandbox_ready() -> impl Fn(Option<&DynamicObject>) -> bool {
    |obj: Option<&DynamicObject>| {
        obj.and_then(|o| o.data["status"]["conditions"].as_array().cloned())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
    }
}

fn sandbox_manifest(name: &str, version: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("agents.x-k8s.io/{version}"),
        "kind": "Sandbox",
        "metadata": { "name": name, "labels": { "paperclip.io/run-id": name } },
        "spec": { "podTemplate": {
            "metadata": { "labels": { "paperclip.io/run-id": name } },
            "spec": {
                "restartPolicy": "Always",
                "containers": [{
                    "name": "agent",
                    "image": "paperclip/agent:1",
                    "command": ["/usr/bin/tini", "--", "/bin/sh", "-c", "sleep infinity"],
                    "env": [{ "name": "HOME", "value": "/home/paperclip" }],
                    "envFrom": [{ "secretRef": { "name": format!("{name}-env") } }],
                    "volumeMounts": [
                        { "name": "workspace", "mountPath": "/workspace" },
                        { "name": "home", "mountPath": "/home/paperclip" },
                        { "name": "tmp", "mountPath": "/tmp" },
                    ],
                }],
            },
        } },
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_becomes_ready_and_exec_runs_for_real() {
    let emu = start(KubeEmulatorOptions {
        sandbox_versions: vec!["v1beta1".into(), "v1alpha1".into()],
        ..KubeEmulatorOptions::for_tests()
    })
    .await;
    let client = client(emu.kubeconfig_yaml()).await;
    let ns = "tenant";
    ensure_ns(&client, ns).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("agents.x-k8s.io", "v1beta1", "Sandbox"),
        "sandboxes",
    );
    let sandboxes: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let created = sandboxes
        .create(&PostParams::default(), &sandbox_manifest("pc-1", "v1beta1"))
        .await
        .expect("sandbox created");
    assert!(created.metadata.uid.is_some());

    // The pod waits for its Secret (CreateContainerConfigError), like a real kubelet.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": "pc-1-env" }, "stringData": { "GREETING": "hello from the secret" },
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();

    let ready = tokio::time::timeout(
        WAIT,
        await_condition(sandboxes.clone(), "pc-1", sandbox_ready()),
    )
    .await
    .expect("Sandbox Ready in time")
    .unwrap()
    .unwrap();
    assert_eq!(ready.data["status"]["phase"], "Ready");

    // The pod is named after the Sandbox and labelled with its name.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod = tokio::time::timeout(
        WAIT,
        await_condition(pods.clone(), "pc-1", conditions::is_pod_running()),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    assert_eq!(
        pod.metadata.labels.as_ref().unwrap()["agents.x-k8s.io/sandbox-name"],
        "pc-1"
    );
    let listed = pods
        .list(&ListParams::default().labels("agents.x-k8s.io/sandbox-name=pc-1"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);

    // Exec with stdin closed by the v5 CLOSE frame, stdout, stderr and a non-zero exit code.
    let ap = AttachParams::default()
        .container("agent")
        .stdin(true)
        .stdout(true)
        .stderr(true);
    let script = "cat > /workspace/in.txt; echo \"$GREETING\"; wc -c < /workspace/in.txt; echo oops >&2; echo $HOME; exit 3";
    let p = pods
        .exec("pc-1", ["/bin/sh", "-c", script], &ap)
        .await
        .expect("exec starts");
    let (out, err, status) = run_exec(p, Some(b"twelve bytes"), true).await;
    assert_eq!(out, "hello from the secret\n12\n/home/paperclip\n");
    assert_eq!(err, "oops\n");
    assert_eq!(exit_code(&status), 3);
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));

    // The provider's pattern: stdin bounded by `head -c`, the writer never closed.
    let payload = b"0123456789".repeat(1000);
    let cmd = format!(
        "head -c {} | sha256sum | cut -c1-16; ls /workspace",
        payload.len()
    );
    let p = pods
        .exec(
            "pc-1",
            ["/bin/sh", "-c", cmd.as_str()],
            &AttachParams::default()
                .container("agent")
                .stdin(true)
                .stderr(true),
        )
        .await
        .unwrap();
    let (out, _, status) = run_exec(p, Some(&payload), false).await;
    assert_eq!(exit_code(&status), 0);
    let want = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(&payload);
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()[..16].to_string()
    };
    assert_eq!(out, format!("{want}\nin.txt\n"));

    // Files persist in the pod's root between execs, and the root is private to the pod.
    let root = emu.pod_root(ns, "pc-1").expect("pod root");
    assert_eq!(
        std::fs::read(root.join("workspace/in.txt")).unwrap(),
        b"twelve bytes"
    );

    // An unknown command fails like the container runtime says, without an exit code.
    let p = pods
        .exec(
            "pc-1",
            ["no-such-binary"],
            &AttachParams::default().container("agent"),
        )
        .await
        .unwrap();
    let (_, _, status) = run_exec(p, None, false).await;
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(exit_code(&status), 1);

    // Failed on request, then Foreground delete cascades to the pod.
    assert!(emu.set_sandbox_plan(
        ns,
        "pc-1",
        SandboxPlan::Failed {
            reason: "Boom".into(),
            message: "it broke".into()
        }
    ));
    let failed = sandboxes.get("pc-1").await.unwrap();
    assert_eq!(failed.data["status"]["phase"], "Failed");
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    sandboxes.delete("pc-1", &dp).await.unwrap();
    let uid = pod.metadata.uid.clone().unwrap();
    tokio::time::timeout(
        WAIT,
        await_condition(pods.clone(), "pc-1", conditions::is_deleted(&uid)),
    )
    .await
    .unwrap()
    .unwrap();
    let sb_uid = created.metadata.uid.clone().unwrap();
    tokio::time::timeout(
        WAIT,
        await_condition(sandboxes.clone(), "pc-1", conditions::is_deleted(&sb_uid)),
    )
    .await
    .unwrap()
    .unwrap();
    // Still listed as a v1alpha1 resource too.
    let alpha = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "agents.x-k8s.io",
        "v1alpha1",
        "Sandbox",
    ));
    let alpha_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &alpha);
    assert!(
        alpha_api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let counts = emu.counts();
    assert_eq!(
        (counts.count(ns, "pods"), counts.count(ns, "sandboxes")),
        (0, 0)
    );
    emu.shutdown().await;
}

fn job_manifest(name: &str, script: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "backoffLimit": 0,
            "template": { "spec": {
                "restartPolicy": "Never",
                "containers": [{ "name": "agent", "image": "paperclip/agent:1",
                    "command": ["/usr/bin/tini", "--", "/usr/local/bin/paperclip-agent-shim"],
                    "args": [script] }],
            } },
        },
    }))
    .unwrap()
}

fn job_finished() -> impl Fn(Option<&Job>) -> bool {
    |obj: Option<&Job>| {
        obj.and_then(|j| j.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
            })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_run_their_command_and_report_exit_codes_over_plain_http() {
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.tls = false;
    // The image's entrypoint, mapped to something this machine has.
    opts.command_overrides.insert(
        "/usr/local/bin/paperclip-agent-shim".into(),
        vec!["/bin/sh".into(), "-c".into()],
    );
    let emu = start(opts).await;
    assert!(emu.url().starts_with("http://"));
    let client = client(emu.kubeconfig_yaml()).await;
    let ns = "jobs";
    ensure_ns(&client, ns).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);

    jobs.create(
        &PostParams::default(),
        &job_manifest("ok", "echo out; echo err >&2"),
    )
    .await
    .unwrap();
    jobs.create(
        &PostParams::default(),
        &job_manifest("bad", "echo failing; exit 4"),
    )
    .await
    .unwrap();
    for name in ["ok", "bad"] {
        tokio::time::timeout(WAIT, await_condition(jobs.clone(), name, job_finished()))
            .await
            .expect("job finished in time")
            .unwrap();
    }
    let ok = jobs.get_status("ok").await.unwrap();
    assert_eq!(ok.status.as_ref().unwrap().succeeded, Some(1));
    let bad = jobs.get_status("bad").await.unwrap();
    let st = bad.status.unwrap();
    assert_eq!(st.failed, Some(1));
    let failed = st
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Failed")
        .unwrap();
    assert_eq!(failed.reason.as_deref(), Some("BackoffLimitExceeded"));

    let bad_pods = pods
        .list(&ListParams::default().labels("job-name=bad"))
        .await
        .unwrap();
    assert_eq!(bad_pods.items.len(), 1);
    let pod = &bad_pods.items[0];
    let terminated = pod
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0]
        .state
        .as_ref()
        .unwrap()
        .terminated
        .clone()
        .unwrap();
    assert_eq!(terminated.exit_code, 4);
    assert_eq!(
        pod.status.as_ref().unwrap().phase.as_deref(),
        Some("Failed")
    );
    let log = pods
        .logs(pod.metadata.name.as_deref().unwrap(), &LogParams::default())
        .await
        .unwrap();
    assert_eq!(log, "failing\n");
    let ok_pod = pods
        .list(&ListParams::default().labels("job-name=ok"))
        .await
        .unwrap()
        .items
        .remove(0);
    let log = pods
        .logs(
            ok_pod.metadata.name.as_deref().unwrap(),
            &LogParams::default(),
        )
        .await
        .unwrap();
    assert!(log.contains("out\n") && log.contains("err\n"));

    // Foreground deletion takes the pods with it.
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    jobs.delete("bad", &dp).await.unwrap();
    let uid = pod.metadata.uid.clone().unwrap();
    tokio::time::timeout(
        WAIT,
        await_condition(
            pods.clone(),
            pod.metadata.name.as_deref().unwrap(),
            conditions::is_deleted(&uid),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_streams_changes_and_v4_exec_works() {
    let mut opts = KubeEmulatorOptions::for_tests();
    opts.exec_protocols = vec!["v4.channel.k8s.io".into()];
    let emu = start(opts).await;
    let client = client(emu.kubeconfig_yaml()).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    // A streaming list (`sendInitialEvents`): no pod matches yet, so the first event is the
    // bookmark that ends the (empty) initial list.
    let mut stream = pin!(
        pods.watch(&WatchParams::streaming_lists().labels("app=demo"), "")
            .await
            .expect("watch starts")
    );
    match tokio::time::timeout(WAIT, stream.try_next()).await {
        Ok(Ok(Some(WatchEvent::Bookmark(b)))) => assert_eq!(
            b.metadata
                .annotations
                .get("k8s.io/initial-events-end")
                .map(String::as_str),
            Some("true")
        ),
        other => panic!("expected the initial-events bookmark, got {other:?}"),
    }
    // Only applied objects from here (periodic bookmarks are skipped).
    let applied = stream.filter_map(|event| async move {
        match event.expect("watch event") {
            WatchEvent::Added(pod) | WatchEvent::Modified(pod) => Some(pod),
            WatchEvent::Bookmark(_) => None,
            other => panic!("unexpected watch event {other:?}"),
        }
    });
    let mut applied = pin!(applied);
    pods.create(
        &PostParams::default(),
        &pod_manifest("w1", &["sleep", "60"]),
    )
    .await
    .unwrap();
    let first = tokio::time::timeout(WAIT, applied.next())
        .await
        .unwrap()
        .expect("an event for the new pod");
    assert_eq!(first.metadata.name.as_deref(), Some("w1"));
    // Status changes arrive as further events until the pod runs. The pod may already be
    // running in its first event (a slow or busy machine), so the first event counts too.
    let running = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    let mut latest = first;
    while !running(&latest) {
        latest = tokio::time::timeout(WAIT, applied.next())
            .await
            .unwrap()
            .expect("a further event");
    }
    let p = pods
        .exec(
            "w1",
            ["sh", "-c", "printf v4; printf e >&2; exit 7"],
            &AttachParams::default().stderr(true),
        )
        .await
        .expect("v4 exec");
    let (out, err, status) = run_exec(p, None, false).await;
    assert_eq!(
        (out.as_str(), err.as_str(), exit_code(&status)),
        ("v4", "e", 7)
    );
    let log = emu.request_log();
    assert!(
        log.iter()
            .any(|r| r.verb.as_deref() == Some("exec") && r.status == Some(101))
    );
    assert!(log.iter().any(|r| r.verb.as_deref() == Some("watch")));
    emu.shutdown().await;
}

/// The provider's `ensureTenant` + acquire calls, each through the typed or dynamic API it uses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_provisioning_calls_round_trip() {
    use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota, ServiceAccount};
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};

    let emu = start(KubeEmulatorOptions::for_tests()).await;
    let client = client(emu.kubeconfig_yaml()).await;
    let ns = "paperclip-acme";
    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert!(namespaces.get_opt(ns).await.unwrap().is_none());
    ensure_ns(&client, ns).await;
    assert!(namespaces.get_opt(ns).await.unwrap().is_some());

    macro_rules! get_or_create {
        ($ty:ty, $body:expr) => {{
            let api: Api<$ty> = Api::namespaced(client.clone(), ns);
            let body: $ty = serde_json::from_value($body).unwrap();
            let name = body.metadata.name.clone().unwrap();
            assert!(api.get_opt(&name).await.unwrap().is_none());
            api.create(&PostParams::default(), &body).await.unwrap();
            let again = api.create(&PostParams::default(), &body).await.unwrap_err();
            assert!(api_error(again).is_already_exists());
            api.get(&name).await.unwrap()
        }};
    }
    get_or_create!(
        ServiceAccount,
        json!({ "metadata": { "name": "paperclip-tenant-sa" } })
    );
    get_or_create!(
        Role,
        json!({ "metadata": { "name": "paperclip-tenant-role" },
        "rules": [{ "apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"] }] })
    );
    get_or_create!(
        RoleBinding,
        json!({ "metadata": { "name": "paperclip-tenant-rb" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "paperclip-tenant-role" },
        "subjects": [{ "kind": "ServiceAccount", "name": "paperclip-tenant-sa", "namespace": ns }] })
    );
    get_or_create!(
        ResourceQuota,
        json!({ "metadata": { "name": "paperclip-quota" }, "spec": { "hard": { "pods": "10" } } })
    );
    get_or_create!(
        LimitRange,
        json!({ "metadata": { "name": "paperclip-limits" },
        "spec": { "limits": [{ "type": "Container", "default": { "cpu": "1" } }] } })
    );
    let np = get_or_create!(
        NetworkPolicy,
        json!({ "metadata": { "name": "paperclip-deny-all" },
        "spec": { "podSelector": {}, "policyTypes": ["Ingress", "Egress"] } })
    );
    assert_eq!(
        np.spec.unwrap().policy_types.unwrap(),
        ["Ingress", "Egress"]
    );

    let cilium = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cilium.io", "v2", "CiliumNetworkPolicy"),
        "ciliumnetworkpolicies",
    );
    let cnp: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &cilium);
    let body: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
        "metadata": { "name": "paperclip-egress-fqdn" },
        "spec": { "endpointSelector": {}, "egress": [{ "toFQDNs": [{ "matchName": "api.example.com" }] }] },
    }))
    .unwrap();
    cnp.create(&PostParams::default(), &body).await.unwrap();
    assert_eq!(
        cnp.get("paperclip-egress-fqdn").await.unwrap().data["spec"]["egress"][0]["toFQDNs"][0]["matchName"],
        "api.example.com"
    );

    // A per-run Secret owned by the Sandbox is collected with it.
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("agents.x-k8s.io", "v1alpha1", "Sandbox"),
        "sandboxes",
    );
    let sandboxes: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let sb = sandboxes
        .create(
            &PostParams::default(),
            &sandbox_manifest("pc-run", "v1alpha1"),
        )
        .await
        .unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": "pc-run-env", "ownerReferences": [{ "apiVersion": "agents.x-k8s.io/v1alpha1",
            "kind": "Sandbox", "name": "pc-run", "uid": sb.metadata.uid.clone().unwrap(), "blockOwnerDeletion": true }] },
        "data": { "K": "dg==" },
    }))
    .unwrap();
    let secret = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    tokio::time::timeout(
        WAIT,
        await_condition(sandboxes.clone(), "pc-run", sandbox_ready()),
    )
    .await
    .unwrap()
    .unwrap();
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    sandboxes.delete("pc-run", &dp).await.unwrap();
    let uid = secret.metadata.uid.unwrap();
    tokio::time::timeout(
        WAIT,
        await_condition(secrets.clone(), "pc-run-env", conditions::is_deleted(&uid)),
    )
    .await
    .unwrap()
    .unwrap();
    let counts = emu.counts();
    assert_eq!(counts.count(ns, "networkpolicies"), 1);
    assert_eq!(counts.count(ns, "ciliumnetworkpolicies"), 1);
    assert_eq!(counts.count(ns, "secrets"), 0);
    emu.shutdown().await;
}
