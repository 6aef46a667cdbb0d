//! An exact, non-negative count of addresses or blocks.
//!
//! IPv6 pools make counts as large as 2^128 (`::/0`), and a pool may hold several such CIDRs,
//! so `u128` is not enough. `Count` wraps a 256-bit integer and panics rather than wrap if an
//! impossible overflow ever happens: a wrong figure is worse than a crash.

use ruint::aliases::U256;
use serde::{Serialize, Serializer};
use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Mul, Sub};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Count(U256);

impl Count {
    pub const ZERO: Count = Count(U256::ZERO);

    /// 2^exp (exp ≤ 255).
    pub fn pow2(exp: u32) -> Count {
        Count(U256::from(1u8) << exp as usize)
    }

    /// Number of integers in the inclusive range `start..=end` (`start <= end`).
    pub fn span(start: u128, end: u128) -> Count {
        debug_assert!(start <= end);
        Count::from(end - start) + Count::from(1u64)
    }

    pub fn is_zero(self) -> bool {
        self.0.is_zero()
    }

    /// `self - rhs`, or zero when `rhs` is larger (used where a negative value has no meaning).
    pub fn saturating_sub(self, rhs: Count) -> Count {
        Count(self.0.saturating_sub(rhs.0))
    }

    pub fn to_u64(self) -> Option<u64> {
        u64::try_from(self.0).ok()
    }

    pub fn to_u128(self) -> Option<u128> {
        u128::try_from(self.0).ok()
    }

    /// Lossy conversion for ratios and medians; never used for a reported count.
    pub fn to_f64(self) -> f64 {
        let limbs = self.0.as_limbs();
        limbs.iter().rev().fold(0.0, |acc, &limb| acc * 18_446_744_073_709_551_616.0 + limb as f64)
    }

    /// `self / rhs` rounded down; `None` when `rhs` is zero.
    pub fn checked_div(self, rhs: Count) -> Option<Count> {
        (!rhs.is_zero()).then(|| Count(self.0 / rhs.0))
    }
}

impl From<u64> for Count {
    fn from(value: u64) -> Self {
        Count(U256::from(value))
    }
}

impl From<u128> for Count {
    fn from(value: u128) -> Self {
        Count(U256::from(value))
    }
}

impl From<usize> for Count {
    fn from(value: usize) -> Self {
        Count(U256::from(value))
    }
}

impl Add for Count {
    type Output = Count;
    fn add(self, rhs: Count) -> Count {
        Count(self.0.checked_add(rhs.0).expect("count overflow beyond 2^256"))
    }
}

impl AddAssign for Count {
    fn add_assign(&mut self, rhs: Count) {
        *self = *self + rhs;
    }
}

impl Sub for Count {
    type Output = Count;
    fn sub(self, rhs: Count) -> Count {
        Count(self.0.checked_sub(rhs.0).expect("count underflow: a figure would be negative"))
    }
}

impl Mul for Count {
    type Output = Count;
    fn mul(self, rhs: Count) -> Count {
        Count(self.0.checked_mul(rhs.0).expect("count overflow beyond 2^256"))
    }
}

impl Sum for Count {
    fn sum<I: Iterator<Item = Count>>(iter: I) -> Count {
        iter.fold(Count::ZERO, Add::add)
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// JSON contract (docs/design/json-contract.md): an integer when it fits in u64, else a decimal string.
impl Serialize for Count {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.to_u64() {
            Some(small) => serializer.serialize_u64(small),
            None => serializer.serialize_str(&self.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_ipv6_space_is_exact() {
        let all = Count::pow2(128);
        assert_eq!(all.to_string(), "340282366920938463463374607431768211456");
        assert_eq!(all.to_u128(), None);
        assert_eq!(Count::span(0, u128::MAX), all);
        assert_eq!(serde_json::to_string(&all).unwrap(), "\"340282366920938463463374607431768211456\"");
        assert_eq!(serde_json::to_string(&Count::from(42u64)).unwrap(), "42");
        assert_eq!(serde_json::to_string(&Count::from(u64::MAX)).unwrap(), u64::MAX.to_string());
    }

    #[test]
    fn arithmetic_and_conversions() {
        let a = Count::pow2(64);
        assert_eq!((a - Count::from(1u64)).to_u64(), Some(u64::MAX));
        assert_eq!(a.saturating_sub(a + a), Count::ZERO);
        assert_eq!((a * a).to_string(), Count::pow2(128).to_string());
        assert_eq!(Count::from(10u64).checked_div(Count::from(3u64)), Some(Count::from(3u64)));
        assert_eq!(Count::from(1u64).checked_div(Count::ZERO), None);
        assert_eq!(Count::pow2(70).to_f64(), 2f64.powi(70));
    }

    #[test]
    fn saturating_sub_keeps_a_positive_difference() {
        // 2^64 + 5 - 7 = 2^64 - 2 = u64::MAX - 1; only a larger rhs gives zero.
        let big = Count::pow2(64) + Count::from(5u64);
        assert_eq!(big.saturating_sub(Count::from(7u64)).to_u64(), Some(u64::MAX - 1));
        assert_eq!(Count::from(7u64).saturating_sub(Count::from(7u64)), Count::ZERO);
        assert_eq!(Count::from(3u64).saturating_sub(big), Count::ZERO);
    }

    #[test]
    #[should_panic(expected = "negative")]
    fn negative_results_are_refused() {
        let _ = Count::from(1u64) - Count::from(2u64);
    }
}
