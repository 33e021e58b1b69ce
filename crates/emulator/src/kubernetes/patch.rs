//! PATCH bodies: JSON merge patch (RFC 7386), strategic merge patch (merge patch plus lists
//! of objects merged by their merge key and the `$patch` directive), and JSON patch
//! (RFC 6902).

use serde_json::{Map, Value};

/// RFC 7386: objects merge recursively, `null` deletes, everything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// Keys that identify list items in Kubernetes' strategic-merge lists.
const MERGE_KEYS: &[&str] = &["name", "type", "uid", "mountPath", "containerPort", "ip"];

fn merge_key(items: &[Value]) -> Option<&'static str> {
    MERGE_KEYS.iter().copied().find(|k| {
        !items.is_empty()
            && items
                .iter()
                .all(|i| i.get(*k).is_some_and(|v| !v.is_null()))
    })
}

/// Strategic merge patch over untyped JSON: like [`merge_patch`], except that a list of
/// objects carrying a merge key (`name`, `type`, …) in both the patch and the target is merged
/// item by item, and `{"$patch": "replace"|"delete"}` are honoured.
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    match p.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut clean = p.clone();
            clean.remove("$patch");
            *target = Value::Object(clean);
            return;
        }
        Some("delete") => {
            *target = Value::Null;
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if k.starts_with("$setElementOrder/") || k == "$retainKeys" {
            continue;
        }
        match v {
            Value::Null => {
                t.remove(k);
            }
            Value::Array(items) => {
                let existing = t.get(k).and_then(Value::as_array).cloned();
                let key = existing
                    .as_deref()
                    .and_then(|e| merge_key(e).filter(|mk| merge_key(items) == Some(*mk)));
                match (existing, key) {
                    (Some(mut list), Some(mk)) => {
                        for item in items {
                            let id = &item[mk];
                            let delete =
                                item.get("$patch").and_then(Value::as_str) == Some("delete");
                            match list.iter().position(|e| &e[mk] == id) {
                                Some(i) if delete => {
                                    list.remove(i);
                                }
                                Some(i) => strategic_merge_patch(&mut list[i], item),
                                None if delete => {}
                                None => list.push(item.clone()),
                            }
                        }
                        t.insert(k.clone(), Value::Array(list));
                    }
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(_) => {
                let slot = t.entry(k.clone()).or_insert(Value::Null);
                strategic_merge_patch(slot, v);
                if slot.is_null() {
                    t.remove(k);
                }
            }
            other => {
                t.insert(k.clone(), other.clone());
            }
        }
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> Result<(String, String), String> {
    if path.is_empty() {
        return Err("the root cannot be the target of this operation".into());
    }
    let idx = path
        .rfind('/')
        .ok_or_else(|| format!("invalid JSON pointer {path:?}"))?;
    Ok((path[..idx].to_string(), unescape(&path[idx + 1..])))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split_pointer(path)?;
    match doc.pointer_mut(&parent) {
        Some(Value::Object(m)) => {
            m.insert(last, value);
            Ok(())
        }
        Some(Value::Array(a)) => {
            if last == "-" {
                a.push(value);
                return Ok(());
            }
            let i: usize = last
                .parse()
                .map_err(|_| format!("invalid index {last:?}"))?;
            if i > a.len() {
                return Err(format!("index {i} out of bounds"));
            }
            a.insert(i, value);
            Ok(())
        }
        _ => Err(format!("missing parent for path {path:?}")),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split_pointer(path)?;
    match doc.pointer_mut(&parent) {
        Some(Value::Object(m)) => m
            .remove(&last)
            .ok_or_else(|| format!("no value at {path:?}")),
        Some(Value::Array(a)) => {
            let i: usize = last
                .parse()
                .map_err(|_| format!("invalid index {last:?}"))?;
            if i >= a.len() {
                return Err(format!("index {i} out of bounds"));
            }
            Ok(a.remove(i))
        }
        _ => Err(format!("no value at {path:?}")),
    }
}

/// RFC 6902 over `doc`; any failing operation leaves `doc` unchanged and returns the reason.
pub fn json_patch(doc: &mut Value, ops: &Value) -> Result<(), String> {
    let Value::Array(ops) = ops else {
        return Err("a JSON patch must be an array of operations".into());
    };
    let mut work = doc.clone();
    for op in ops {
        let path = op["path"].as_str().ok_or("operation without a path")?;
        let value = || op.get("value").cloned().ok_or("operation without a value");
        match op["op"].as_str() {
            Some("add") => add(&mut work, path, value()?)?,
            Some("remove") => {
                remove(&mut work, path)?;
            }
            Some("replace") => {
                if work.pointer(path).is_none() {
                    return Err(format!(
                        "replace operation does not apply: doc is missing path: {path}"
                    ));
                }
                *work.pointer_mut(path).expect("checked") = value()?;
            }
            Some("test") => {
                if work.pointer(path) != Some(&value()?) {
                    return Err(format!("testing value {path} failed"));
                }
            }
            Some("move") | Some("copy") => {
                let from = op["from"].as_str().ok_or("operation without from")?;
                let v = if op["op"] == "move" {
                    remove(&mut work, from)?
                } else {
                    work.pointer(from)
                        .cloned()
                        .ok_or_else(|| format!("no value at {from:?}"))?
                };
                add(&mut work, path, v)?;
            }
            other => return Err(format!("unknown operation {other:?}")),
        }
    }
    *doc = work;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_and_strategic_and_json_patches() {
        let mut doc = json!({ "a": { "b": 1, "c": 2 }, "l": [1, 2] });
        merge_patch(&mut doc, &json!({ "a": { "b": null, "d": 3 }, "l": [3] }));
        assert_eq!(doc, json!({ "a": { "c": 2, "d": 3 }, "l": [3] }));

        let mut pod = json!({ "spec": { "containers": [
            { "name": "a", "image": "x" }, { "name": "b", "image": "y" } ] } });
        strategic_merge_patch(
            &mut pod,
            &json!({ "spec": { "containers": [
            { "name": "b", "image": "z" }, { "name": "c", "image": "w" } ] } }),
        );
        let names: Vec<&str> = pod["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(pod["spec"]["containers"][1]["image"], "z");

        let mut d = json!({ "metadata": { "labels": { "x": "1" } }, "list": [1] });
        json_patch(
            &mut d,
            &json!([
                { "op": "add", "path": "/metadata/labels/y", "value": "2" },
                { "op": "remove", "path": "/metadata/labels/x" },
                { "op": "add", "path": "/list/-", "value": 2 },
                { "op": "replace", "path": "/list/0", "value": 0 },
            ]),
        )
        .unwrap();
        assert_eq!(
            d,
            json!({ "metadata": { "labels": { "y": "2" } }, "list": [0, 2] })
        );
        assert!(
            json_patch(
                &mut d,
                &json!([{ "op": "test", "path": "/list/0", "value": 9 }])
            )
            .is_err()
        );
    }
}
