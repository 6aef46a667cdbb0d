//! One watched resource, followed as client-go's reflector follows it: a listing (one answer
//! decoded as it arrives, or a streaming list), then watches resumed from the last
//! resourceVersion. What kube's `watcher` hides is decided here (docs/metrics.md, "Freshness and
//! restarts"):
//!
//! * every restart waits a jittered, doubling backoff that is forgotten only after a quiet period,
//!   so failures that recur right after a successful listing keep backing off (no relist storm);
//! * two watch requests of one resource are at least [`MIN_WATCH_INTERVAL`] apart, and a watch the
//!   server closes within that time without an event is a failure (client-go's "very short watch");
//! * a watch open past its timeout plus [`STALL_MARGIN`] with no event, bookmark or close is a stall;
//! * a store past its object cap, an event past its byte bound ([`super::limits`]) or a stream cut
//!   inside an event is a failure with a named reason, never an end and never the process's end;
//! * each proof that the store is current (an event, a bookmark, a completed listing, the server
//!   closing a watch at its timeout) is reported, so staleness counts from the last one.

pub use super::failure::{Failure, OVER_BUDGET};

use super::backoff::Backoff;
use super::failure::over_budget;
use super::list::{FromListed, ListBounds, list_all};
use futures::StreamExt;
use futures::stream::BoxStream;
use kube::api::{Api, ApiResource, WatchParams};
use kube::core::{Resource, WatchEvent};
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::Event;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// The shortest time between two watch requests of one resource.
pub const MIN_WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// How much longer than the timeout it asked for a watch may stay open without a proof of
/// freshness before it is taken for a stall (a server ignoring `timeoutSeconds`, a frozen one).
pub const STALL_MARGIN: Duration = Duration::from_secs(5);

/// The timeout a streaming list asks for (client-go asks at least 5 minutes of every watch). Its
/// initial events may take longer than the short timeout of the watches that follow: at 150,000
/// pods, a list cut at 30 s was begun again from nothing, and `serve` never became ready. The
/// stream is ended at the bookmark that closes the initial events; watches then ask their own.
const STREAMING_LIST_TIMEOUT: Duration = Duration::from_secs(300);

/// The timeout the first watch after a failure asks for: its close, or the bookmark the API
/// server sends shortly before it, proves the store current within seconds of a recovery.
const RECOVERY_WATCH_TIMEOUT: Duration = Duration::from_secs(2);

/// What one step of a follow means for the caller.
pub enum Signal {
    /// The store changed, or finished a (re)listing (`listed`).
    Changed { source: usize, listed: bool },
    /// Nothing changed, but the store is known to be current now.
    Proof { source: usize },
    /// The follow failed; the next attempt waits `wait`, the `step`-th of the streak.
    Failed { source: usize, failure: Failure, step: u32, wait: Duration, refused_streaming: bool },
}

/// An open watch stream: when it was opened and the timeout the server was asked to end it at.
struct Open<K> {
    events: BoxStream<'static, kube::Result<WatchEvent<K>>>,
    opened: Instant,
    asked: Duration,
}

/// Where a follow stands.
enum Phase<K> {
    /// A listing is to be made.
    List,
    /// A watch is to be opened from this resourceVersion.
    Watch(String),
    /// A streaming list is under way: initial events until the bookmark that ends them.
    Initial { open: Open<K>, count: usize },
    /// A watch is open: the version it reached, its last proof, its events so far.
    Watching { open: Open<K>, version: String, proof: Instant, seen: u64 },
}

/// How one resource is listed and watched, and its bounds.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// The server is asked to end each watch after this long.
    pub watch_timeout: Duration,
    /// Initial listings through a streaming list (falls back to one list when the server refuses).
    pub streaming: bool,
    /// The most objects the store may hold.
    pub max_objects: usize,
}

/// Where a follow puts what it lists and watches: kube's reflector store, or a store of its own
/// that keeps less per object ([`super::slim_store`]).
pub trait Sink<K>: Send + 'static {
    /// Applies one event, as kube's reflector writer does (`Init` … `InitDone` swaps a listing in).
    fn apply(&mut self, event: Event<K>);
    /// The objects the store holds.
    fn objects(&self) -> usize;
}

impl<K> Sink<K> for Writer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
{
    fn apply(&mut self, event: Event<K>) {
        self.apply_watcher_event(&event);
    }

