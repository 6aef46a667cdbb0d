//! Every request to the API server ends: a whole-request deadline (connect to the last byte of
//! the answer), a bound on the bytes of one answer counted while it streams in, and bounds on the
//! pages of one list. A misbehaving server (or a proxy in front of it) that trickles an answer,
//! sends hundreds of MiB or repeats a `continue` token gets one error line, not a hang
//! (docs/design/exit-codes.md, docs/reliability.md).
//!
//! Watch requests (`?watch=true`) are long-lived by design: they get the deadline only until
//! their answer begins, and no bound on their total bytes; instead each event (one line of the
//! stream) is bounded, and a stream that ends inside an event is an error, not an end
//! (`cluster::reflector` restarts them).

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::BoxError;

/// The count of objects the response bound is per: an answer may hold `--max-response-size` for
/// each `PAGE_SIZE` objects counted in it so far. Lists are read in one answer (from the API
/// server's watch cache) and decoded as they arrive, so the bound grows with what they hold;
/// real objects are a few KiB to tens of KiB.
pub const PAGE_SIZE: u32 = 500;

/// The most bytes one answer may have unless `--max-response-size` says otherwise (the flag's
/// default is written in `cli.rs`; a test keeps the two equal), per [`PAGE_SIZE`] objects: 500
/// real Pods or CiliumNodes are a few MiB (500 × 10 KiB), so 128 MiB is 256 KiB per object.
pub const MAX_RESPONSE_BYTES: u64 = 128 << 20;

/// The most pages one list may take: 1,000,000 objects at 500 per page.
pub const MAX_PAGES: usize = 2_000;

/// The most objects one list may hold (more than five times the pods of the largest clusters
/// Kubernetes supports, 150,000).
pub const MAX_ITEMS: usize = 1_000_000;

/// Why the plugin gave up on a request. The message is completed by `Connection::request_failed`
/// with the verb, resource and server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The answer had not begun by the deadline.
    #[error("no answer within {0:?}")]
    NoAnswer(Duration),
    /// The answer began but its last byte had not arrived by the deadline.
    #[error("the answer did not end within {deadline:?} ({read} bytes read)")]
    Unfinished { deadline: Duration, read: u64 },
    /// The answer grew past [`MAX_RESPONSE_BYTES`].
    #[error("the answer is larger than {0} bytes")]
    TooLarge(u64),
    /// A page's `continue` token was one an earlier page had already sent.
    #[error("page {page} repeated an earlier continue token")]
    RepeatedToken { page: usize },
    /// The list went on past [`MAX_PAGES`].
    #[error("more than {0} pages")]
    TooManyPages(usize),
    /// The list held more than its object cap ([`MAX_ITEMS`] unless told otherwise).
    #[error("more than {0} objects")]
    TooManyItems(usize),
    /// The list's reading was stopped because the process is over its memory budget.
    #[error("the process is over its memory budget (--memory-budget)")]
    OverBudget,
    /// One event of a watch stream grew past the event bound without ending.
    #[error("a watch event is larger than {0} bytes (--max-event-size)")]
    EventTooLarge(u64),
    /// A watch stream sent nothing for a whole read timeout (`--request-timeout`): a stall, which
    /// the client library would otherwise take for the end of the stream.
    #[error("the watch stream sent nothing within the read timeout (--request-timeout)")]
    Silent,
    /// A watch stream ended inside an event: the connection was cut, not closed by the server.
    #[error("the watch stream ended inside an event ({0} bytes of it read)")]
    Truncated(u64),
}

/// The most bytes one watch event may have unless `--max-event-size` says otherwise. An object
/// is at most 1.5 MiB in etcd (the API server refuses larger writes); its JSON in an event a few
/// times that at worst.
pub const MAX_EVENT_BYTES: u64 = 16 << 20;

impl Refused {
    /// As the error a kube call returns, so that callers keep one error path.
    pub fn into_kube(self) -> kube::Error {
        kube::Error::Service(Box::new(self))
    }

