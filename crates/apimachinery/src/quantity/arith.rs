//! Quantity arithmetic (upstream `Quantity.Add`, `Sub`, `Neg`): exact on the
//! 38-digit mantissa; see [`Quantity::add`] for the out-of-range behaviour.

use std::ops;

use super::{Quantity, digit_count, div_away_from_zero, normalize, pow10};

impl Quantity {
    /// The result format: upstream adopts `y`'s format when the receiver is zero.
    fn sum_format(&self, other: &Quantity) -> super::Format {
        if self.is_zero() {
            other.format
        } else {
            self.format
        }
    }

    /// `self + other`, or `None` when the exact result needs more than 38
    /// significant digits.
    pub fn checked_add(&self, other: &Quantity) -> Option<Quantity> {
        let format = self.sum_format(other);
        if other.is_zero() {
            return Some(Quantity { format, ..*self });
        }
        if self.is_zero() {
            return Some(Quantity { format, ..*other });
        }
        let e = self.exponent.min(other.exponent);
        let a = self
            .mantissa
            .checked_mul(pow10((self.exponent - e).unsigned_abs())?)?;
        let b = other
            .mantissa
            .checked_mul(pow10((other.exponent - e).unsigned_abs())?)?;
        let (mantissa, exponent) = normalize(a.checked_add(b)?, e)?;
        Some(Quantity {
            mantissa,
            exponent,
            format,
        })
    }

    /// `self - other`, or `None` when the exact result needs more than 38
    /// significant digits.
    pub fn checked_sub(&self, other: &Quantity) -> Option<Quantity> {
        self.checked_add(&other.neg())
    }

    /// `self + other` (upstream `Add`). Exact whenever the result fits in 38
    /// significant digits (every realistic resource amount); beyond that the
    /// smaller operand is rounded away from zero at the 37th digit of the
    /// larger one, so the call never fails.
    #[allow(clippy::should_implement_trait)]
    pub fn add(&self, other: &Quantity) -> Quantity {
        self.checked_add(other)
            .unwrap_or_else(|| approximate_add(self, other))
    }

    /// `self - other` (upstream `Sub`); see [`Quantity::add`] for precision.
    #[allow(clippy::should_implement_trait)]
    pub fn sub(&self, other: &Quantity) -> Quantity {
        self.add(&other.neg())
    }

    /// `-self` with the same format (upstream `Neg`).
    #[allow(clippy::should_implement_trait)]
    pub fn neg(&self) -> Quantity {
        Quantity {
            mantissa: -self.mantissa,
            ..*self
        }
    }
}

/// Aligns both operands (rounding away from zero) to an exponent at which the
/// sum has at most 38 digits. Only reached when the exact sum does not fit.
fn approximate_add(a: &Quantity, b: &Quantity) -> Quantity {
    let order = |q: &Quantity| digit_count(q.mantissa.unsigned_abs()).saturating_add(q.exponent);
    let target = order(a).max(order(b)).saturating_add(1).saturating_sub(37);
    let align = |q: &Quantity| {
        if q.exponent >= target {
            pow10((q.exponent - target).unsigned_abs())
                .and_then(|p| q.mantissa.checked_mul(p))
                .unwrap_or(0)
        } else {
            div_away_from_zero(q.mantissa, (target - q.exponent).unsigned_abs())
        }
    };
    let sum = align(a).saturating_add(align(b));
    Quantity::from_parts(sum, target, a.sum_format(b))
}

impl ops::Add for Quantity {
    type Output = Quantity;
    fn add(self, rhs: Quantity) -> Quantity {
        Quantity::add(&self, &rhs)
    }
}

impl ops::Sub for Quantity {
    type Output = Quantity;
    fn sub(self, rhs: Quantity) -> Quantity {
        Quantity::sub(&self, &rhs)
    }
}

impl ops::Neg for Quantity {
    type Output = Quantity;
    fn neg(self) -> Quantity {
        Quantity::neg(&self)
    }
}

impl ops::AddAssign for Quantity {
    fn add_assign(&mut self, rhs: Quantity) {
        *self = Quantity::add(self, &rhs);
    }
}

impl ops::SubAssign for Quantity {
    fn sub_assign(&mut self, rhs: Quantity) {
        *self = Quantity::sub(self, &rhs);
    }
}

impl std::iter::Sum for Quantity {
    fn sum<I: Iterator<Item = Quantity>>(iter: I) -> Quantity {
        iter.fold(Quantity::default(), |acc, q| Quantity::add(&acc, &q))
    }
}
