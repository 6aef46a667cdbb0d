//! The watch store of Pods and CiliumEndpoints (`serve`, `usage --watch`): each object kept once,
//! as the model's struct, under a 128-bit hash of its namespace and name. kube's reflector store
//! kept, per object, an `Arc` of the whole `ObjectMeta` (about 330 bytes however empty) beside the
//! struct, and a key with the name, namespace and resourceVersion copied again: about 1 kB per pod
//! and its endpoint at 150,000 pods (docs/performance.md, "Memory per pod"). The reflector needs
//! neither: it resumes from the version of the last event, not of a stored object.

use super::reflector::Sink;
use kube::runtime::watcher::Event;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};

/// An object as the API server sends it, and what the store keeps of it.
pub trait Slim: Send + 'static {
    type Item: Clone + Send + 'static;
    /// Its namespace (empty for a cluster-scoped object) and name.
    fn names(&self) -> (&str, &str);
    fn into_item(self) -> Self::Item;
}

/// Namespace and name as one 128-bit key: two SipHashes with fixed keys, so that two objects of a
/// store (at most `--max-watch-objects`) share a key with a probability below 10⁻²⁷.
pub fn key(namespace: &str, name: &str) -> u128 {
    let half = |salt: u8| {
        let mut hasher = DefaultHasher::new();
        salt.hash(&mut hasher);
        namespace.hash(&mut hasher);
        name.hash(&mut hasher);
        hasher.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}

struct State<T> {
    objects: HashMap<u128, T>,
    /// A listing under way, swapped in when complete.
    listing: Option<HashMap<u128, T>>,
}

/// The store: written by its follow, read by the frames (one thread; the lock is never contended).
pub struct SlimStore<K: Slim> {
    state: Arc<Mutex<State<K::Item>>>,
    kind: PhantomData<fn(K)>,
}

impl<K: Slim> Clone for SlimStore<K> {
    fn clone(&self) -> Self {
        SlimStore { state: self.state.clone(), kind: PhantomData }
    }
}

impl<K: Slim> Default for SlimStore<K> {
    fn default() -> Self {
        SlimStore { state: Arc::new(Mutex::new(State { objects: HashMap::new(), listing: None })), kind: PhantomData }
    }
}

impl<K: Slim> SlimStore<K> {
    fn state(&self) -> MutexGuard<'_, State<K::Item>> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The stored objects, in no particular order.
    pub fn items(&self) -> Vec<K::Item> {
        self.state().objects.values().cloned().collect()
    }
}

impl<K: Slim> Sink<K> for SlimStore<K> {
    fn apply(&mut self, event: Event<K>) {
        let mut state = self.state();
        let keyed = |object: K| {
            let (namespace, name) = object.names();
            (key(namespace, name), object.into_item())
        };
        match event {
            Event::Init => state.listing = Some(HashMap::new()),
            Event::InitApply(object) => {
                let (key, item) = keyed(object);
                state.listing.get_or_insert_default().insert(key, item);
            }
            Event::InitDone => state.objects = state.listing.take().unwrap_or_default(),
            Event::Apply(object) => {
                let (key, item) = keyed(object);
                state.objects.insert(key, item);
            }
            Event::Delete(object) => {
                let (namespace, name) = object.names();
                state.objects.remove(&key(namespace, name));
            }
        }
    }

    fn objects(&self) -> usize {
        self.state().objects.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Named(&'static str, &'static str, u32);

    impl Slim for Named {
        type Item = u32;
        fn names(&self) -> (&str, &str) {
            (self.0, self.1)
        }
        fn into_item(self) -> u32 {
            self.2
        }
    }

    fn sorted(store: &SlimStore<Named>) -> Vec<u32> {
        let mut items = store.items();
        items.sort();
        items
    }

    #[test]
    fn a_listing_replaces_the_store_when_done_and_events_apply_by_namespace_and_name() {
        let mut store = SlimStore::<Named>::default();
        store.apply(Event::Apply(Named("a", "web", 1)));
        store.apply(Event::Apply(Named("b", "web", 2)));
        store.apply(Event::Apply(Named("a", "web", 3)));
        assert_eq!(sorted(&store), [2, 3], "the same namespace and name is one object");
        store.apply(Event::Init);
        store.apply(Event::InitApply(Named("c", "db", 4)));
        assert_eq!(sorted(&store), [2, 3], "a listing under way is not visible");
        store.apply(Event::InitDone);
        assert_eq!(sorted(&store), [4]);
        store.apply(Event::Delete(Named("c", "db", 0)));
        store.apply(Event::Delete(Named("c", "missing", 0)));
        assert_eq!(store.objects(), 0);
        store.apply(Event::Apply(Named("x", "y", 5)));
        store.apply(Event::Init);
        store.apply(Event::InitDone);
        assert_eq!(store.objects(), 0, "an empty listing empties the store (a store let go at its bound)");
        assert_ne!(key("ab", "c"), key("a", "bc"));
    }
}
