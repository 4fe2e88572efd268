//! Telling a regression from noise: the Wilson score interval of a pass
//! rate, the one-sided Fisher exact test of a drop in pass rate, and how
//! many attempts per case a drop needs before it can be told from noise.
//!
//! With `--repeat K` a case at 2/3 after 3/3 is well within chance; these
//! are the figures that say so. No crate: the hypergeometric tail is summed
//! from log-binomials (a Lanczos log-gamma, accurate to ~1e-15 relative), so
//! neither factorials nor probabilities overflow or underflow for thousands
//! of attempts, and the normal quantile is Acklam's approximation refined by
//! Newton steps against an erf series.

/// `ln Γ(x)` for `x > 0`: Lanczos (g = 7, nine coefficients), with the
/// reflection formula below 0.5.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// `ln C(n, k)`; exact `0` at the edges.
fn ln_choose(n: u32, k: u32) -> f64 {
    if k == 0 || k == n {
        return 0.0;
    }
    let (n, k) = (f64::from(n), f64::from(k));
    ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0)
}

/// One-sided Fisher exact test that the pass rate dropped: the chance,
/// were both runs drawn from one pass rate, of the baseline holding
/// `before_passed` or more of all the passes, given the margins. The same
/// figure as `scipy.stats.fisher_exact([[bp, bf], [ap, af]],
/// alternative="greater")`.
pub fn fisher_drop_p(before_passed: u32, before_n: u32, after_passed: u32, after_n: u32) -> f64 {
    let passes = before_passed + after_passed;
    let total = before_n + after_n;
    if before_n == 0 || after_n == 0 || passes == 0 || passes == total {
        return 1.0;
    }
    // X = passes in the baseline's row: hypergeometric(total, passes, before_n).
    let low = before_n.saturating_sub(total - passes);
    let high = before_n.min(passes);
    let denominator = ln_choose(total, before_n);
    let pmf = |x: u32| {
        (ln_choose(passes, x) + ln_choose(total - passes, before_n - x) - denominator).exp()
    };
    let tail = |from: u32, to: u32| (from..=to).map(pmf).sum::<f64>();
    let observed = before_passed.max(low);
    if observed == low {
        return 1.0;
    }
    // Sum the smaller side, so a p-value near 1 keeps its precision.
    let p = if observed - low < high - observed {
        1.0 - tail(low, observed - 1).min(1.0)
    } else {
        tail(observed, high)
    };
    p.clamp(0.0, 1.0)
}

/// A two-sided confidence interval of a proportion.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    /// 0.95 for a 95% interval.
    pub confidence: f64,
}

/// The Wilson score interval of `passed` out of `n` at `confidence`, as
/// `statsmodels.stats.proportion.proportion_confint(passed, n,
/// alpha=1-confidence, method="wilson")`. `None` with no attempt.
pub fn wilson(passed: u32, n: u32, confidence: f64) -> Option<Interval> {
    if n == 0 {
        return None;
    }
    let z = normal_quantile(1.0 - (1.0 - confidence) / 2.0);
    let n = f64::from(n);
    let p = f64::from(passed.min(n as u32)) / n;
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let half = z / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(Interval {
        low: (center - half).max(0.0),
        high: (center + half).min(1.0),
        confidence,
    })
}

/// Attempts per case (in each run) for the one-sided two-proportion test
/// at `confidence` to see a pass rate go from `before` to `after` with
/// `power`: the normal approximation without continuity correction
/// (Fleiss), `n = (z_α √(2 p̄ q̄) + z_β √(p₁q₁ + p₂q₂))² / (p₁ − p₂)²`,
/// rounded up. `None` when there is no drop to see.
pub fn attempts_needed(before: f64, after: f64, confidence: f64, power: f64) -> Option<u32> {
    let (p1, p2) = (before.clamp(0.0, 1.0), after.clamp(0.0, 1.0));
    if p1 - p2 <= 1e-12 {
        return None;
    }
    let z_alpha = normal_quantile(confidence);
    let z_beta = normal_quantile(power);
    let mean = (p1 + p2) / 2.0;
    let root = z_alpha * (2.0 * mean * (1.0 - mean)).sqrt()
        + z_beta * (p1 * (1.0 - p1) + p2 * (1.0 - p2)).sqrt();
    let n = (root * root / ((p1 - p2) * (p1 - p2)) - 1e-9).ceil();
    Some(n.max(1.0) as u32)
}

