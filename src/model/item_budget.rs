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
    left: Cell<usize>,
    over: Cell<bool>,
    /// Where the items read so far are counted for another thread too.
    counted: Option<Arc<AtomicUsize>>,
}

impl ItemBudget {
    pub fn new(items: usize) -> ItemBudget {
        ItemBudget { left: Cell::new(items), over: Cell::new(false), counted: None }
    }

    /// Also counts each item read in `counted` (a whole list's byte bound grows with it).
    pub fn counted_in(self, counted: Arc<AtomicUsize>) -> ItemBudget {
        ItemBudget { counted: Some(counted), ..self }
    }

    /// Whether the reading failed because a list held more items than the budget.
    pub fn exceeded(&self) -> bool {
        self.over.get()
    }

    /// Counts one item; an error past the budget.
    pub(super) fn take<E: de::Error>(&self) -> Result<(), E> {
        let Some(left) = self.left.get().checked_sub(1) else {
            self.over.set(true);
            return Err(E::custom("more list items than the object cap"));
        };
        self.left.set(left);
        if let Some(counted) = &self.counted {
            counted.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}
