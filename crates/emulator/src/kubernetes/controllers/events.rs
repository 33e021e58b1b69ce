//! How a controller task waits on the objects it drives: the store's events from now on,
//! and what it heard (an event, a gap to re-read the store after, or shutdown).

use std::sync::Arc;

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::kubernetes::state::App;
use crate::kubernetes::store::Event;
use crate::kubernetes::util::raised;

/// Events from now on, for a task that waits on a few objects.
pub fn subscribe(app: &App) -> broadcast::Receiver<Arc<Event>> {
    let rv = app.store.current_rv();
    match app.store.watch_from(rv) {
        Ok((_, rx)) => rx,
        Err(_) => unreachable!("the current resourceVersion is always in the history"),
    }
}

/// What a waiting controller heard.
pub enum Heard {
    Event(Arc<Event>),
    /// Events were missed: re-read the store.
    Resync,
    Stop,
}

pub async fn next(rx: &mut broadcast::Receiver<Arc<Event>>, app: &App) -> Heard {
    let mut stop = app.stop.subscribe();
    tokio::select! {
        r = rx.recv() => match r {
            Ok(ev) => Heard::Event(ev),
            Err(RecvError::Lagged(_)) => Heard::Resync,
            Err(RecvError::Closed) => Heard::Stop,
        },
        _ = raised(&mut stop) => Heard::Stop,
    }
}
