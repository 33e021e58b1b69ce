//! The one bounded poll of the tests: a condition checked again and again until it holds, and a
//! failed test, naming what it waited for, once the deadline has passed. No test waits on a
//! condition without a deadline, and none sleeps a fixed time in place of a condition.
//!
//! ```ignore
//! use sandbox_core::poll::poll;
//! poll("the sandbox to be deleted", Duration::from_secs(10))
//!     .until(|| emu.counts().sandboxes == 0)
//!     .await;
//! ```
//!
//! A check answers with a `bool` (holds or not), an `Option` (the value once there is one) or a
//! `Result` (the value, or why not yet: the last reason is in the failure), see [`Check`].

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

/// How often a condition is checked unless [`Poll::every`] says otherwise: often enough that a
/// test waits ~10 ms past the moment it could go on, rarely enough to cost nothing.
pub const DEFAULT_EVERY: Duration = Duration::from_millis(10);

/// A wait for `what`, of at most `within`.
pub fn poll(what: impl Display, within: Duration) -> Poll {
    Poll {
        what: what.to_string(),
        within,
        every: DEFAULT_EVERY,
    }
}

/// A bounded wait; see the module docs.
#[must_use = "a poll does nothing until `until`, `until_async` or `holds` is awaited"]
pub struct Poll {
    what: String,
    within: Duration,
    every: Duration,
}

/// What one check of a condition answered: its value once it holds, else why not (if it says).
pub trait Check {
    type Value;
    fn check(self) -> Result<Self::Value, Option<String>>;
}

impl Check for bool {
    type Value = ();
    fn check(self) -> Result<(), Option<String>> {
        if self { Ok(()) } else { Err(None) }
    }
}

impl<T> Check for Option<T> {
    type Value = T;
    fn check(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: Display> Check for Result<T, E> {
    type Value = T;
    fn check(self) -> Result<T, Option<String>> {
        self.map_err(|why| Some(why.to_string()))
    }
}

impl Poll {
    /// Checks every `every` instead of every [`DEFAULT_EVERY`] (a check that costs a request
    /// to a real server, say).
    pub fn every(mut self, every: Duration) -> Self {
        self.every = every;
        self
    }

    /// Checks `check` until it holds and returns its value; past the deadline, fails the test
    /// with what it waited for and the last reason the check gave.
    pub async fn until<C: Check>(self, mut check: impl FnMut() -> C) -> C::Value {
        self.until_async(|| std::future::ready(check())).await
    }

    /// [`until`](Self::until) for a check that awaits (a request, say).
    pub async fn until_async<C: Check, F: Future<Output = C>>(
        self,
        mut check: impl FnMut() -> F,
    ) -> C::Value {
        let deadline = Instant::now() + self.within;
        loop {
            let why = match check().await.check() {
                Ok(value) => return value,
                Err(why) => why,
            };
            if Instant::now() >= deadline {
                match why {
                    Some(why) => panic!(
                        "timed out after {:?} waiting for {}: {why}",
                        self.within, self.what
                    ),
                    None => panic!(
                        "timed out after {:?} waiting for {}",
                        self.within, self.what
                    ),
                }
            }
            tokio::time::sleep(self.every).await;
        }
    }

    /// Checks `done` until it holds or the deadline passes, and says which: for a wait after
    /// which the test goes on either way (it then asserts what it needs itself). Never fails.
    pub async fn holds(self, mut done: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + self.within;
        loop {
            if done() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(self.every).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_the_value_once_the_check_holds() {
        let mut n = 0;
        let value = poll("three checks", Duration::from_secs(5))
            .every(Duration::from_millis(1))
            .until(|| {
                n += 1;
                (n == 3).then_some(n)
            })
            .await;
        assert_eq!(value, 3);
    }

    #[tokio::test]
    #[should_panic(expected = "timed out after 20ms waiting for never: still 7 left")]
    async fn fails_with_what_it_waited_for_and_the_last_reason() {
        poll("never", Duration::from_millis(20))
            .until(|| Err::<(), _>("still 7 left"))
            .await;
    }

    #[tokio::test]
    async fn holds_says_whether_it_held_without_failing() {
        assert!(
            !poll("never", Duration::from_millis(20))
                .holds(|| false)
                .await
        );
        assert!(poll("at once", Duration::ZERO).holds(|| true).await);
    }
}