    fn objects(&self) -> usize {
        self.as_reader().len()
    }
}

/// One resource followed into a store.
pub struct Follow<K: Resource + Clone + 'static, S = Writer<K>>
where
    K::DynamicType: Clone + Eq + Hash,
{
    api: Api<K>,
    /// What a listing lists: the resource, in `namespace` or all.
    resource: ApiResource,
    namespace: Option<String>,
    rules: Rules,
    sink: S,
    source: usize,
    phase: Phase<K>,
    backoff: Backoff,
    wait: Option<Duration>,
    last_watch: Option<Instant>,
    /// Failed since its last proof of freshness.
    recovering: bool,
}

/// One step's outcome inside [`Follow::next`].
enum Step<K> {
    Next(Phase<K>),
    Report(Signal, Phase<K>),
    Fail(Failure),
}

impl<K, S> Follow<K, S>
where
    K: Resource + Clone + Debug + DeserializeOwned + FromListed + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash,
    S: Sink<K>,
{
    /// Follows `resource` (in `namespace`, when given) through `api` into `sink`.
    pub fn new(api: Api<K>, resource: &K::DynamicType, namespace: Option<&str>, rules: Rules, sink: S, source: usize) -> Follow<K, S> {
        Follow {
            api,
            resource: ApiResource::erase::<K>(resource),
            namespace: namespace.map(str::to_string),
            rules,
            sink,
            source,
            phase: Phase::List,
            backoff: Backoff::default(),
            wait: None,
            last_watch: None,
            recovering: false,
        }
    }

    /// The next signal of this resource; never ends (a follow is restarted, not finished).
    pub async fn next(mut self) -> Option<(Signal, Self)> {
        loop {
            if let Some(wait) = self.wait.take() {
                tokio::time::sleep(wait).await;
            }
            let phase = std::mem::replace(&mut self.phase, Phase::List);
            let step = match phase {
                Phase::List if self.rules.streaming => self.open(None).await,
                Phase::List => self.list().await,
                Phase::Watch(version) => self.open(Some(version)).await,
                Phase::Initial { open, count } => self.initial(open, count).await,
                Phase::Watching { open, version, proof, seen } => self.watching(open, version, proof, seen).await,
            };
            match step {
                Step::Next(phase) => self.phase = phase,
                Step::Report(signal, phase) => {
                    self.phase = phase;
                    self.recovering = false;
                    return Some((signal, self));
                }
                Step::Fail(failure) => return Some((self.failed(failure), self)),
            }
        }
    }

    /// Notes a failure: what follows it (a listing or a watch from the last version) after a wait.
    fn failed(&mut self, failure: Failure) -> Signal {
        let (step, wait) = self.backoff.failed(Instant::now());
        if matches!(failure, Failure::TooManyObjects(_) | Failure::OverBudget) {
            // What made it too large is let go now, not when a listing next succeeds.
            self.sink.apply(Event::Init);
            self.sink.apply(Event::InitDone);
        }
        let refused_streaming = self.rules.streaming && refuses_streaming(&failure);
        self.rules.streaming &= !refused_streaming;
        // A watch that failed resumes from the version it had reached; a failed listing lists again.
        self.phase = match std::mem::replace(&mut self.phase, Phase::List) {
            Phase::Watching { version, .. } | Phase::Watch(version) if !failure.relists() => Phase::Watch(version),
            _ => Phase::List,
        };
        self.wait = Some(wait);
        self.recovering = true;
        Signal::Failed { source: self.source, failure, step, wait, refused_streaming }
    }

    /// A listing in one answer, decoded as it arrives (`cluster::list`; the API server serves it
    /// from its watch cache, docs/performance.md "One answer per list"), within the store's object
    /// cap and the memory budget, swapped into the store when complete.
    async fn list(&mut self) -> Step<K> {
        let bounds = ListBounds { page_size: None, max_items: self.rules.max_objects, halt: Some(&OVER_BUDGET) };
        let listed = match list_all(&self.api.clone().into_client(), &self.resource, self.namespace.as_deref(), bounds).await {
            Ok(listed) => listed,
            Err(error) => return self.abandon(Failure::of(&error)),
        };
        let version = listed.resource_version.clone().unwrap_or_default();
        let objects = match K::from_listed(listed) {
            Ok(objects) => objects,
            Err(why) => return self.abandon(Failure::Request(why)),
        };
        if over_budget() {
            return self.abandon(Failure::OverBudget);
        }
        self.sink.apply(Event::Init);
        for object in objects {
            self.sink.apply(Event::InitApply(object));
        }
        self.sink.apply(Event::InitDone);
        Step::Report(Signal::Changed { source: self.source, listed: true }, Phase::Watch(version))
    }

    /// A listing given up: what it had gathered is let go at once.
    fn abandon(&mut self, failure: Failure) -> Step<K> {
        self.sink.apply(Event::Init);
        Step::Fail(failure)
    }

    /// Opens a watch from `version`, or a streaming list (`None`), at most one per interval.
    async fn open(&mut self, version: Option<String>) -> Step<K> {
        if let Some(last) = self.last_watch {
            tokio::time::sleep_until((last + MIN_WATCH_INTERVAL).into()).await;
        }
        self.last_watch = Some(Instant::now());
        // Randomised like client-go's, so that restarted watches spread out: 5/6 to all of the timeout.
        let asked = match (&version, self.recovering) {
            (None, _) => STREAMING_LIST_TIMEOUT.max(self.rules.watch_timeout),
            (Some(_), true) => RECOVERY_WATCH_TIMEOUT.min(self.rules.watch_timeout),
            (Some(_), false) => self.rules.watch_timeout.mul_f64(5.0 / 6.0 + fastrand::f64() / 6.0),
        };
        let asked = Duration::from_secs((asked.as_secs_f64().round() as u64).max(1));
        let params = WatchParams {
            timeout: Some(asked.as_secs() as u32),
            bookmarks: true,
            send_initial_events: version.is_none(),
            ..WatchParams::default()
        };
        let events = match self.api.watch(&params, version.as_deref().unwrap_or("0")).await {
            Ok(events) => events.boxed(),
            Err(error) => {
                // A watch that could not be opened is opened again from the same version.
                self.phase = version.map_or(Phase::List, Phase::Watch);
                return Step::Fail(Failure::of(&error));
            }
        };
        let now = Instant::now();
        let open = Open { events, opened: now, asked };
        match version {
            None => {
                self.sink.apply(Event::Init);
                Step::Next(Phase::Initial { open, count: 0 })
            }
            Some(version) => Step::Next(Phase::Watching { open, version, proof: now, seen: 0 }),
        }
    }

    /// The events of a streaming list up to the bookmark that ends them.
    async fn initial(&mut self, mut open: Open<K>, count: usize) -> Step<K> {
        // Initial events flow without pause: a gap as long as a watch's timeout is a stall.
        let quiet = self.rules.watch_timeout + STALL_MARGIN;
        let event = match tokio::time::timeout(quiet, open.events.next()).await {
            Err(_) => return self.abandon(Failure::Stalled(quiet)),
            Ok(None) => return self.abandon(Failure::Request("the streaming list ended before its last initial event".into())),
            Ok(Some(Err(error))) => return self.abandon(Failure::of(&error)),
            Ok(Some(Ok(event))) => event,
        };
        match event {
            WatchEvent::Added(object) | WatchEvent::Modified(object) => {
                if count >= self.rules.max_objects {
                    return self.abandon(Failure::TooManyObjects(self.rules.max_objects));
                }
                if over_budget() {
                    return self.abandon(Failure::OverBudget);
                }
                self.sink.apply(Event::InitApply(object));
                Step::Next(Phase::Initial { open, count: count + 1 })
            }
            WatchEvent::Deleted(_) => Step::Next(Phase::Initial { open, count }),
            WatchEvent::Bookmark(mark) if mark.metadata.annotations.contains_key("k8s.io/initial-events-end") => {
                self.sink.apply(Event::InitDone);
                // The listing's long request is ended here; the follow watches from the bookmark
                // with the short timeout whose close proves it current.
                drop(open);
                Step::Report(Signal::Changed { source: self.source, listed: true }, Phase::Watch(mark.metadata.resource_version))
            }
            WatchEvent::Bookmark(_) => Step::Next(Phase::Initial { open, count }),
            WatchEvent::Error(status) => self.abandon(Failure::of_status(&status)),
        }
    }

    /// The next event of an open watch.
    async fn watching(&mut self, mut open: Open<K>, version: String, proof: Instant, seen: u64) -> Step<K> {
        let quiet = open.asked + STALL_MARGIN;
        let next = tokio::time::timeout_at((proof + quiet).into(), open.events.next()).await;
        let now = Instant::now();
        let changed = |source| Signal::Changed { source, listed: false };
        match next {
            Err(_) => {
                self.phase = Phase::Watch(version);
                Step::Fail(Failure::Stalled(quiet))
            }
            Ok(None) => match closed_at_timeout(now.duration_since(open.opened), open.asked) {
                // Closed by the server at the timeout it was asked for: current until then.
                true => Step::Report(Signal::Proof { source: self.source }, Phase::Watch(version)),
                false if seen == 0 && now.duration_since(open.opened) < MIN_WATCH_INTERVAL => {
                    self.phase = Phase::Watch(version);
                    Step::Fail(Failure::ShortWatch)
                }
                false => Step::Next(Phase::Watch(version)),
            },
            Ok(Some(Err(error))) => {
                self.phase = Phase::Watch(version);
                Step::Fail(Failure::of(&error))
            }
            Ok(Some(Ok(event))) => {
                let version = event_version(&event).unwrap_or(version);
                let watching = |open| Phase::Watching { open, version: version.clone(), proof: now, seen: seen + 1 };
                match event {
                    WatchEvent::Added(object) | WatchEvent::Modified(object) => {
                        let before = self.sink.objects();
                        self.sink.apply(Event::Apply(object));
                        if self.sink.objects() > self.rules.max_objects {
                            return Step::Fail(Failure::TooManyObjects(self.rules.max_objects));
                        }
                        if self.sink.objects() > before && over_budget() {
                            return Step::Fail(Failure::OverBudget);
                        }
                        Step::Report(changed(self.source), watching(open))
                    }
                    WatchEvent::Deleted(object) => {
                        self.sink.apply(Event::Delete(object));
                        Step::Report(changed(self.source), watching(open))
                    }
                    WatchEvent::Bookmark(_) => Step::Report(Signal::Proof { source: self.source }, watching(open)),
                    WatchEvent::Error(status) => {
                        self.phase = Phase::Watch(version.clone());
                        Step::Fail(Failure::of_status(&status))
                    }
                }
            }
        }
    }
}

