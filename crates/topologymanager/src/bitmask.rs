//! NUMA node sets: upstream `pkg/kubelet/cm/topologymanager/bitmask` (v1.35.4).

/// A set of NUMA node ids (upstream `bitmask.BitMask`, 64 nodes at most).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BitMask(pub u64);

impl BitMask {
    /// `NewBitMask`: ids of 64 and above are dropped.
    pub fn new(bits: &[usize]) -> BitMask {
        BitMask(
            bits.iter()
                .filter(|b| **b < 64)
                .fold(0, |m, b| m | (1u64 << b)),
        )
    }

    /// `IsSet`.
    pub fn is_set(self, bit: usize) -> bool {
        bit < 64 && self.0 & (1u64 << bit) != 0
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

impl std::fmt::Display for BitMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Upstream's String: the mask as a 64-digit binary number.
        write!(f, "{:064b}", self.0)
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
        assert_eq!(m.to_string(), format!("{}1011", "0".repeat(60)));
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
}
