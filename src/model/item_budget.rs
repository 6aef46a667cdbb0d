//! How many list items a reading may still build ([`ItemBudget`]): a live list's object cap,
//! counted while the list is read (by `slim` or the protobuf reader), before the items past it are
//! built; and a switch that stops the reading when the process is over its memory budget.

use serde::de;
use serde_json::Value;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A list reading that counts the items of lists as they are read and fails at once when there
/// are more than its cap (a live list's object cap, `cluster::limits::Pagination`) or when its
/// `halt` switch is on, before the rest of them are built.
pub struct ItemBudget {
    cap: usize,
    /// The items read so far, shared: a whole list's byte bound grows with it on another thread.
    taken: Arc<AtomicUsize>,
    over: Cell<Option<Over>>,
    /// Live lists: items that are no object with a name are counted here and dropped as they are
    /// read, never kept (a million `{}` items would otherwise hold 80 MB of empty maps).
    nameless: Option<Cell<usize>>,
    /// Set while the process is over its memory budget (`serve --memory-budget`).
    halt: Option<&'static AtomicBool>,
}

/// Why a reading stopped before the end of its list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    /// The list held more items than the cap.
    Items,
    /// The `halt` switch was on.
    Halted,
}

impl ItemBudget {
    pub fn new(items: usize) -> ItemBudget {
        ItemBudget { cap: items, taken: Arc::default(), over: Cell::new(None), nameless: None, halt: None }
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

    /// Stops the reading at the next item while `halt` is set.
    pub fn halted_by(self, halt: Option<&'static AtomicBool>) -> ItemBudget {
        ItemBudget { halt, ..self }
    }

    /// How many items were dropped for having no name.
    pub fn nameless(&self) -> usize {
        self.nameless.as_ref().map_or(0, Cell::get)
    }

    /// Why the reading failed, when it failed for its budget.
    pub fn over(&self) -> Option<Over> {
        self.over.get()
    }

    /// Counts one item; an error past the cap or while halted.
    pub fn count(&self) -> Result<(), Over> {
        let taken = self.taken.load(Ordering::Relaxed);
        let over = if taken == self.cap {
            Some(Over::Items)
        } else if self.halt.is_some_and(|halt| halt.load(Ordering::Relaxed)) {
            Some(Over::Halted)
        } else {
            None
        };
        if let Some(over) = over {
            self.over.set(Some(over));
            return Err(over);
        }
        self.taken.store(taken + 1, Ordering::Relaxed);
        Ok(())
    }

    /// [`ItemBudget::count`] as a deserializer's error.
    pub(super) fn take<E: de::Error>(&self) -> Result<(), E> {
        self.count().map_err(|over| match over {
            Over::Items => E::custom("more list items than the object cap"),
            Over::Halted => E::custom("the reading was stopped (memory budget)"),
        })
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
    // `get`, not `pointer`: a pointer copies each of its tokens to unescape it (issue 44's profile).
    item.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).is_some_and(|name| !name.is_empty())
}
