//! NUMA node sets: upstream `pkg/kubelet/cm/topologymanager/bitmask` (v1.35.4).

/// A set of NUMA node ids (upstream `bitmask.BitMask`, 64 nodes at most).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BitMask(pub u64);

/// `NewBitMask`'s and `Add`/`Remove`'s error: a bit outside 0-63.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bit number must be in range 0-63")]
pub struct BitRangeError;

impl BitMask {
    /// `NewBitMask`: ids of 64 and above are dropped (see [`BitMask::try_new`] for
    /// upstream's error).
    pub fn new(bits: &[usize]) -> BitMask {
        BitMask(
            bits.iter()
                .filter(|b| **b < 64)
                .fold(0, |m, b| m | (1u64 << b)),
        )
    }

    /// `NewBitMask` with upstream's error for a bit outside 0-63.
    pub fn try_new(bits: &[usize]) -> Result<BitMask, BitRangeError> {
        let mut m = BitMask::default();
        m.add(bits)?;
        Ok(m)
    }

    /// `Add`: nothing changes when a bit is out of range.
    pub fn add(&mut self, bits: &[usize]) -> Result<(), BitRangeError> {
        let mut mask = self.0;
        for &b in bits {
            if b >= 64 {
                return Err(BitRangeError);
            }
            mask |= 1u64 << b;
        }
        self.0 = mask;
        Ok(())
    }

    /// `Remove`: nothing changes when a bit is out of range.
    pub fn remove(&mut self, bits: &[usize]) -> Result<(), BitRangeError> {
        let mut mask = self.0;
        for &b in bits {
            if b >= 64 {
                return Err(BitRangeError);
            }
            mask &= !(1u64 << b);
        }
        self.0 = mask;
        Ok(())
    }

    /// `And` (in place).
    pub fn and_with(&mut self, masks: &[BitMask]) {
        for m in masks {
            self.0 &= m.0;
        }
    }

    /// `Or` (in place).
    pub fn or_with(&mut self, masks: &[BitMask]) {
        for m in masks {
            self.0 |= m.0;
        }
    }

    /// `Clear`.
    pub fn clear(&mut self) {
        self.0 = 0;
    }

    /// `Fill`.
    pub fn fill(&mut self) {
        self.0 = u64::MAX;
    }

    /// `IsEqual`.
    pub fn is_equal(self, other: BitMask) -> bool {
        self.0 == other.0
    }

    /// `IsEmpty`.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// `IsSet`.
    pub fn is_set(self, bit: usize) -> bool {
        bit < 64 && self.0 & (1u64 << bit) != 0
    }

    /// `AnySet`.
    pub fn any_set(self, bits: &[usize]) -> bool {
        bits.iter().any(|b| self.is_set(*b))
    }

    /// `IsNarrowerThan`: fewer bits set, or as many and a lower value.
    pub fn is_narrower_than(self, other: BitMask) -> bool {
        if self.count() == other.count() {
            return self.is_less_than(other);
        }
        self.count() < other.count()
    }

    /// `IsLessThan`: the lower 64-bit value.
    pub fn is_less_than(self, other: BitMask) -> bool {
        self.0 < other.0
    }

    /// `IsGreaterThan`: the higher 64-bit value.
    pub fn is_greater_than(self, other: BitMask) -> bool {
        self.0 > other.0
    }

    /// `Count`.
    pub fn count(self) -> usize {
        self.0.count_ones() as usize
    }

    /// `GetBits`, ascending.
    pub fn bits(self) -> Vec<usize> {
        (0..64).filter(|b| self.is_set(*b)).collect()
    }
}

/// `bitmask.And`: `first` and-ed with every mask of `masks` (a new mask).
pub fn and(first: BitMask, masks: &[BitMask]) -> BitMask {
    let mut m = first;
    m.and_with(masks);
    m
}

/// `bitmask.Or`: `first` or-ed with every mask of `masks` (a new mask).
pub fn or(first: BitMask, masks: &[BitMask]) -> BitMask {
    let mut m = first;
    m.or_with(masks);
    m
}

impl std::fmt::Display for BitMask {
    /// Upstream's `String`: binary, zero-padded to an even number of digits (at least 2)
    /// covering the value's digits.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const GROUPING: u32 = 2;
        let mut shift = 64 - GROUPING;
        while shift > 0 {
            if self.0 > (1u64 << shift) {
                let width = (shift + GROUPING) as usize;
                return write!(f, "{:0width$b}", self.0);
            }
            shift -= GROUPING;
        }
        write!(f, "{:02b}", self.0)
    }
}