    /// The `Refused` somewhere in an error's chain of causes.
    pub fn find<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e Refused> {
        let mut next = Some(error);
        while let Some(error) = next {
            if let Some(refused) = error.downcast_ref::<Refused>() {
                return Some(refused);
            }
            next = error.source();
        }
        None
    }
}

/// The pages of one list so far: refuses a repeated `continue` token (the list would never end)
/// and a list past [`MAX_PAGES`] or its object cap ([`MAX_ITEMS`] unless told otherwise).
pub struct Pagination {
    tokens: HashSet<String>,
    pages: usize,
    items: usize,
    max_items: usize,
}

impl Default for Pagination {
    fn default() -> Self {
        Pagination::capped(MAX_ITEMS)
    }
}

impl Pagination {
    /// A list of at most `max_items` objects.
    pub fn capped(max_items: usize) -> Pagination {
        Pagination { tokens: HashSet::new(), pages: 0, items: 0, max_items }
    }

    /// How many more objects the list may hold (its cap less those of the pages so far): the
    /// next page is refused while it is read once it holds more.
    pub fn items_left(&self) -> usize {
        self.max_items.saturating_sub(self.items)
    }

    /// The most objects the list may hold.
    pub fn max_items(&self) -> usize {
        self.max_items
    }

    /// Records a page of `items` objects that ended with `token` (`None` or empty: the last
    /// page); `Ok(Some(token))` when another page is to be asked for.
    pub fn next<'t>(&mut self, items: usize, token: Option<&'t str>) -> Result<Option<&'t str>, Refused> {
        self.pages += 1;
        self.items += items;
        if self.items > self.max_items {
            return Err(Refused::TooManyItems(self.max_items));
        }
        let Some(token) = token.filter(|t| !t.is_empty()) else { return Ok(None) };
        if !self.tokens.insert(token.to_string()) {
            return Err(Refused::RepeatedToken { page: self.pages });
        }
        if self.pages >= MAX_PAGES {
            return Err(Refused::TooManyPages(MAX_PAGES));
        }
        Ok(Some(token))
    }
}

/// A tower layer bounding every request of a client: `deadline` from the call to the last byte
/// of the answer (`None`: none), at most `max_bytes` per answer.
#[derive(Clone, Copy, Debug)]
pub struct BoundLayer {
    pub deadline: Option<Duration>,
    pub max_bytes: u64,
    /// The most bytes one event (line) of a watch stream may have.
    pub max_event_bytes: u64,
}

impl<S> tower::Layer<S> for BoundLayer {
    type Service = Bound<S>;
    fn layer(&self, inner: S) -> Bound<S> {
        Bound { inner, bounds: *self }
    }
}

#[derive(Clone)]
pub struct Bound<S> {
    inner: S,
    bounds: BoundLayer,
}

