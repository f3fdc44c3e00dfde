//! The auth generation ([`billing_model::store::Store::auth_generation`]) on PostgreSQL.
//!
//! Statement triggers on the tables authentication reads (organizations, branches, users,
//! user_branches, api_keys; migration `0008_auth_changes`) `NOTIFY billing_auth` in the changing
//! transaction, so the notice goes out when, and only if, it commits — whichever process (or
//! person with `psql`) made the change. Every store keeps one listening connection on a thread
//! of its own, which moves the generation on each notice. This process's own changes move it
//! at once, when the transaction that made them commits (see `TxState::auth_changed`), before
//! the notice comes round.
//!
//! While the listening connection is down (a server restart, a network cut) the generation is
//! `None`, so the engine keeps nothing and asks the database every time; when it is back, the
//! generation moves past everything kept before.

use diesel::pg::PgConnection;
use diesel::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The channel the triggers notify.
pub const CHANNEL: &str = "billing_auth";
/// How often the listening connection is checked for notices: the longest another process can
/// go on using what it kept after a change committed here (plus the notice's travel time).
pub const POLL: Duration = Duration::from_millis(5);
/// How often the listening connection is proven alive with a query (a cut connection may
/// otherwise look merely quiet).
const HEARTBEAT: Duration = Duration::from_secs(1);
const RECONNECT_PAUSE: Duration = Duration::from_millis(200);

#[derive(Default)]
struct State {
    generation: AtomicU64,
    live: AtomicBool,
    stop: AtomicBool,
}

pub(crate) struct AuthFeed {
    state: Arc<State>,
    thread: Option<JoinHandle<()>>,
}

impl AuthFeed {
    /// Starts listening on `url`; the generation is `None` until the first `LISTEN` succeeded.
    pub fn start(url: &str) -> AuthFeed {
        let state = Arc::new(State::default());
        let (url, s) = (url.to_string(), state.clone());
        let thread = std::thread::Builder::new()
            .name("billing-auth-feed".into())
            .spawn(move || listen(&url, &s))
            .ok();
        AuthFeed { state, thread }
    }

    pub fn generation(&self) -> Option<u64> {
        // Liveness first: a reconnect moves the counter before it sets `live`, so a counter
        // read after seeing `live` is past everything kept before the outage.
        let live = self.state.live.load(Ordering::SeqCst);
        live.then(|| self.state.generation.load(Ordering::SeqCst))
    }

    /// This process changed something authentication reads (and the change has committed).
    pub fn bump(&self) {
        self.state.generation.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for AuthFeed {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn listen(url: &str, state: &State) {
    while !state.stop.load(Ordering::SeqCst) {
        let conn = PgConnection::establish(url)
            .ok()
            .and_then(|mut c| diesel::sql_query(format!("LISTEN {CHANNEL}")).execute(&mut c).ok().map(|_| c));
        let Some(mut conn) = conn else {
            std::thread::sleep(RECONNECT_PAUSE);
            continue;
        };
        // Whatever was kept before may have missed notices: start a new generation.
        state.generation.fetch_add(1, Ordering::SeqCst);
        state.live.store(true, Ordering::SeqCst);
        let mut proven = Instant::now();
        let healthy = loop {
            if state.stop.load(Ordering::SeqCst) {
                break true;
            }
            let mut moved = false;
            let mut failed = false;
            for n in conn.notifications_iter() {
                match n {
                    Ok(_) => moved = true,
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
            if moved {
                state.generation.fetch_add(1, Ordering::SeqCst);
            }
            if failed {
                break false;
            }
            if proven.elapsed() >= HEARTBEAT {
                if diesel::sql_query("SELECT 1").execute(&mut conn).is_err() {
                    break false;
                }
                proven = Instant::now();
            }
            std::thread::sleep(POLL);
        };
        state.live.store(false, Ordering::SeqCst);
        if !healthy {
            tracing::warn!("the auth change feed lost its connection; authentication is not cached until it is back");
            std::thread::sleep(RECONNECT_PAUSE);
        }
    }
}
