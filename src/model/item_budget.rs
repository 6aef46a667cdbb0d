//! How many list items a reading may still build ([`ItemBudget`]): a live list's object cap,
//! counted while `slim` reads the list, before the items past it are built.

use serde::de;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A [`super::slim::Slim`] reading that counts the items of lists as they are read and fails at once when
/// there are more than `left` (a live list's object cap, `source::limits::Pagination`), before the
/// rest of them are built.
pub struct ItemBudget {
    cap: usize,
    /// The items read so far, shared: a whole list's byte bound grows with it on another thread.
    taken: Arc<AtomicUsize>,
    over: Cell<bool>,
}

impl ItemBudget {
    pub fn new(items: usize) -> ItemBudget {
        ItemBudget { cap: items, taken: Arc::default(), over: Cell::new(false) }
    }

    /// Counts the items read in `counted` (from zero) instead of a count of its own.
    pub fn counted_in(self, counted: Arc<AtomicUsize>) -> ItemBudget {
        ItemBudget { taken: counted, ..self }
    }

    /// Whether the reading failed because a list held more items than the budget.
    pub fn exceeded(&self) -> bool {
        self.over.get()
    }

    /// Counts one item; an error past the budget.
    pub(super) fn take<E: de::Error>(&self) -> Result<(), E> {
        let taken = self.taken.load(Ordering::Relaxed);
        if taken == self.cap {
            self.over.set(true);
            return Err(E::custom("more list items than the object cap"));
        }
        self.taken.store(taken + 1, Ordering::Relaxed);
        Ok(())
    }
}
