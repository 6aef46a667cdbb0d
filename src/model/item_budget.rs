//! How many list items a reading may still build ([`ItemBudget`]): a live list's object cap,
//! counted while `slim` reads the list, before the items past it are built.

use serde::de;
use serde_json::Value;
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
    /// Live lists: items that are no object with a name are counted here and dropped as they are
    /// read, never kept (a million `{}` items would otherwise hold 80 MB of empty maps).
    nameless: Option<Cell<usize>>,
}

impl ItemBudget {
    pub fn new(items: usize) -> ItemBudget {
        ItemBudget { cap: items, taken: Arc::default(), over: Cell::new(false), nameless: None }
    }

    /// Counts the items read in `counted` (from zero) instead of a count of its own.
    pub fn counted_in(self, counted: Arc<AtomicUsize>) -> ItemBudget {
        ItemBudget { taken: counted, ..self }
    }

    /// Drops the items of lists that are no object with a `metadata.name` ([`has_name`]),
    /// counting them ([`ItemBudget::nameless`]).
    pub fn dropping_nameless(self) -> ItemBudget {
        ItemBudget { nameless: Some(Cell::new(0)), ..self }
    }

    /// How many items were dropped for having no name.
    pub fn nameless(&self) -> usize {
        self.nameless.as_ref().map_or(0, Cell::get)
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

    /// Whether a list's `item` is kept: always, unless nameless items are dropped (and counted).
    pub(super) fn keeps(&self, item: &Value) -> bool {
        match &self.nameless {
            Some(dropped) if !has_name(item) => {
                dropped.set(dropped.get() + 1);
                false
            }
            _ => true,
        }
    }
}

/// Whether `item` is an object with a non-empty `metadata.name`: what a live list's item needs to
/// be told apart from the others.
pub fn has_name(item: &Value) -> bool {
    item.pointer("/metadata/name").and_then(Value::as_str).is_some_and(|name| !name.is_empty())
}
