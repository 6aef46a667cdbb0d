//! Cells the usage tables share: a count that may be unknown.

use super::super::human;
use crate::allocator::Count;

pub(super) fn opt(count: Option<impl Into<Count>>) -> String {
    count.map_or_else(|| "?".to_string(), |count| human(count.into()))
}