/// A request extension marking a whole list: one unpaged answer decoded as it arrives
/// (`cluster::list`). Its answer has no bound on its total bytes but one on its bytes per object,
/// [`BoundLayer::max_bytes`] per [`PAGE_SIZE`] objects the decoder has counted in `items` so far
/// (the bound of the pages it replaces), and its deadline is extended by one deadline per
/// `max_bytes` received.
#[derive(Clone, Debug, Default)]
pub struct WholeList {
    pub items: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl WholeList {
    /// The most bytes the answer may have read once `items` objects were decoded.
    fn allowed(&self, max_bytes: u64) -> u64 {
        let pages = self.items.load(std::sync::atomic::Ordering::Relaxed) as u64 / u64::from(PAGE_SIZE) + 1;
        pages.saturating_mul(max_bytes)
    }
}

/// A watch request: its answer is a stream that is meant to last.
fn is_watch(uri: &http::Uri) -> bool {
    uri.query().is_some_and(|query| query.split('&').any(|pair| pair == "watch=true" || pair == "watch=1"))
}

impl<S, In, B> tower::Service<Request<In>> for Bound<S>
where
    S: tower::Service<Request<In>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<BoundedBody<B>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<In>) -> Self::Future {
        let watch = is_watch(request.uri());
        let whole = request.extensions().get::<WholeList>().cloned();
        let BoundLayer { deadline, max_bytes, max_event_bytes } = self.bounds;
        let until = deadline.map(|d| (tokio::time::Instant::now() + d, d));
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = match until {
                Some((at, d)) => tokio::time::timeout_at(at, answer).await.map_err(|_| Refused::NoAnswer(d))?,
                None => answer.await,
            }
            .map_err(Into::into)?;
            // A refused watch is answered with one Status, a whole answer like any other's: read
            // as a stream of events, a Status without a final line break was "cut inside an
            // event", and `serve` never learned that its server refuses streaming lists.
            let stream = watch && response.status().is_success();
            let (until, max_bytes, events) =
                if stream { (None, u64::MAX, Some(Events::new(max_event_bytes))) } else { (until, max_bytes, None) };
            Ok(response.map(|inner| BoundedBody {
                inner,
                until: until.map(|(at, d)| (Box::pin(tokio::time::sleep_until(at)), d)),
                max_bytes,
                read: 0,
                events,
                whole,
            }))
        })
    }
}

/// An answer's body that fails once its deadline passes or it grows past its bound, instead of
/// being read to the end.
pub struct BoundedBody<B> {
    inner: B,
    until: Option<(Pin<Box<tokio::time::Sleep>>, Duration)>,
    max_bytes: u64,
    read: u64,
    /// For a watch stream: the event being read.
    events: Option<Events>,
    /// For a whole list: its decoder's count (`max_bytes` is then its bound per page of objects,
    /// and the bytes that extend its deadline by one).
    whole: Option<WholeList>,
}

/// A read that timed out somewhere in an error's chain of causes.
fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut) {
            return true;
        }
        next = error.source();
    }
    false
}

/// The bytes of the event a watch stream is in the middle of (since its last line break).
#[derive(Clone, Copy, Debug)]
struct Events {
    max: u64,
    open: u64,
}

impl Events {
    fn new(max: u64) -> Events {
        Events { max, open: 0 }
    }

    /// Takes the next bytes of the stream; refuses them when an event grows past the bound.
    fn take(&mut self, data: &[u8]) -> Result<(), Refused> {
        let mut start = 0;
        for line_break in memchr::memchr_iter(b'\n', data) {
            if self.open + (line_break - start) as u64 > self.max {
                return Err(Refused::EventTooLarge(self.max));
            }
            (self.open, start) = (0, line_break + 1);
        }
        self.open += (data.len() - start) as u64;
        if self.open > self.max {
            return Err(Refused::EventTooLarge(self.max));
        }
        Ok(())
    }

    /// The stream ended: only between events is that an end.
    fn end(&self) -> Result<(), Refused> {
        if self.open > 0 { Err(Refused::Truncated(self.open)) } else { Ok(()) }
    }
}

