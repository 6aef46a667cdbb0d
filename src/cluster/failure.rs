//! Why a watched resource's follow was restarted ([`Failure`]): one redacted line per failed
//! request or stream, and whether the store must be listed again; the memory budget a growing
//! store checks ([`OVER_BUDGET`]).

use super::limits::Refused;
use crate::secrets;
use std::time::Duration;

/// Why a resource's watch was restarted: one line, redacted (its resource is named by the caller).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A list or watch request failed, or its stream broke.
    Request(String),
    /// The watch's resourceVersion is too old (410 Gone): a fresh listing follows.
    Gone,
    /// Open past its timeout and margin without an event, a bookmark or a close.
    Stalled(Duration),
    /// Closed by the server within [`MIN_WATCH_INTERVAL`](super::reflector::MIN_WATCH_INTERVAL) without an event.
    ShortWatch,
    /// The store would hold more than `--max-watch-objects`.
    TooManyObjects(usize),
    /// The process is over `serve --memory-budget` and this store was growing.
    OverBudget,
}

/// Set while the process's resident memory is over its budget (`serve --memory-budget`): a store
/// that would grow fails instead, and lets its objects go (`memory::watch_budget` sets it).
pub static OVER_BUDGET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(super) fn over_budget() -> bool {
    OVER_BUDGET.load(std::sync::atomic::Ordering::Relaxed)
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Request(why) => f.write_str(why),
            Failure::Gone => f.write_str("its resourceVersion is too old (410 Gone)"),
            Failure::Stalled(quiet) => {
                write!(f, "no event, bookmark or close for {}s: the watch stalled", quiet.as_secs())
            }
            Failure::ShortWatch => f.write_str("the server closed the watch at once without an event"),
            Failure::TooManyObjects(cap) => write!(f, "more than {cap} objects (--max-watch-objects); its objects are let go until it is listed again"),
            Failure::OverBudget => f.write_str("the process is over its memory budget (--memory-budget) and this resource grew; its objects are let go until it is listed again"),
        }
    }
}

impl Failure {
    /// A failed request or stream, worded as one line without the client library's debug output.
    pub(super) fn of(error: &kube::Error) -> Failure {
        let text = match error {
            kube::Error::Api(status) if status.code == 410 => return Failure::Gone,
            kube::Error::Api(status) => format!("{} {}: {}", status.code, status.reason, status.message.trim()),
            kube::Error::ReadEvents(io) => match io.get_ref().and_then(|inner| Refused::find(inner)) {
                Some(refused) => refused.to_string(),
                None => format!("reading the watch stream failed: {io}"),
            },
            kube::Error::SerdeError(e) => format!("the stream held a line that is no watch event ({e})"),
            other => match Refused::find(other) {
                Some(Refused::TooManyItems(cap)) => return Failure::TooManyObjects(*cap),
                Some(Refused::OverBudget) => return Failure::OverBudget,
                Some(refused) => refused.to_string(),
                None => causes(other),
            },
        };
        Failure::Request(secrets::redact(&text).lines().collect::<Vec<_>>().join(" "))
    }

    /// A watch error event (`type: ERROR`).
    pub(super) fn of_status(status: &kube::core::Status) -> Failure {
        Failure::of(&kube::Error::Api(Box::new(status.clone())))
    }

    /// After this failure the resource is listed again, not only watched again.
    pub(super) fn relists(&self) -> bool {
        matches!(self, Failure::Gone | Failure::TooManyObjects(_) | Failure::OverBudget)
    }
}

/// An error and its causes as one line (`client error (SendRequest): connection refused`), each
/// said once: the outer layers of the HTTP client only repeat what they wrap.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut said: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(error) = next {
        let text = error.to_string();
        if !said.iter().any(|s| s.contains(&text)) {
            said.push(text);
        }
        next = error.source();
    }
    let text = said.join(": ");
    // kube's name for a failed HTTP request says nothing to a reader.
    text.strip_prefix("ServiceError: ").map_or(text.clone(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_one_line_and_name_what_went_wrong() {
        let status = |code: u16, message: &str| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                reason: "Forbidden".into(),
                message: message.into(),
                ..Default::default()
            }))
        };
        assert_eq!(Failure::of(&status(410, "too old")), Failure::Gone);
        assert_eq!(
            Failure::of(&status(403, "pods is forbidden:\nUser \"x\"")),
            Failure::Request("403 Forbidden: pods is forbidden: User \"x\"".into())
        );
        let cut = kube::Error::ReadEvents(std::io::Error::other(Refused::Truncated(12)));
        assert_eq!(Failure::of(&cut).to_string(), "the watch stream ended inside an event (12 bytes of it read)");
        let big = kube::Error::ReadEvents(std::io::Error::other(Refused::EventTooLarge(16)));
        assert_eq!(Failure::of(&big).to_string(), "a watch event is larger than 16 bytes (--max-event-size)");
        assert!(Failure::Gone.relists() && Failure::TooManyObjects(3).relists());
        // A listing stopped by the store's object cap or the memory budget is that failure.
        assert_eq!(Failure::of(&Refused::TooManyItems(7).into_kube()), Failure::TooManyObjects(7));
        assert_eq!(Failure::of(&Refused::OverBudget.into_kube()), Failure::OverBudget);
        assert!(!Failure::Stalled(Duration::from_secs(35)).relists() && !Failure::ShortWatch.relists());
    }
}
