//! The campus model's random distributions: uniform, normal, log-normal
//! and Pareto draws from the crate's seeded generator, and the heavy-tailed
//! flow-size mix.

use crate::prng::SplitMix64;

pub(super) fn unit(rng: &mut SplitMix64) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

pub(super) fn normal(rng: &mut SplitMix64) -> f64 {
    let (u1, u2) = (unit(rng), unit(rng));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

pub(super) fn lognormal(rng: &mut SplitMix64, median: f64, sigma: f64) -> f64 {
    median * (sigma * normal(rng)).exp()
}

pub(super) fn pareto(rng: &mut SplitMix64, xm: f64, alpha: f64) -> f64 {
    xm / unit(rng).powf(1.0 / alpha)
}

/// Probability as a threshold on 32 random bits.
pub(super) fn threshold(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 4_294_967_296.0) as u64
}

pub(super) fn hit(rng: &mut SplitMix64, th: u64) -> bool {
    th != 0 && (rng.next_u64() >> 32) < th
}

pub(super) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Heavy-tailed application size (bytes of the main transfer).
pub(super) fn flow_size(rng: &mut SplitMix64) -> u64 {
    let u = unit(rng);
    let s = if u < 0.60 {
        lognormal(rng, 1_200.0, 1.0)
    } else if u < 0.92 {
        lognormal(rng, 15_000.0, 1.2)
    } else {
        pareto(rng, 60_000.0, 1.05)
    };
    (s as u64).clamp(1, 100_000_000)
}

// ---------------------------------------------------------------------------
// Messages and payload filler.
