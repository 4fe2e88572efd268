//! Pass statistics over repeated attempts: pass rate, pass@k and pass^k.
//!
//! With `n` attempts of which `c` passed, pass@k is the chance that at least
//! one of `k` attempts drawn without replacement passes (the unbiased
//! estimator of the Codex paper, `1 - C(n-c, k) / C(n, k)`), and pass^k the
//! chance that all `k` pass (`C(c, k) / C(n, k)`). With `k = n` they are
//! "any attempt passed" and "every attempt passed".

/// `C(a, k) / C(n, k)` for `a <= n`, as the product of `(a - i) / (n - i)`:
/// each factor is at most 1, so it neither overflows nor turns into
/// `inf / inf` for many attempts, as the two binomials would.
fn ratio(a: u32, n: u32, k: u32) -> f64 {
    if k > a {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * f64::from(a - i) / f64::from(n - i))
}

/// Chance that at least one of `k` of the `n` attempts passed.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> f64 {
    if n == 0 || k == 0 {
        return 0.0;
    }
    let k = k.min(n);
    1.0 - ratio(n - c.min(n), n, k)
}

/// Chance that all `k` of the `n` attempts passed.
pub fn pass_pow_k(n: u32, c: u32, k: u32) -> f64 {
    if n == 0 || k == 0 {
        return 0.0;
    }
    ratio(c.min(n), n, k.min(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(
        clippy::float_cmp,
        reason = "0 and 1 come out exact: no cases passed, or every draw holds a pass"
    )]
    fn known_values() {
        assert_eq!(pass_at_k(5, 0, 5), 0.0);
        assert_eq!(pass_at_k(5, 1, 5), 1.0);
        assert!((pass_at_k(5, 2, 1) - 0.4).abs() < 1e-9);
        assert!((pass_at_k(4, 2, 2) - (1.0 - 1.0 / 6.0)).abs() < 1e-9);
        assert_eq!(pass_pow_k(3, 3, 3), 1.0);
        assert_eq!(pass_pow_k(3, 2, 3), 0.0);
        assert!((pass_pow_k(4, 2, 2) - 1.0 / 6.0).abs() < 1e-9);
        assert_eq!(pass_at_k(0, 0, 1), 0.0);
        assert_eq!(pass_at_k(3, 3, 2), 1.0);
        assert_eq!(pass_pow_k(3, 0, 1), 0.0);
    }

    /// Regression: with the binomials computed apart, C(2000, 1000) is
    /// `inf`, the estimate NaN, and results.json held `null`.
    #[test]
    fn many_attempts_stay_finite() {
        let at = pass_at_k(2000, 10, 1000);
        assert!(at.is_finite() && at > 0.99 && at <= 1.0, "{at}");
        let all = pass_pow_k(2000, 1990, 1000);
        assert!(all.is_finite() && all > 0.0 && all < 0.01, "{all}");
        assert!((pass_at_k(2000, 10, 1) - 0.005).abs() < 1e-12);
    }

    proptest::proptest! {
        /// Against the definition, with exact integer binomials.
        #[test]
        fn matches_the_definition(n in 1u32..40, c in 0u32..40, k in 1u32..40) {
            let c = c.min(n);
            let k = k.min(n);
            let choose = |n: u32, k: u32| -> u128 {
                if k > n { return 0; }
                (0..k).fold(1u128, |acc, i| acc * u128::from(n - i) / u128::from(i + 1))
            };
            let total = choose(n, k) as f64;
            let at = 1.0 - choose(n - c, k) as f64 / total;
            let all = choose(c, k) as f64 / total;
            proptest::prop_assert!((pass_at_k(n, c, k) - at).abs() < 1e-9);
            proptest::prop_assert!((pass_pow_k(n, c, k) - all).abs() < 1e-9);
        }
    }
}