/// A watch that lasted `lasted` ended at the timeout it asked for (`asked`), allowing the time its
/// answer took to begin: a quarter of it, at most a second.
fn closed_at_timeout(lasted: Duration, asked: Duration) -> bool {
    lasted + (asked / 4).min(Duration::from_secs(1)) >= asked
}

/// The resourceVersion an event brings the watch to.
fn event_version<K: Resource>(event: &WatchEvent<K>) -> Option<String> {
    match event {
        WatchEvent::Added(object) | WatchEvent::Modified(object) | WatchEvent::Deleted(object) => object.meta().resource_version.clone(),
        WatchEvent::Bookmark(mark) => Some(mark.metadata.resource_version.clone()),
        WatchEvent::Error(_) => None,
    }
}

/// A server that does not offer streaming lists rejects `sendInitialEvents` as an invalid or bad
/// request (the WatchList feature off); every other failure is retried as it is.
fn refuses_streaming(failure: &Failure) -> bool {
    matches!(failure, Failure::Request(text) if text.starts_with("400 ") || text.starts_with("422 "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_close_at_the_asked_timeout_proves_the_watch_current() {
        let secs = Duration::from_secs;
        assert!(closed_at_timeout(secs(30), secs(30)) && closed_at_timeout(Duration::from_millis(29_100), secs(30)));
        assert!(!closed_at_timeout(secs(20), secs(30)), "closed early: no proof");
        assert!(closed_at_timeout(Duration::from_millis(980), secs(1)), "a one-second watch closed by the server");
        assert!(!closed_at_timeout(Duration::from_millis(10), secs(1)), "an empty answer is no proof, however short the timeout");
    }

    #[test]
    fn only_a_refused_sendinitialevents_turns_streaming_lists_off() {
        let status = |code: u16| kube::Error::Api(Box::new(kube::core::Status { code, ..Default::default() }));
        assert!(refuses_streaming(&Failure::of(&status(422))));
        assert!(refuses_streaming(&Failure::of(&status(400))));
        assert!(!refuses_streaming(&Failure::of(&status(410))), "410 Gone relists, still streaming");
        assert!(!refuses_streaming(&Failure::of(&status(403))));
    }
}
