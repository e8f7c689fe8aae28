//! Seeded schedules: the order in which the emulator runs its ranks, chosen
//! by a seed so that a run can be replayed.
//!
//! [`Schedule::Parallel`] is the emulator's default: worker threads, each
//! resuming its ranks in passes (see [`super::scheduler`]). The seeded
//! schedules run every rank on one worker thread and choose, at every
//! scheduling point (after each resumption of a rank), which rank runs
//! next:
//!
//! - [`Schedule::Random`]: uniformly among the ranks that can run;
//! - [`Schedule::Pct`]: probabilistic concurrency testing (Burckhardt,
//!   Kothari, Musuvathi, Nagarakatte: "A Randomized Scheduler with
//!   Probabilistic Guarantees of Finding Bugs", ASPLOS 2010): every rank gets
//!   a random priority, the rank of highest priority that can run runs, and
//!   at `depth - 1` random steps the rank that just ran drops below every
//!   other. A bug that needs `depth` ordering constraints between `n` ranks
//!   in a run of `k` steps is found by one run with probability at least
//!   `1 / (n * k^(depth - 1))`.
//!
//! Which ranks "can run" is the scheduler's business ([`super::scheduler`]):
//! a rank whose last poll failed is passed over until another rank has made
//! progress, since it would only fail again. The same seed, program and
//! world give the same sequence of choices, hence the same run, the same
//! results and the same deadlock report (without a world timeout: a timed
//! wait reads the clock, which no seed fixes).

use crate::schedule::{Schedule, PCT_STEPS_PER_RANK};

/// SplitMix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): 64 bits of state, every seed a good stream.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`), by multiply-and-shift (Lemire); the bias,
    /// at most `n / 2^64`, does not matter here.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Chooses the next rank to resume for a seeded schedule.
pub(crate) struct Chooser {
    rng: SplitMix64,
    pct: Option<Pct>,
}

/// The state of a PCT run.
struct Pct {
    /// Per local rank; the rank that can run with the largest value runs.
    /// Initial priorities are `depth ..= depth + n - 1`; the `j`-th change
    /// point gives the rank that just ran priority `depth - j` (lower than
    /// every initial one, and than the earlier change points').
    priority: Vec<u64>,
    /// The steps after which a change point lowers the rank that ran last,
    /// with the priority it gets.
    change_points: Vec<(u64, u64)>,
    /// Scheduling steps so far (choices among two ranks or more).
    steps: u64,
}

impl Chooser {
    /// The chooser of `schedule` for `ranks` ranks; `None` for
    /// [`Schedule::Parallel`].
    pub(crate) fn new(schedule: Schedule, ranks: usize) -> Option<Chooser> {
        match schedule {
            Schedule::Parallel => None,
            Schedule::Random { seed } => Some(Chooser {
                rng: SplitMix64::new(seed),
                pct: None,
            }),
            Schedule::Pct { seed, depth, steps } => {
                let mut rng = SplitMix64::new(seed);
                let depth = u64::from(depth.max(1));
                // A random permutation (Fisher-Yates) of depth..depth+n.
                let mut priority: Vec<u64> = (0..ranks as u64).map(|p| p + depth).collect();
                for i in (1..priority.len()).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    priority.swap(i, j);
                }
                let k = steps.unwrap_or(PCT_STEPS_PER_RANK * ranks as u64).max(1);
                // depth - 1 distinct steps in 1..=k (fewer when k is smaller).
                let wanted = (depth - 1).min(k) as usize;
                let mut points: Vec<u64> = Vec::with_capacity(wanted);
                while points.len() < wanted {
                    let p = 1 + rng.below(k);
                    if !points.contains(&p) {
                        points.push(p);
                    }
                }
                // The j-th point drawn (from 1) lowers to depth - j.
                let change_points = points
                    .into_iter()
                    .enumerate()
                    .map(|(j, p)| (p, depth - 1 - j as u64))
                    .collect();
                Some(Chooser {
                    rng,
                    pct: Some(Pct {
                        priority,
                        change_points,
                        steps: 0,
                    }),
                })
            }
        }
    }

    /// Picks one of `choices` (local rank indices, not empty, in an order
    /// that depends only on the run so far) and returns its position there;
    /// `last` is the rank resumed last.
    pub(crate) fn pick(&mut self, choices: &[usize], last: Option<usize>) -> usize {
        debug_assert!(!choices.is_empty());
        let Some(pct) = &mut self.pct else {
            return self.rng.below(choices.len() as u64) as usize;
        };
        // Only real choices count as steps (PCT paper, 4.1).
        if choices.len() > 1 {
            pct.steps += 1;
            if let (Some(l), Some(&(_, lowered))) =
                (last, pct.change_points.iter().find(|(p, _)| *p == pct.steps))
            {
                pct.priority[l] = lowered;
            }
        }
        (0..choices.len())
            .max_by_key(|&p| pct.priority[choices[p]])
            .expect("choices is not empty")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_deterministic_and_spread() {
        let a: Vec<u64> = {
            let mut r = SplitMix64::new(42);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let mut r = SplitMix64::new(42);
        assert_eq!(a, (0..4).map(|_| r.next_u64()).collect::<Vec<_>>());
        // Reference value of SplitMix64 seeded with 0.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
        let mut r = SplitMix64::new(1);
        let mut seen = [0u32; 5];
        for _ in 0..5000 {
            seen[r.below(5) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }

    #[test]
    fn pct_priorities_are_a_permutation_and_change_points_lower() {
        let c = Chooser::new(
            Schedule::Pct {
                seed: 3,
                depth: 3,
                steps: Some(10),
            },
            5,
        )
        .unwrap();
        let pct = c.pct.as_ref().unwrap();
        let mut p = pct.priority.clone();
        p.sort();
        assert_eq!(p, vec![3, 4, 5, 6, 7]);
        assert_eq!(pct.change_points.len(), 2);
        assert!(pct
            .change_points
            .iter()
            .all(|&(s, l)| (1..=10).contains(&s) && l < 3));
        assert_ne!(pct.change_points[0].0, pct.change_points[1].0);
    }

    #[test]
    fn pct_runs_the_highest_priority_and_lowers_at_change_points() {
        let mut c = Chooser::new(
            Schedule::Pct {
                seed: 9,
                depth: 2,
                steps: Some(1),
            },
            3,
        )
        .unwrap();
        let pct = c.pct.as_ref().unwrap();
        assert_eq!(pct.change_points, vec![(1, 1)]);
        let top = (0..3).max_by_key(|&i| pct.priority[i]).unwrap();
        // Step 1 is the change point: the rank that ran last drops to 1.
        let first = c.pick(&[0, 1, 2], Some(top));
        assert_ne!(first, top);
        // A single choice is no step.
        assert_eq!(c.pick(&[top], Some(first)), 0);
        assert_eq!(c.pct.as_ref().unwrap().priority[top], 1);
    }
}
