//! Statistics for comparing configurations on the same instances: a resolve rate's 95% Wilson
//! interval, the exact McNemar test on paired outcomes, and the mean and spread of repeats.
//! Resolve rates are noisy (identical runs differ by several points), so a table without these
//! invites reading noise as an effect.

/// The 95% Wilson score interval of `successes` out of `trials`, as fractions. `(0, 0)` for no
/// trials.
pub fn wilson_interval(successes: usize, trials: usize) -> (f64, f64) {
    if trials == 0 {
        return (0.0, 0.0);
    }
    const Z: f64 = 1.959_963_984_540_054;
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z * ((p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt()) / (1.0 + z2 / n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The two-sided exact McNemar p-value for `gained` (resolved only by the variant) and `lost`
/// (resolved only by the base) discordant pairs: a binomial test of `min(gained, lost)` against
/// `Binomial(gained + lost, 1/2)`. 1 when there are no discordant pairs.
pub fn mcnemar_exact(gained: usize, lost: usize) -> f64 {
    let n = gained + lost;
    if n == 0 {
        return 1.0;
    }
    let k = gained.min(lost);
    // Sum C(n, i) / 2^n for i in 0..=k, in log space so large n cannot overflow.
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_choose = 0.0; // ln C(n, 0)
    let mut tail = 0.0;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_choose + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

/// Mean and sample standard deviation (0 for fewer than two values).
pub fn mean_and_spread(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, variance.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn wilson_matches_published_values() {
        // 18 of 100 (the paper's default, on 100 instances): 11.7% to 26.7%.
        let (lo, hi) = wilson_interval(18, 100);
        assert!(close(lo, 0.11700) && close(hi, 0.26667), "{lo} {hi}");
        assert_eq!(wilson_interval(0, 0), (0.0, 0.0));
        let (lo, hi) = wilson_interval(0, 8);
        assert!(close(lo, 0.0) && close(hi, 0.32440), "{lo} {hi}");
        let (lo, hi) = wilson_interval(8, 8);
        assert!(close(lo, 0.67560) && close(hi, 1.0), "{lo} {hi}");
    }

    #[test]
    fn mcnemar_exact_is_the_two_sided_binomial_tail() {
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // 1 vs 0 discordant pairs: p = 2 * 0.5 = 1.
        assert_eq!(mcnemar_exact(1, 0), 1.0);
        // 0 vs 6: 2 * (1/64) = 0.03125.
        assert!(close(mcnemar_exact(0, 6), 0.03125));
        // 2 vs 10: 2 * (1 + 12 + 66) / 4096 = 0.03857.
        assert!(close(mcnemar_exact(10, 2), 0.038_574_2));
        // Symmetric in its arguments.
        assert_eq!(mcnemar_exact(3, 9), mcnemar_exact(9, 3));
        // Large counts stay finite.
        assert!(mcnemar_exact(500, 520) > 0.5);
    }

    #[test]
    fn spread_is_the_sample_standard_deviation() {
        assert_eq!(mean_and_spread(&[]), (0.0, 0.0));
        assert_eq!(mean_and_spread(&[0.5]), (0.5, 0.0));
        let (mean, sd) = mean_and_spread(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!(close(mean, 5.0) && close(sd, 2.13809), "{mean} {sd}");
    }
}
