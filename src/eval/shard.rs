//! `--shard I/N`: a deterministic, balanced slice of the cases, the same on
//! every machine, so a CI matrix of N jobs runs every case exactly once.
//!
//! Cases are dealt round-robin in suite-file order (suites in the order
//! given): case `j` goes to shard `j mod N + 1`, so shard sizes differ by at
//! most one and no shard depends on timing or hashing.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based.
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Positions (0-based, in order) of the items of `len` that fall in this shard.
    pub fn select(&self, len: usize) -> Vec<usize> {
        (0..len)
            .filter(|j| j % self.count + 1 == self.index)
            .collect()
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A `--shard` value that is not `I/N` with `1 <= I <= N`.
#[derive(Debug, thiserror::Error)]
#[error("`{text}` is not a shard; expected I/N with 1 <= I <= N, e.g. 2/3")]
pub struct NotAShard {
    pub text: String,
}

impl FromStr for Shard {
    type Err = NotAShard;

    fn from_str(text: &str) -> Result<Shard, NotAShard> {
        let bad = || NotAShard {
            text: text.to_string(),
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses() {
        assert_eq!(
            "2/3".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 3 }
        );
        assert!("0/3".parse::<Shard>().is_err());
        assert!("4/3".parse::<Shard>().is_err());
        assert!("3".parse::<Shard>().is_err());
        assert!("1/0".parse::<Shard>().is_err());
    }

    proptest! {
        /// Every case lands in exactly one shard, and shard sizes differ by at most one.
        #[test]
        fn shards_partition_and_balance(len in 0usize..200, count in 1usize..20) {
            let mut seen = vec![0u32; len];
            let mut sizes = Vec::new();
            for index in 1..=count {
                let picked = Shard { index, count }.select(len);
                prop_assert!(picked.windows(2).all(|w| w[0] < w[1]));
                for j in &picked {
                    seen[*j] += 1;
                }
                sizes.push(picked.len());
            }
            prop_assert!(seen.iter().all(|&n| n == 1));
            let max = sizes.iter().max().copied().unwrap_or(0);
            let min = sizes.iter().min().copied().unwrap_or(0);
            prop_assert!(max - min <= 1);
        }
    }
}