/// `bitmask.IterateBitMasks`: every non-empty subset of `bits`, smallest first.
pub fn iterate_bit_masks(bits: &[usize], callback: &mut dyn FnMut(BitMask)) {
    fn iterate(
        bits: &[usize],
        accum: &mut Vec<usize>,
        size: usize,
        callback: &mut dyn FnMut(BitMask),
    ) {
        if accum.len() == size {
            callback(BitMask::new(accum));
            return;
        }
        for i in 0..bits.len() {
            accum.push(bits[i]);
            iterate(&bits[i + 1..], accum, size, callback);
            accum.pop();
        }
    }
    for size in 1..=bits.len() {
        iterate(bits, &mut Vec::new(), size, callback);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_drops_ids_of_64_and_above_and_bits_are_ascending() {
        let m = BitMask::new(&[3, 0, 64, 1]);
        assert_eq!(m.bits(), vec![0, 1, 3]);
        assert_eq!(m.count(), 3);
        assert!(m.is_set(3) && !m.is_set(2) && !m.is_set(64));
        assert_eq!(m.to_string(), "1011");
    }

    #[test]
    fn iterate_bit_masks_yields_every_subset_smallest_first() {
        let mut seen = Vec::new();
        iterate_bit_masks(&[0, 1, 2], &mut |m| seen.push(m.bits()));
        assert_eq!(
            seen,
            vec![
                vec![0],
                vec![1],
                vec![2],
                vec![0, 1],
                vec![0, 2],
                vec![1, 2],
                vec![0, 1, 2]
            ]
        );
    }

    /// `TestNewBitMask`, `TestAdd`, `TestRemove`: bits outside 0-63 are an error and
    /// change nothing.
    #[test]
    fn add_remove_and_range_errors() {
        assert_eq!(BitMask::default().to_string(), "00");
        assert_eq!(
            BitMask::try_new(&[0]).map(|m| m.to_string()),
            Ok("01".to_owned())
        );
        assert_eq!(
            BitMask::try_new(&[1]).map(|m| m.to_string()),
            Ok("10".to_owned())
        );
        assert_eq!(
            BitMask::try_new(&[0, 1]).map(|m| m.to_string()),
            Ok("11".to_owned())
        );
        assert_eq!(BitMask::try_new(&[64]), Err(BitRangeError));
        let mut m = BitMask::new(&[0]);
        assert_eq!(m.add(&[1, 64]), Err(BitRangeError));
        assert_eq!(m.to_string(), "01");
        m.add(&[1]).unwrap_or_default();
        assert_eq!(m.to_string(), "11");
        assert_eq!(m.remove(&[64]), Err(BitRangeError));
        m.remove(&[0]).unwrap_or_default();
        assert_eq!(m.to_string(), "10");
        m.fill();
        assert_eq!(m.count(), 64);
        m.clear();
        assert!(m.is_empty());
    }

    /// `TestAnd`, `TestOr`, `TestIsEqual`, `TestAnySet`, `TestIsSet`.
    #[test]
    fn and_or_equal_any_set() {
        let m = |b: &[usize]| BitMask::new(b);
        assert_eq!(and(m(&[0, 1]), &[m(&[0, 1])]).to_string(), "11");
        assert_eq!(and(m(&[0, 1]), &[m(&[1])]).to_string(), "10");
        assert_eq!(and(m(&[0]), &[m(&[0, 1])]).to_string(), "01");
        assert_eq!(and(m(&[0]), &[m(&[1])]).to_string(), "00");
        assert_eq!(and(m(&[0, 1]), &[m(&[0]), m(&[1])]).to_string(), "00");
        assert_eq!(or(m(&[0]), &[m(&[1])]).to_string(), "11");
        assert_eq!(or(m(&[]), &[m(&[1]), m(&[0])]).to_string(), "11");
        assert!(m(&[0, 1]).is_equal(m(&[0, 1])) && !m(&[0]).is_equal(m(&[1])));
        assert!(m(&[0]).any_set(&[0, 1]) && !m(&[0]).any_set(&[1, 64, 65]));
        assert!(!m(&[0]).is_set(64));
        assert_eq!(BitMask(5).to_string(), "0101");
        assert_eq!(BitMask(4).to_string(), "100");
    }

    /// `TestIsNarrowerThan`, `TestIsLessThan`, `TestIsGreaterThan`.
    #[test]
    fn narrower_less_greater() {
        let m = |b: &[usize]| BitMask::new(b);
        assert!(m(&[0]).is_narrower_than(m(&[0, 1])));
        assert!(!m(&[0, 1]).is_narrower_than(m(&[0])));
        assert!(m(&[0]).is_narrower_than(m(&[1])));
        assert!(!m(&[1]).is_narrower_than(m(&[0])));
        assert!(m(&[0]).is_less_than(m(&[1])) && !m(&[1]).is_less_than(m(&[0])));
        assert!(m(&[1]).is_greater_than(m(&[0])) && !m(&[0]).is_greater_than(m(&[1])));
        assert!(m(&[0, 1]).is_less_than(m(&[2])));
    }
}
