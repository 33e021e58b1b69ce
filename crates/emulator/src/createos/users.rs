//! API keys and the users they stand for. Each key is one user; a sandbox belongs to the user
//! whose key created it, and any other user gets 404 for it (the real server answers 404, not
//! 403, for another user's sandbox) and never sees it in a list.

/// A caller, identified by the index of its key (0 = the primary key). The server front puts
/// it in the request's extensions once the key is checked; handlers take it from there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct User(usize);

impl User {
    /// The user id shown as `created_by` in sandbox views.
    pub fn id(self) -> String {
        format!("user_{}", self.0)
    }
}

pub struct Users {
    keys: Vec<String>,
}

impl Users {
    pub fn new(primary: String, others: &[String]) -> Self {
        let mut keys = vec![primary];
        keys.extend(others.iter().filter(|k| !k.is_empty()).cloned());
        Users { keys }
    }

    pub fn primary_key(&self) -> &str {
        &self.keys[0]
    }

    /// The user of an `X-Api-Key` header value, if it is one of the keys.
    pub fn find(&self, key: &[u8]) -> Option<User> {
        self.keys.iter().position(|k| k.as_bytes() == key).map(User)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_its_own_user() {
        let users = Users::new("a".into(), &["b".into()]);
        assert_eq!(users.find(b"a"), Some(User(0)));
        assert_eq!(users.find(b"b"), Some(User(1)));
        assert_eq!(users.find(b"c"), None);
        assert_ne!(User(0).id(), User(1).id());
    }
}
