//! Request size distributions.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::TraceError;

/// One size and its relative weight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WeightedSize {
    /// Request size in bytes.
    pub bytes: u64,
    /// Relative weight; weights need not sum to 1.
    pub weight: f64,
}

/// How request sizes are drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SizeDistribution {
    /// Every request has this size.
    Fixed {
        /// Request size in bytes.
        bytes: u64,
    },
    /// Each size in the set with equal probability.
    UniformSet {
        /// Candidate sizes in bytes.
        sizes_bytes: Vec<u64>,
    },
    /// Each size with probability proportional to its weight.
    Weighted {
        /// Candidate sizes and weights.
        choices: Vec<WeightedSize>,
    },
}

impl SizeDistribution {
    /// Sizes and weights, whatever the variant.
    fn choices(&self) -> Vec<WeightedSize> {
        match self {
            SizeDistribution::Fixed { bytes } => vec![WeightedSize {
                bytes: *bytes,
                weight: 1.0,
            }],
            SizeDistribution::UniformSet { sizes_bytes } => sizes_bytes
                .iter()
                .map(|&bytes| WeightedSize { bytes, weight: 1.0 })
                .collect(),
            SizeDistribution::Weighted { choices } => choices.clone(),
        }
    }

    /// Checks the sizes are positive and the weights usable.
    pub fn validate(&self) -> Result<(), TraceError> {
        let choices = self.choices();
        let invalid = |message: &str| Err(TraceError::InvalidSetting(message.to_string()));
        if choices.is_empty() {
            return invalid("a size distribution needs at least one size");
        }
        if choices.iter().any(|c| c.bytes == 0) {
            return invalid("request sizes must be positive");
        }
        if choices
            .iter()
            .any(|c| !(c.weight.is_finite() && c.weight >= 0.0))
        {
            return invalid("size weights must be finite and non-negative");
        }
        if choices.iter().map(|c| c.weight).sum::<f64>() <= 0.0 {
            return invalid("size weights must not all be zero");
        }
        Ok(())
    }

    /// The largest size that can be drawn.
    pub fn max_bytes(&self) -> u64 {
        self.choices()
            .iter()
            .filter(|c| c.weight > 0.0)
            .map(|c| c.bytes)
            .max()
            .unwrap_or(0)
    }

    /// The expected request size in bytes.
    pub fn mean_bytes(&self) -> f64 {
        let choices = self.choices();
        let total: f64 = choices.iter().map(|c| c.weight).sum();
        choices
            .iter()
            .map(|c| c.bytes as f64 * c.weight)
            .sum::<f64>()
            / total
    }
}

/// Draws sizes from a validated [`SizeDistribution`] by inverse CDF.
#[derive(Debug, Clone)]
pub(crate) struct SizeSampler {
    sizes_bytes: Vec<u64>,
    cumulative_weights: Vec<f64>,
}

impl SizeSampler {
    pub fn new(distribution: &SizeDistribution) -> Self {
        let mut sizes_bytes = Vec::new();
        let mut cumulative_weights = Vec::new();
        let mut total = 0.0;
        for choice in distribution.choices() {
            if choice.weight > 0.0 {
                total += choice.weight;
                sizes_bytes.push(choice.bytes);
                cumulative_weights.push(total);
            }
        }
        Self {
            sizes_bytes,
            cumulative_weights,
        }
    }

    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        if self.sizes_bytes.len() == 1 {
            // Skip the draw so a fixed size does not perturb the random stream
            // differently from what readers of the spec would expect.
            return self.sizes_bytes[0];
        }
        let total = self.cumulative_weights.last().copied().unwrap_or(0.0);
        let target = rng.gen::<f64>() * total;
        let index = self.cumulative_weights.partition_point(|&c| c <= target);
        self.sizes_bytes[index.min(self.sizes_bytes.len() - 1)]
    }
}
