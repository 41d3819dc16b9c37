//! Zipf-distributed ranks in O(1) per draw.
//!
//! Rejection-inversion sampling (W. Hörmann and G. Derflinger, "Rejection-
//! inversion to generate variates from monotone discrete distributions",
//! ACM TOMACS 6(3), 1996), as in Apache Commons RNG's
//! `RejectionInversionZipfSampler`. Unlike the YCSB/Gray method it needs no
//! O(n) harmonic sum, so a Zipf over the billions of 4 KiB blocks of a large
//! array costs nothing to set up.

use rand::Rng;

/// Draws ranks `1..=n` with `P(k) ∝ k^-exponent`.
#[derive(Debug, Clone)]
pub(crate) struct ZipfSampler {
    elements: u64,
    exponent: f64,
    h_integral_x1: f64,
    h_integral_elements: f64,
    s: f64,
}

impl ZipfSampler {
    /// `elements >= 1`, `exponent > 0` and finite (validated by the caller).
    pub fn new(elements: u64, exponent: f64) -> Self {
        let mut sampler = Self {
            elements,
            exponent,
            h_integral_x1: 0.0,
            h_integral_elements: 0.0,
            s: 0.0,
        };
        sampler.h_integral_x1 = sampler.h_integral(1.5) - 1.0;
        sampler.h_integral_elements = sampler.h_integral(elements as f64 + 0.5);
        sampler.s = 2.0 - sampler.h_integral_inverse(sampler.h_integral(2.5) - sampler.h(2.0));
        sampler
    }

    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        loop {
            let u = self.h_integral_elements
                + rng.gen::<f64>() * (self.h_integral_x1 - self.h_integral_elements);
            let x = self.h_integral_inverse(u);
            let k = ((x + 0.5) as u64).clamp(1, self.elements);
            let kf = k as f64;
            if kf - x <= self.s || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.exponent * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.exponent) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.exponent)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// `ln(1 + x) / x`, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(exp(x) - 1) / x`, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn frequencies_follow_the_power_law() {
        for exponent in [0.5, 0.99, 1.0, 1.5] {
            let sampler = ZipfSampler::new(1000, exponent);
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            let mut counts = vec![0u64; 1001];
            let draws = 400_000;
            for _ in 0..draws {
                let k = sampler.sample(&mut rng);
                assert!((1..=1000).contains(&k));
                counts[k as usize] += 1;
            }
            let norm: f64 = (1..=1000).map(|k| (k as f64).powf(-exponent)).sum();
            for k in [1usize, 2, 10] {
                let expected = (k as f64).powf(-exponent) / norm;
                let observed = counts[k] as f64 / draws as f64;
                assert!(
                    (observed - expected).abs() < 0.1 * expected,
                    "exponent {exponent} rank {k}: {observed} vs {expected}"
                );
            }
        }
    }
}