/// The standard normal distribution function, from `erf` as a series of
/// positive terms (no cancellation) up to |x| = 6, and 0 or 1 beyond.
pub fn normal_cdf(x: f64) -> f64 {
    if x < -8.0 {
        return 0.0;
    }
    if x > 8.0 {
        return 1.0;
    }
    0.5 + 0.5 * erf(x / std::f64::consts::SQRT_2)
}

/// `erf(x) = 2/√π e^{-x²} Σ 2ⁿ x^{2n+1} / (1·3·…·(2n+1))`.
fn erf(x: f64) -> f64 {
    let sign = x.signum();
    let x = x.abs();
    let x2 = x * x;
    let mut term = x;
    let mut sum = x;
    let mut n = 0.0;
    while term > sum * 1e-17 {
        n += 1.0;
        term *= 2.0 * x2 / (2.0 * n + 1.0);
        sum += term;
    }
    sign * (2.0 / std::f64::consts::PI.sqrt() * (-x2).exp() * sum).min(1.0)
}

/// The standard normal quantile of `p` in (0, 1): Acklam's rational
/// approximation (1e-9), then Newton steps on [`normal_cdf`].
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-15, 1.0 - 1e-15);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let mut x = if p < 0.024_25 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.024_25 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    for _ in 0..3 {
        let density = (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
        if density <= 0.0 {
            break;
        }
        x -= (normal_cdf(x) - p) / density;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance * b.abs().max(1e-300)
    }

    #[test]
    fn log_gamma_matches_factorials() {
        let mut factorial = 1.0f64;
        for n in 1..=30u32 {
            factorial *= f64::from(n);
            assert!(
                close(ln_gamma(f64::from(n) + 1.0), factorial.ln(), 1e-13),
                "{n}"
            );
        }
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-14);
    }

    /// Figures worked out by hand from the hypergeometric distribution.
    #[test]
    fn fisher_known_figures() {
        // 3/3 → 2/3: tables with ≥3 of the 5 passes in the baseline row:
        // C(5,3)C(1,0)/C(6,3) = 10/20 = 0.5.
        assert!(close(fisher_drop_p(3, 3, 2, 3), 0.5, 1e-12));
        // 10/10 → 0/10: 1 / C(20, 10) = 1 / 184756.
        assert!(close(fisher_drop_p(10, 10, 0, 10), 1.0 / 184_756.0, 1e-11));
        // 3/3 → 0/3: 1 / C(6, 3) = 0.05.
        assert!(close(fisher_drop_p(3, 3, 0, 3), 0.05, 1e-12));
        // No drop, or a rise: p = 1 or near it.
        assert!(close(fisher_drop_p(2, 3, 2, 3), 0.8, 1e-12));
        assert!(close(fisher_drop_p(0, 3, 3, 3), 1.0, 1e-12));
        assert!(close(fisher_drop_p(5, 5, 5, 5), 1.0, 1e-12));
    }

    #[test]
    fn fisher_stays_finite_for_many_attempts() {
        let p = fisher_drop_p(9_000, 10_000, 8_800, 10_000);
        assert!(p.is_finite() && p > 0.0 && p < 1e-3, "{p}");
        let p = fisher_drop_p(5_000, 10_000, 5_000, 10_000);
        assert!(p > 0.49 && p < 0.51, "{p}");
    }

    #[test]
    fn wilson_known_figures() {
        // 95%, z = 1.959963984540054; 2/3 → (0.2077, 0.9385) by the formula.
        let i = wilson(2, 3, 0.95).unwrap();
        assert!((i.low - 0.207_659_600_8).abs() < 1e-9, "{i:?}");
        assert!((i.high - 0.938_508_055_3).abs() < 1e-9, "{i:?}");
        let i = wilson(10, 10, 0.95).unwrap();
        assert!(
            (i.low - 0.722_467_200_1).abs() < 1e-7 && (i.high - 1.0).abs() < 1e-15,
            "{i:?}"
        );
        assert_eq!(wilson(0, 0, 0.95), None);
    }

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-13);
        assert!((normal_quantile(0.95) - 1.644_853_626_951_472_2).abs() < 1e-13);
        assert!((normal_quantile(0.8) - 0.841_621_233_572_914_2).abs() < 1e-13);
        assert!((normal_quantile(0.5)).abs() < 1e-15);
    }

    #[test]
    fn attempts_needed_for_a_twenty_point_drop() {
        // 100% → 80%, one-sided 95%, power 80%:
        // (1.6449·√0.18 + 0.8416·√0.16)² / 0.04 = 26.75 → 27.
        assert_eq!(attempts_needed(1.0, 0.8, 0.95, 0.8), Some(27));
        assert_eq!(attempts_needed(0.5, 0.5, 0.95, 0.8), None);
    }
}
