//! The object store: every object with its `resourceVersion`, `uid`, `creationTimestamp` and
//! `generation`, one global resourceVersion counter (like etcd's revision), a bounded event
//! history for watches that resume from a resourceVersion, and event fan-out to watches and
//! to the controllers.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::util::now;
use js_compat::uuid::random_uuid;

/// Where an object lives: its type (group + plural, version-independent) and its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjKey {
    pub group: String,
    pub plural: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
}

impl ObjKey {
    pub fn new(group: &str, plural: &str, namespace: &str, name: &str) -> Self {
        ObjKey {
            group: group.into(),
            plural: plural.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    pub fn pod(namespace: &str, name: &str) -> Self {
        Self::new("", "pods", namespace, name)
    }

    pub fn same_type(&self, group: &str, plural: &str) -> bool {
        self.group == group && self.plural == plural
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub key: ObjKey,
    /// The object after the change (for deletions: as it was, with the deletion's rv).
    pub object: Value,
    /// The object before the change (modifications only).
    pub old: Option<Value>,
}

struct Inner {
    rv: u64,
    objects: BTreeMap<ObjKey, Value>,
    history: VecDeque<Arc<Event>>,
    /// Watches from a resourceVersion below this cannot be served (410 Expired).
    oldest_rv: u64,
}

/// Remembered events after a resourceVersion, and the live events from then on.
pub type Resumed = (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>);

pub struct Store {
    inner: Mutex<Inner>,
    history_limit: usize,
    tx: broadcast::Sender<Arc<Event>>,
    controllers: mpsc::UnboundedSender<Arc<Event>>,
}

/// Read-only metadata helpers.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

pub fn rv_of(obj: &Value) -> Option<u64> {
    meta_str(obj, "resourceVersion")?.parse().ok()
}

/// Whether two objects differ outside `metadata` and `status` (a generation bump).
fn spec_changed(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
            m.remove("kind");
            m.remove("apiVersion");
        }
        v
    };
    strip(a) != strip(b)
}

impl Inner {
    /// Objects of one type, in one namespace or all; sorted by namespace and name.
    fn items(&self, group: &str, plural: &str, namespace: Option<&str>) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|(k, _)| {
                k.same_type(group, plural) && namespace.is_none_or(|ns| k.namespace == ns)
            })
            .map(|(_, v)| v.clone())
            .collect()
    }
}

impl Store {
    pub fn new(history_limit: usize) -> (Self, mpsc::UnboundedReceiver<Arc<Event>>) {
        let (controllers, rx) = mpsc::unbounded_channel();
        let (tx, _) = broadcast::channel(4096);
        (
            Store {
                inner: Mutex::new(Inner {
                    rv: 1000,
                    objects: BTreeMap::new(),
                    history: VecDeque::new(),
                    oldest_rv: 1000,
                }),
                history_limit: history_limit.max(16),
                tx,
                controllers,
            },
            rx,
        )
    }

    fn emit(&self, inner: &mut Inner, ev: Event) {
        let ev = Arc::new(ev);
        inner.history.push_back(ev.clone());
        while inner.history.len() > self.history_limit {
            if let Some(old) = inner.history.pop_front() {
                inner.oldest_rv = old.rv;
            }
        }
        let _ = self.tx.send(ev.clone());
        let _ = self.controllers.send(ev);
    }

    pub fn current_rv(&self) -> u64 {
        self.inner.lock().unwrap().rv
    }

    pub fn get(&self, key: &ObjKey) -> Option<Value> {
        self.inner.lock().unwrap().objects.get(key).cloned()
    }

    /// Objects of one type, in one namespace or all; sorted by namespace and name.
    pub fn list(&self, group: &str, plural: &str, namespace: Option<&str>) -> (Vec<Value>, u64) {
        let inner = self.inner.lock().unwrap();
        let items = inner.items(group, plural, namespace);
        (items, inner.rv)
    }

    /// Every object in a namespace (any type).
    pub fn in_namespace(&self, namespace: &str) -> Vec<(ObjKey, Value)> {
        let inner = self.inner.lock().unwrap();
        inner
            .objects
            .iter()
            .filter(|(k, _)| k.namespace == namespace)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Whether an object with `uid` exists in `namespace` or among the cluster-scoped objects
    /// (where an owner of an object in `namespace` can be).
    pub fn owner_exists(&self, namespace: &str, uid: &str) -> bool {
        let inner = self.inner.lock().unwrap();
        inner.objects.iter().any(|(k, v)| {
            (k.namespace == namespace || k.namespace.is_empty()) && meta_str(v, "uid") == Some(uid)
        })
    }

    /// Objects in `namespace` that list `owner_uid` among their ownerReferences.
    pub fn dependents(&self, namespace: &str, owner_uid: &str) -> Vec<(ObjKey, Value)> {
        self.in_namespace(namespace)
            .into_iter()
            .filter(|(_, v)| {
                v.pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|refs| refs.iter().any(|r| r["uid"] == owner_uid))
            })
            .collect()
    }

    /// Stores a new object, filling in uid, creationTimestamp, generation and resourceVersion.
    /// `Err(())` if the name is taken.
    pub fn create(&self, key: ObjKey, mut obj: Value) -> Result<Value, ()> {
        let mut inner = self.inner.lock().unwrap();
        if inner.objects.contains_key(&key) {
            return Err(());
        }
        inner.rv += 1;
        let rv = inner.rv;
        let meta = &mut obj["metadata"];
        if meta.get("uid").and_then(Value::as_str).is_none() {
            meta["uid"] = json!(random_uuid());
        }
        if meta
            .get("creationTimestamp")
            .and_then(Value::as_str)
            .is_none()
        {
            meta["creationTimestamp"] = json!(now());
        }
        if meta.get("generation").is_none() {
            meta["generation"] = json!(1);
        }
        meta["resourceVersion"] = json!(rv.to_string());
        inner.objects.insert(key.clone(), obj.clone());
        self.emit(
            &mut inner,
            Event {
                rv,
                kind: EventType::Added,
                key,
                object: obj.clone(),
                old: None,
            },
        );
        Ok(obj)
    }

