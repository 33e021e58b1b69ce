//! The Job controller: a Job's pod really runs its command; the Job ends Succeeded, or Failed
//! once `backoffLimit` retries are spent or `activeDeadlineSeconds` passes; then
//! `ttlSecondsAfterFinished` removes it.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::events::{Heard, next, subscribe};
use super::fields::{condition, deleting, pod_phase, uid_of};
use super::template::pod_from_template;
use crate::kubernetes::deletion::{Propagation, delete_object};
use crate::kubernetes::objects;
use crate::kubernetes::state::App;
use crate::kubernetes::store::{Event, ObjKey, meta_str};
use crate::kubernetes::util::{name_suffix, now};

enum PodEnd {
    Succeeded,
    Failed,
    Deadline,
    JobGone,
}

fn job_pod_manifest(job: &Value, key: &ObjKey) -> Value {
    let uid = uid_of(job);
    let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", uid.as_str()),
        ("batch.kubernetes.io/job-name", key.name.as_str()),
        ("controller-uid", uid.as_str()),
        ("job-name", key.name.as_str()),
    ] {
        labels[k] = json!(v);
    }
    let metadata = json!({
        "name": format!("{}-{}", key.name, name_suffix(5)),
        "generateName": format!("{}-", key.name),
        "namespace": key.namespace,
        "labels": labels,
        "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": key.name, "uid": uid,
            "controller": true, "blockOwnerDeletion": true,
        }],
    });
    pod_from_template(&template, metadata)
}

fn update_job_status(app: &App, key: &ObjKey, f: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    app.store.update::<()>(key, |o| {
        if !o["status"].is_object() {
            o["status"] = json!({});
        }
        f(o["status"].as_object_mut().expect("object"));
        Ok(())
    });
}

async fn wait_for_pod(
    app: &App,
    rx: &mut broadcast::Receiver<Arc<Event>>,
    job_key: &ObjKey,
    pod_key: &ObjKey,
    deadline: Option<Instant>,
) -> PodEnd {
    loop {
        match app.store.get(pod_key) {
            None => return PodEnd::Failed,
            Some(p) => match pod_phase(&p) {
                "Succeeded" => return PodEnd::Succeeded,
                "Failed" => return PodEnd::Failed,
                _ => {}
            },
        }
        match app.store.get(job_key) {
            Some(j) if !deleting(&j) => {}
            _ => return PodEnd::JobGone,
        }
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            heard = next(rx, app) => if let Heard::Stop = heard { return PodEnd::JobGone },
            _ = sleep => return PodEnd::Deadline,
        }
    }
}

pub async fn run_job(app: Arc<App>, key: ObjKey, uid: String) {
    let Some(job) = app
        .store
        .get(&key)
        .filter(|o| meta_str(o, "uid") == Some(uid.as_str()))
    else {
        return;
    };
    let spec = job["spec"].clone();
    let backoff_limit = spec["backoffLimit"].as_i64().unwrap_or(6);
    let deadline = spec["activeDeadlineSeconds"]
        .as_f64()
        .map(|s| Instant::now() + app.settings().api_seconds(s));
    update_job_status(&app, &key, |s| {
        s.insert("startTime".into(), json!(now()));
        s.insert("ready".into(), json!(0));
        s.insert("terminating".into(), json!(0));
        s.insert("uncountedTerminatedPods".into(), json!({}));
    });
    let mut failed = 0i64;
    let outcome: Result<(), (&str, &str)> = loop {
        let mut rx = subscribe(&app);
        let pod_key = match objects::create_internal(
            &app,
            "",
            "pods",
            &key.namespace,
            job_pod_manifest(&job, &key),
        ) {
            Ok(p) => ObjKey::pod(&key.namespace, meta_str(&p, "name").unwrap_or_default()),
            Err(_) => return,
        };
        update_job_status(&app, &key, |s| {
            s.insert("active".into(), json!(1));
        });
        match wait_for_pod(&app, &mut rx, &key, &pod_key, deadline).await {
            PodEnd::Succeeded => break Ok(()),
            PodEnd::Failed => {
                failed += 1;
                update_job_status(&app, &key, |s| {
                    s.remove("active");
                    s.insert("failed".into(), json!(failed));
                });
                if failed > backoff_limit {
                    break Err((
                        "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit",
                    ));
                }
                if !app.sleep(app.settings().job_retry_delay()).await {
                    return;
                }
            }
            PodEnd::Deadline => {
                let _ = delete_object(&app, &pod_key, Some(Propagation::Background), Some(0), None);
                break Err((
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                ));
            }
            PodEnd::JobGone => return,
        }
    };
    update_job_status(&app, &key, |s| {
        s.remove("active");
        let gen_none = Value::Null;
        let conds = match outcome {
            Ok(()) => {
                s.insert("succeeded".into(), json!(1));
                s.insert("completionTime".into(), json!(now()));
                let m = "Reached expected number of succeeded pods";
                vec![
                    condition(
                        "SuccessCriteriaMet",
                        true,
                        "CompletionsReached",
                        m,
                        &gen_none,
                    ),
                    condition("Complete", true, "CompletionsReached", m, &gen_none),
                ]
            }
            Err((reason, message)) => vec![
                condition("FailureTarget", true, reason, message, &gen_none),
                condition("Failed", true, reason, message, &gen_none),
            ],
        };
        let conds: Vec<Value> = conds
            .into_iter()
            .map(|mut c| {
                c["lastProbeTime"] = c["lastTransitionTime"].clone();
                c
            })
            .collect();
        s.insert("conditions".into(), json!(conds));
    });
    if let Some(ttl) = spec["ttlSecondsAfterFinished"].as_f64()
        && app.sleep(app.settings().api_seconds(ttl)).await
    {
        let still_ours = app
            .store
            .get(&key)
            .is_some_and(|o| meta_str(&o, "uid") == Some(uid.as_str()));
        if still_ours {
            let _ = delete_object(&app, &key, Some(Propagation::Background), None, None);
        }
    }
}
