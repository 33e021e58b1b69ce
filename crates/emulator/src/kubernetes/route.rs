//! URL → what is being asked: a discovery document, or a resource request (group, version,
//! resource, namespace, name, subresource), plus the query-string helpers.

use super::resources::Registry;

#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Version,
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`
    ResourceList {
        group: String,
        version: String,
    },
    Resource(ResourceRequest),
    /// `/healthz`, `/readyz`, `/livez`
    Health,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRequest {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// Came in through the legacy `/watch/` path prefix.
    pub watch_prefix: bool,
}

impl ResourceRequest {
    /// The Kubernetes verb for this request.
    pub fn verb(&self, method: &str, query: &Query) -> &'static str {
        let watch = self.watch_prefix || query.flag("watch");
        match (method, self.name.is_some(), self.subresource.as_deref()) {
            (_, true, Some("exec")) => "create",
            ("GET", _, _) if watch => "watch",
            ("GET", true, _) => "get",
            ("GET", false, _) => "list",
            ("POST", _, _) => "create",
            ("PUT", _, _) => "update",
            ("PATCH", _, _) => "patch",
            ("DELETE", true, _) => "delete",
            ("DELETE", false, _) => "deletecollection",
            _ => "unknown",
        }
    }
}

/// Parses an API path against the served types.
pub fn parse(path: &str, registry: &Registry) -> Option<Route> {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match segs.as_slice() {
        ["version"] => return Some(Route::Version),
        ["healthz"] | ["readyz"] | ["livez"] => return Some(Route::Health),
        ["api"] => return Some(Route::CoreVersions),
        ["apis"] => return Some(Route::Groups),
        ["api", v] => {
            return Some(Route::ResourceList {
                group: String::new(),
                version: v.to_string(),
            });
        }
        ["apis", g] => return Some(Route::Group(g.to_string())),
        ["apis", g, v] => {
            return Some(Route::ResourceList {
                group: g.to_string(),
                version: v.to_string(),
            });
        }
        _ => {}
    }
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let (watch_prefix, rest) = match rest {
        ["watch", tail @ ..] => (true, tail),
        _ => (false, rest),
    };
    let namespaced = |plural: &str| {
        registry
            .find(group, version, plural)
            .is_some_and(|t| t.namespaced)
    };
    let (namespace, rest): (Option<String>, &[&str]) = match rest {
        ["namespaces", ns, plural, ..] if namespaced(plural) => (Some(ns.to_string()), &rest[2..]),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(name.to_string()), None),
        [plural, name, sub] => (*plural, Some(name.to_string()), Some(sub.to_string())),
        _ => return None,
    };
    Some(Route::Resource(ResourceRequest {
        group: group.to_string(),
        version: version.to_string(),
        plural: plural.to_string(),
        namespace,
        name,
        subresource,
        watch_prefix,
    }))
}

/// A decoded query string (`+` is a space, keys may repeat: `command=a&command=b`).
#[derive(Debug, Clone, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    pub fn parse(raw: Option<&str>) -> Self {
        Query {
            pairs: form_urlencoded::parse(raw.unwrap_or("").as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, key: &str) -> Vec<String> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// `true` / `1` (kube-rs and client-node differ).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true") | Some("1") | Some("True"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_core_group_and_cluster_paths() {
        let r = Registry::new(&["v1alpha1".into()]);
        let res = |p: &str| match parse(p, &r) {
            Some(Route::Resource(rr)) => rr,
            other => panic!("{p}: {other:?}"),
        };
        let a = res("/api/v1/namespaces/ns/pods/p/exec");
        assert_eq!(
            (a.namespace.as_deref(), a.plural.as_str()),
            (Some("ns"), "pods")
        );
        assert_eq!(
            (a.name.as_deref(), a.subresource.as_deref()),
            (Some("p"), Some("exec"))
        );
        let ns = res("/api/v1/namespaces/tenant");
        assert_eq!(
            (ns.plural.as_str(), ns.name.as_deref(), ns.namespace),
            ("namespaces", Some("tenant"), None)
        );
        let nss = res("/api/v1/namespaces/tenant/status");
        assert_eq!(nss.subresource.as_deref(), Some("status"));
        let sb = res("/apis/agents.x-k8s.io/v1alpha1/namespaces/t/sandboxes/s");
        assert_eq!(sb.group, "agents.x-k8s.io");
        let all = res("/api/v1/pods");
        assert_eq!((all.namespace, all.name), (None, None));
        let w = res("/api/v1/watch/namespaces/ns/pods");
        assert!(w.watch_prefix);
        assert_eq!(parse("/apis", &r), Some(Route::Groups));
        assert_eq!(parse("/nope", &r), None);
        let q = Query::parse(Some("command=sh&command=-c&command=echo+hi%21&stdin=true"));
        assert_eq!(q.all("command"), ["sh", "-c", "echo hi!"]);
        assert!(q.flag("stdin"));
        assert_eq!(a.verb("GET", &q), "create");
    }
}