impl<B> Body for BoundedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some((sleep, deadline)) = &mut this.until
            && sleep.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Some(Err(Box::new(Refused::Unfinished { deadline: *deadline, read: this.read }))));
        }
        let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(e))) => {
                let e = e.into();
                if this.events.is_some() && timed_out(e.as_ref()) {
                    return Poll::Ready(Some(Err(Box::new(Refused::Silent))));
                }
                return Poll::Ready(Some(Err(e)));
            }
            Poll::Ready(None) => {
                return match this.events.take().map(|events| events.end()) {
                    Some(Err(refused)) => Poll::Ready(Some(Err(Box::new(refused)))),
                    _ => Poll::Ready(None),
                };
            }
            Poll::Pending => return Poll::Pending,
        };
        if let (Some(events), Some(data)) = (&mut this.events, frame.data_ref())
            && let Err(refused) = events.take(data)
        {
            this.events = None;
            return Poll::Ready(Some(Err(Box::new(refused))));
        }
        let before = this.read;
        this.read += frame.data_ref().map_or(0, |data| data.len() as u64);
        if let Some(list) = &this.whole {
            if this.read > list.allowed(this.max_bytes) {
                return Poll::Ready(Some(Err(Box::new(Refused::TooLarge(this.max_bytes)))));
            }
            // A long list may take one deadline per page's worth of bytes, as its pages did.
            let per_page = this.max_bytes.max(1);
            if let Some((sleep, deadline)) = &mut this.until
                && before / per_page < this.read / per_page
            {
                let extended = sleep.deadline() + *deadline;
                sleep.as_mut().reset(extended);
            }
        } else if this.read > this.max_bytes {
            return Poll::Ready(Some(Err(Box::new(Refused::TooLarge(this.max_bytes)))));
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pagination_follows_new_tokens_and_ends_on_the_last_page() {
        let mut pages = Pagination::default();
        assert_eq!(pages.next(500, Some("a")), Ok(Some("a")));
        assert_eq!(pages.next(500, Some("b")), Ok(Some("b")));
        assert_eq!(pages.next(3, Some("")), Ok(None));
        assert_eq!(Pagination::default().next(0, None), Ok(None));
    }

    #[test]
    fn pagination_refuses_a_repeated_token() {
        let mut pages = Pagination::default();
        assert_eq!(pages.next(1, Some("a")), Ok(Some("a")));
        assert_eq!(pages.next(1, Some("b")), Ok(Some("b")));
        assert_eq!(pages.next(1, Some("a")), Err(Refused::RepeatedToken { page: 3 }));
    }

    #[test]
    fn pagination_refuses_endless_and_huge_lists() {
        let mut pages = Pagination::default();
        let tokens: Vec<String> = (0..MAX_PAGES).map(|n| n.to_string()).collect();
        for token in &tokens[..MAX_PAGES - 1] {
            assert_eq!(pages.next(0, Some(token)), Ok(Some(token.as_str())));
        }
        assert_eq!(pages.next(0, Some(&tokens[MAX_PAGES - 1])), Err(Refused::TooManyPages(MAX_PAGES)));
        let mut pages = Pagination::default();
        assert_eq!(pages.next(MAX_ITEMS, None), Ok(None));
        let mut pages_over = Pagination::default();
        assert_eq!(pages_over.next(MAX_ITEMS, Some("a")), Ok(Some("a")));
        assert_eq!(pages_over.next(1, None), Err(Refused::TooManyItems(MAX_ITEMS)));
    }

    /// A body of `frames` frames of 1 MiB each.
    struct Frames(usize);

    impl Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            if self.0 == 0 {
                return Poll::Ready(None);
            }
            self.0 -= 1;
            Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![b'x'; 1 << 20])))))
        }
    }

    /// Reads a body to its end: the bytes read, or the error that stopped it.
    fn read_all(mut body: BoundedBody<Frames>) -> Result<u64, BoxError> {
        let waker = std::task::Waker::noop();
        let mut read = 0;
        loop {
            match Pin::new(&mut body).poll_frame(&mut Context::from_waker(waker)) {
                Poll::Ready(Some(frame)) => read += frame?.into_data().map_or(0, |d| d.len() as u64),
                Poll::Ready(None) => return Ok(read),
                Poll::Pending => unreachable!("the frames are all there"),
            }
        }
    }

    #[test]
    fn an_answer_is_cut_at_its_bound_while_it_streams() {
        let bounded = |frames, max_bytes| BoundedBody { inner: Frames(frames), until: None, max_bytes, read: 0, events: None, whole: None };
        assert_eq!(read_all(bounded(3, 3 << 20)).unwrap(), 3 << 20, "the bound itself is allowed");
        let error = read_all(bounded(1000, 3 << 20)).unwrap_err();
        assert_eq!(Refused::find(error.as_ref()), Some(&Refused::TooLarge(3 << 20)));
    }

    /// A whole list may hold the bound once per page's worth of objects its decoder has counted.
    #[test]
    fn a_whole_list_is_bounded_per_page_of_objects_counted() {
        let whole = |frames, counted: usize| {
            let list = WholeList::default();
            list.items.store(counted, std::sync::atomic::Ordering::Relaxed);
            BoundedBody { inner: Frames(frames), until: None, max_bytes: 3 << 20, read: 0, events: None, whole: Some(list) }
        };
        let error = read_all(whole(4, 0)).unwrap_err();
        assert_eq!(Refused::find(error.as_ref()), Some(&Refused::TooLarge(3 << 20)), "no object counted: one page's bound");
        assert_eq!(read_all(whole(3, PAGE_SIZE as usize - 1)).unwrap(), 3 << 20);
        assert_eq!(read_all(whole(6, PAGE_SIZE as usize)).unwrap(), 6 << 20, "a page's worth of objects: twice the bound");
        assert!(read_all(whole(7, 2 * PAGE_SIZE as usize - 1)).is_err());
    }

    /// The deadline of a whole list grows by one deadline per bound's worth of bytes received.
    #[tokio::test]
    async fn a_whole_list_has_one_deadline_per_page_of_bytes() {
        let deadline = Duration::from_secs(30);
        let list = WholeList::default();
        list.items.store(usize::MAX / 2, std::sync::atomic::Ordering::Relaxed);
        let at = tokio::time::Instant::now() + deadline;
        let mut body = BoundedBody {
            inner: Frames(8),
            until: Some((Box::pin(tokio::time::sleep_until(at)), deadline)),
            max_bytes: 2 << 20,
            read: 0,
            events: None,
            whole: Some(list),
        };
        assert_eq!(read_all_now(&mut body), 8 << 20);
        let until = body.until.as_ref().unwrap().0.deadline();
        assert_eq!(until, at + 4 * deadline, "8 MiB at 2 MiB per deadline: four more");
    }

    fn read_all_now(body: &mut BoundedBody<Frames>) -> u64 {
        let waker = std::task::Waker::noop();
        let mut read = 0;
        while let Poll::Ready(Some(frame)) = Pin::new(&mut *body).poll_frame(&mut Context::from_waker(waker)) {
            read += frame.unwrap().into_data().map_or(0, |d| d.len() as u64);
        }
        read
    }

    #[test]
    fn a_watch_event_is_bounded_and_a_stream_cut_inside_one_is_an_error() {
        let mut events = Events::new(10);
        assert_eq!(events.take(b"{\"a\":1}\n{\"b\""), Ok(()), "a whole event and the start of the next");
        assert_eq!(events.end(), Err(Refused::Truncated(4)), "the stream ended inside the second");
        assert_eq!(events.take(b":2}\n"), Ok(()));
        assert_eq!(events.end(), Ok(()), "between events the stream may end");
        assert_eq!(events.take(b"0123456789"), Ok(()), "the bound itself is allowed");
        assert_eq!(events.take(b"x"), Err(Refused::EventTooLarge(10)), "grown past the bound over two frames");
        let mut events = Events::new(10);
        assert_eq!(events.take(b"01234567890123\n{}\n"), Err(Refused::EventTooLarge(10)), "a long line inside one frame");
        let mut events = Events::new(10);
        let many_short = b"{}\n".repeat(100);
        assert_eq!(events.take(&many_short), Ok(()), "many short events in one frame");
    }

    #[test]
    fn only_watch_requests_are_watches() {
        let uri = |s: &str| s.parse::<http::Uri>().unwrap();
        assert!(is_watch(&uri("/api/v1/pods?watch=true&resourceVersion=5")));
        assert!(is_watch(&uri("/api/v1/pods?limit=5&watch=1")));
        assert!(!is_watch(&uri("/api/v1/pods?limit=500")));
        assert!(!is_watch(&uri("/api/v1/pods?fieldSelector=watch%3Dtrue")));
    }
}
