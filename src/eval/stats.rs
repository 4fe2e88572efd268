//! Pass statistics over repeated attempts: pass rate, pass@k and pass^k.
//!
//! With `n` attempts of which `c` passed, pass@k is the chance that at least
//! one of `k` attempts drawn without replacement passes (the unbiased
//! estimator of the Codex paper, `1 - C(n-c, k) / C(n, k)`), and pass^k the
//! chance that all `k` pass (`C(c, k) / C(n, k)`). With `k = n` they are
//! "any attempt passed" and "every attempt passed".

/// `C(n, k)` as a float; 0 when `k > n`.
fn choose(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

/// Chance that at least one of `k` of the `n` attempts passed.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> f64 {
    if n == 0 || k == 0 {
        return 0.0;
    }
    let k = k.min(n);
    if n - c.min(n) < k {
        return 1.0;
    }
    1.0 - choose(n - c, k) / choose(n, k)
}

/// Chance that all `k` of the `n` attempts passed.
pub fn pass_pow_k(n: u32, c: u32, k: u32) -> f64 {
    if n == 0 || k == 0 {
        return 0.0;
    }
    let k = k.min(n);
    choose(c.min(n), k) / choose(n, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(pass_at_k(5, 0, 5), 0.0);
        assert_eq!(pass_at_k(5, 1, 5), 1.0);
        assert!((pass_at_k(5, 2, 1) - 0.4).abs() < 1e-9);
        assert!((pass_at_k(4, 2, 2) - (1.0 - 1.0 / 6.0)).abs() < 1e-9);
        assert_eq!(pass_pow_k(3, 3, 3), 1.0);
        assert_eq!(pass_pow_k(3, 2, 3), 0.0);
        assert!((pass_pow_k(4, 2, 2) - 1.0 / 6.0).abs() < 1e-9);
        assert_eq!(pass_at_k(0, 0, 1), 0.0);
    }
}
