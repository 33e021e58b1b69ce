//! Label selectors (`a=b,c!=d,e in (x,y),f notin (z),g,!h`) and field selectors
//! (`metadata.name=x,status.phase!=Running`), as list and watch requests send them.

use serde_json::Value;

use super::status::KubeError;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
}

/// A parsed `labelSelector`; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    reqs: Vec<Requirement>,
}

/// Splits on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn bad(sel: &str, why: &str) -> KubeError {
    KubeError::bad_request(format!(
        "unable to parse requirement: {why} (in selector \"{sel}\")"
    ))
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

impl LabelSelector {
    pub fn parse(sel: &str) -> Result<Self, KubeError> {
        let mut reqs = Vec::new();
        if sel.trim().is_empty() {
            return Ok(LabelSelector { reqs });
        }
        for part in split_top(sel) {
            let p = part.trim();
            if p.is_empty() {
                return Err(bad(sel, "empty requirement"));
            }
            let req = if let Some(k) = p.strip_prefix('!') {
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::DoesNotExist,
                }
            } else if let Some((k, v)) = p.split_once("!=") {
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::NotIn(vec![v.trim().to_string()]),
                }
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::In(vec![v.trim().to_string()]),
                }
            } else if let Some(open) = p.find('(') {
                let Some(inner) = p[open + 1..].strip_suffix(')') else {
                    return Err(bad(sel, "missing ')'"));
                };
                let head: Vec<&str> = p[..open].split_whitespace().collect();
                let values: Vec<String> = inner
                    .split(',')
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                    .collect();
                match head.as_slice() {
                    [k, "in"] => Requirement {
                        key: k.to_string(),
                        op: Op::In(values),
                    },
                    [k, "notin"] => Requirement {
                        key: k.to_string(),
                        op: Op::NotIn(values),
                    },
                    _ => return Err(bad(sel, "expected 'in' or 'notin'")),
                }
            } else {
                Requirement {
                    key: p.to_string(),
                    op: Op::Exists,
                }
            };
            if !valid_key(&req.key) {
                return Err(bad(sel, &format!("invalid label key \"{}\"", req.key)));
            }
            if let Op::In(vs) | Op::NotIn(vs) = &req.op
                && let Some(v) = vs.iter().find(|v| !valid_value(v))
            {
                return Err(bad(sel, &format!("invalid label value: \"{v}\"")));
            }
            reqs.push(req);
        }
        Ok(LabelSelector { reqs })
    }

    /// Whether an object (its `metadata.labels`) matches.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.reqs.iter().all(|r| match &r.op {
            Op::In(vs) => get(&r.key).is_some_and(|v| vs.iter().any(|x| x == v)),
            Op::NotIn(vs) => get(&r.key).is_none_or(|v| !vs.iter().any(|x| x == v)),
            Op::Exists => get(&r.key).is_some(),
            Op::DoesNotExist => get(&r.key).is_none(),
        })
    }
}

/// A parsed `fieldSelector`: equality tests on dotted paths of the object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    pub fn parse(sel: &str) -> Result<Self, KubeError> {
        let mut terms = Vec::new();
        if sel.trim().is_empty() {
            return Ok(FieldSelector { terms });
        }
        for part in sel.split(',') {
            let (k, eq, v) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (k, true, v)
            } else {
                return Err(KubeError::bad_request(format!(
                    "invalid selector: '{sel}'; can't understand '{part}'"
                )));
            };
            terms.push((k.trim().to_string(), eq, v.trim().to_string()));
        }
        Ok(FieldSelector { terms })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|(k, eq, v)| {
            let pointer = format!("/{}", k.replace('.', "/"));
            let actual = match obj.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == *v) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_parse_and_match() {
        let obj = json!({ "metadata": { "labels": { "app": "web", "tier": "fe" } } });
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(&obj);
        assert!(m(""));
        assert!(m("app=web"));
        assert!(m("app==web,tier"));
        assert!(!m("app!=web"));
        assert!(m("app in (db, web)"));
        assert!(!m("tier notin (fe)"));
        assert!(m("!missing"));
        assert!(!m("missing"));
        assert!(m("agents.x-k8s.io/sandbox-name!=x"));
        assert!(LabelSelector::parse("a in (b").is_err());
        assert!(LabelSelector::parse("a=b c").is_err());
    }

    #[test]
    fn field_selectors_follow_paths() {
        let obj = json!({ "metadata": { "name": "p1" }, "status": { "phase": "Running" } });
        let f = FieldSelector::parse("metadata.name=p1,status.phase!=Failed").unwrap();
        assert!(f.matches(&obj));
        assert!(
            !FieldSelector::parse("status.phase=Pending")
                .unwrap()
                .matches(&obj)
        );
        assert!(FieldSelector::parse("nonsense").is_err());
    }
}
