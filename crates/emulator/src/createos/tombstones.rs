//! Destroyed sandboxes stay visible, as on the real server: `GET` answers their last view with
//! status `destroyed` and `destroyed_at`, `GET /v1/sandboxes?status=destroyed` lists them, and
//! a second `DELETE` is a no-op answering `destroyed`. Their processes and files are gone; only
//! the view is kept, and only for the newest `limit` of them, so a long soak stays bounded.
//! They are not sandboxes any more: counts and the control API's sandbox list leave them out.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;

use super::users::User;

pub struct Tombstone {
    pub id: String,
    pub owner: User,
    /// Creation order, shared with live sandboxes so lists keep one order.
    pub seq: u64,
    pub view: Value,
}

pub struct Tombstones {
    limit: usize,
    rows: Mutex<VecDeque<Tombstone>>,
}

impl Tombstones {
    pub fn new(limit: usize) -> Self {
        Tombstones {
            limit,
            rows: Mutex::new(VecDeque::new()),
        }
    }

    /// Records a destroyed sandbox, forgetting the oldest beyond the limit.
    pub fn push(&self, tombstone: Tombstone) {
        let mut rows = self.rows.lock().unwrap();
        rows.push_back(tombstone);
        while rows.len() > self.limit {
            rows.pop_front();
        }
    }

    /// The view of `owner`'s destroyed sandbox `id`.
    pub fn find(&self, owner: User, id: &str) -> Option<Value> {
        let rows = self.rows.lock().unwrap();
        rows.iter()
            .find(|t| t.owner == owner && t.id == id)
            .map(|t| t.view.clone())
    }

    /// `(seq, view)` of every destroyed sandbox of `owner`.
    pub fn of(&self, owner: User) -> Vec<(u64, Value)> {
        let rows = self.rows.lock().unwrap();
        rows.iter()
            .filter(|t| t.owner == owner)
            .map(|t| (t.seq, t.view.clone()))
            .collect()
    }

    pub fn clear(&self) {
        self.rows.lock().unwrap().clear();
    }
}