    /// Applies `f` to a copy of the object and stores the result. A change that leaves the
    /// object as it was is not written (no new resourceVersion, no event), as in a real API
    /// server. `None` if there is no such object.
    pub fn update<E>(
        &self,
        key: &ObjKey,
        f: impl FnOnce(&mut Value) -> Result<(), E>,
    ) -> Option<Result<Value, E>> {
        let mut inner = self.inner.lock().unwrap();
        let old = inner.objects.get(key)?.clone();
        let mut new = old.clone();
        if let Err(e) = f(&mut new) {
            return Some(Err(e));
        }
        // Identity fields are the server's.
        for field in ["uid", "creationTimestamp", "name", "namespace"] {
            match old["metadata"].get(field) {
                Some(v) => new["metadata"][field] = v.clone(),
                None => {
                    if let Some(m) = new["metadata"].as_object_mut() {
                        m.remove(field);
                    }
                }
            }
        }
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
        new["metadata"]["generation"] = json!(if spec_changed(&old, &new) {
            generation + 1
        } else {
            generation
        });
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
        if new == old {
            return Some(Ok(old));
        }
        inner.rv += 1;
        let rv = inner.rv;
        new["metadata"]["resourceVersion"] = json!(rv.to_string());
        inner.objects.insert(key.clone(), new.clone());
        self.emit(
            &mut inner,
            Event {
                rv,
                kind: EventType::Modified,
                key: key.clone(),
                object: new.clone(),
                old: Some(old),
            },
        );
        Some(Ok(new))
    }

    /// Removes an object for good; returns it as it was (with the deletion's resourceVersion).
    pub fn remove(&self, key: &ObjKey) -> Option<Value> {
        let mut inner = self.inner.lock().unwrap();
        let mut obj = inner.objects.remove(key)?;
        inner.rv += 1;
        let rv = inner.rv;
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.emit(
            &mut inner,
            Event {
                rv,
                kind: EventType::Deleted,
                key: key.clone(),
                object: obj.clone(),
                old: None,
            },
        );
        Some(obj)
    }

    /// A watch from `since`: the remembered events after it, plus live events from then on.
    /// `Err(oldest)` when `since` is older than the history reaches.
    pub fn watch_from(&self, since: u64) -> Result<Resumed, u64> {
        let inner = self.inner.lock().unwrap();
        if since < inner.oldest_rv {
            return Err(inner.oldest_rv);
        }
        let backlog = inner
            .history
            .iter()
            .filter(|e| e.rv > since)
            .cloned()
            .collect();
        Ok((backlog, self.tx.subscribe()))
    }

    /// A watch that starts with the current state (synthetic ADDED events), then live events.
    pub fn watch_now(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
    ) -> (Vec<Value>, u64, broadcast::Receiver<Arc<Event>>) {
        let inner = self.inner.lock().unwrap();
        let items = inner.items(group, plural, namespace);
        (items, inner.rv, self.tx.subscribe())
    }

    /// Counts objects per `(namespace, plural)`.
    pub fn counts(&self) -> BTreeMap<(String, String), usize> {
        let inner = self.inner.lock().unwrap();
        let mut out = BTreeMap::new();
        for k in inner.objects.keys() {
            *out.entry((k.namespace.clone(), k.plural.clone()))
                .or_insert(0) += 1;
        }
        out
    }

    pub fn keys(&self) -> Vec<ObjKey> {
        self.inner.lock().unwrap().objects.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_generations_and_history() {
        let (store, mut rx) = Store::new(16);
        let key = ObjKey::pod("ns", "p");
        let created = store
            .create(
                key.clone(),
                json!({ "metadata": { "name": "p", "namespace": "ns" }, "spec": { "a": 1 } }),
            )
            .unwrap();
        assert!(
            store
                .create(key.clone(), json!({ "metadata": {} }))
                .is_err()
        );
        let rv1 = rv_of(&created).unwrap();
        // A no-op update writes nothing.
        let same = store.update::<()>(&key, |_| Ok(())).unwrap().unwrap();
        assert_eq!(rv_of(&same), Some(rv1));
        let status = store
            .update::<()>(&key, |o| {
                o["status"] = json!({ "phase": "Running" });
                Ok(())
            })
            .unwrap()
            .unwrap();
        assert_eq!(status["metadata"]["generation"], 1);
        let spec = store
            .update::<()>(&key, |o| {
                o["spec"]["a"] = json!(2);
                Ok(())
            })
            .unwrap()
            .unwrap();
        assert_eq!(spec["metadata"]["generation"], 2);
        let (backlog, _) = store.watch_from(rv1).unwrap();
        assert_eq!(backlog.len(), 2);
        store.remove(&key).unwrap();
        assert!(store.get(&key).is_none());
        let kinds: Vec<EventType> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|e| e.kind)
            .collect();
        assert_eq!(
            kinds,
            [
                EventType::Added,
                EventType::Modified,
                EventType::Modified,
                EventType::Deleted
            ]
        );
        for i in 0..40 {
            let k = ObjKey::pod("ns", &format!("q{i}"));
            store.create(k, json!({ "metadata": {} })).unwrap();
        }
        assert!(store.watch_from(rv1).is_err());
    }
}
