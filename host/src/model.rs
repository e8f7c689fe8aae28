//! The timing model's data: a GPU [`Profile`] (what each operation costs)
//! and what a run in timing mode reports ([`ModelledTime`]).
//!
//! The model itself runs in the cpu backend (`cpu/model.rs`): each rank has
//! a virtual clock that every access it makes through the shim advances by
//! the profile's cost, and the scheduler runs the rank whose clock is
//! behind. docs/model.md says what is modelled, where each parameter comes
//! from and how the model compares with measurements.

use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

/// What each operation costs on one GPU, in nanoseconds (bandwidths in
/// GB/s, i.e. bytes per nanosecond).
///
/// Written as a small text file of `key = value` lines (`#` starts a
/// comment; every key below must be given once; `name` takes a quoted
/// string): see `host/profiles/h100.profile`. [`Profile::h100`] and
/// [`Profile::h200`] are the two files shipped with the crate.
#[derive(Clone, Debug)]
pub struct Profile {
    /// The GPU it describes.
    pub name: String,
    /// A plain load that hits the SM's L1 cache.
    pub load_hit_ns: f64,
    /// A load that misses L1 and is served by L2 (every atomic load: device
    /// scope bypasses L1), seen by the thread that issued it.
    pub load_ns: f64,
    /// What an acquire load (or read-modify-write) costs beyond a relaxed
    /// one: on sm_70 and later the L1 invalidation it implies.
    pub acquire_ns: f64,
    /// Issuing a store (a thread does not wait for its stores).
    pub store_ns: f64,
    /// From a store (or read-modify-write) to the moment a thread of
    /// another SM can read its value.
    pub visible_ns: f64,
    /// What a release store or read-modify-write costs beyond a relaxed one:
    /// the wait for the thread's earlier writes (`MEMBAR.GPU`).
    pub release_ns: f64,
    /// A fence (`fence.acq_rel.gpu`).
    pub fence_ns: f64,
    /// A read-modify-write's round trip to L2, seen by its thread.
    pub rmw_ns: f64,
    /// Read-modify-writes of one word queue behind each other at L2: one
    /// every this many nanoseconds.
    pub rmw_interval_ns: f64,
    /// The shortest sleep `nanosleep` gives.
    pub sleep_min_ns: f64,
    /// A block barrier (`bar.sync`) once its last thread arrived.
    pub block_barrier_ns: f64,
    /// A warp collective (shuffle, vote, match, `bar.warp.sync`) once its
    /// last lane arrived.
    pub warp_op_ns: f64,
    /// Bytes one thread copies per nanosecond with `copy_bytes`.
    pub copy_thread_gbps: f64,
    /// Bytes the whole device copies per nanosecond (read plus written):
    /// a floor under the time of every copy made meanwhile.
    pub copy_device_gbps: f64,
    /// A kernel launch seen by the host's timer: added once to the kernel's
    /// modelled time.
    pub launch_ns: f64,
    /// The instructions around each access (address arithmetic, branches):
    /// charged once per access.
    pub issue_ns: f64,
    /// The library's own instructions beyond `issue_ns` (argument checks,
    /// matching, request bookkeeping): charged on each access to a rank's
    /// own records (`mine!`, `rec!` in device/src/records.rs), which only
    /// the library makes, so a native kernel pays none of it.
    pub library_ns: f64,
    /// Bytes one thread copies per nanosecond with `copy_wide` (16-byte
    /// vectors, four in flight: a direct message's payload), where
    /// `copy_thread_gbps` is `copy_bytes`'s.
    pub copy_wide_gbps: f64,
    /// A load, store or atomic of the block's shared memory (a shared
    /// window in it), seen by its thread; also the time until the other
    /// threads of the block see a store.
    pub shared_ns: f64,
    /// What each load of a batch of independent loads (`shim::independent`)
    /// after its first adds to the batch's end: the GPU issues them back to
    /// back, but their values do not all arrive one `load_ns` after the
    /// first's. A vector load is one load of a batch.
    pub batch_load_ns: f64,
    /// What each 128-byte line beyond the first that one access of a
    /// warp's lanes touches costs every lane: the further transactions of
    /// an access whose lanes' addresses lie apart (uncoalesced). Applied to
    /// data accesses only: plain and volatile loads and stores and the two
    /// ends of a copy, not atomics or the library's own words.
    pub line_ns: f64,
    /// Each half (release, acquire) of a block-scope (`.cta`) atomic's
    /// ordering (`shim`'s `fetch_add_block`): its fence orders the
    /// thread's accesses for the ranks of its block alone, which share
    /// its SM's L1, and invalidates nothing.
    pub cta_fence_ns: f64,
    /// What each load of a batch after its first adds to the batch's end
    /// when the load reads the block's shared memory: `batch_load_ns`'s
    /// counterpart for the SM's own memory, whose loads issue at its
    /// load/store units' rate rather than queue for L2. As there, a load's
    /// issue (`issue_ns`) bounds it from below.
    pub shared_batch_load_ns: f64,
}

/// The keys of a profile file, in the order [`Profile`]'s `Display` writes
/// them (`name` comes first).
const KEYS: [&str; 23] = [
    "load_hit_ns",
    "load_ns",
    "acquire_ns",
    "store_ns",
    "visible_ns",
    "release_ns",
    "fence_ns",
    "rmw_ns",
    "rmw_interval_ns",
    "sleep_min_ns",
    "block_barrier_ns",
    "warp_op_ns",
    "copy_thread_gbps",
    "copy_device_gbps",
    "launch_ns",
    "issue_ns",
    "library_ns",
    "copy_wide_gbps",
    "shared_ns",
    "batch_load_ns",
    "line_ns",
    "cta_fence_ns",
    "shared_batch_load_ns",
];

/// Profiles are equal when their names and values are, bit for bit (so
/// that equality is an equivalence, NaN or not).
impl PartialEq for Profile {
    fn eq(&self, other: &Profile) -> bool {
        self.name == other.name && self.values().map(f64::to_bits) == other.values().map(f64::to_bits)
    }
}

impl Eq for Profile {}

/// Why a profile could not be read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProfileError {
    /// A line is not `key = value`, or its value is not a number (or, for
    /// `name`, a quoted string).
    #[error("line {line}: {text:?}: {why}")]
    Syntax {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A key the format does not have.
    #[error("line {line}: unknown key {key:?}")]
    UnknownKey {
        /// 1-based line number.
        line: usize,
        /// The key.
        key: String,
    },
    /// A key given twice.
    #[error("line {line}: {key:?} given twice")]
    Repeated {
        /// 1-based line number.
        line: usize,
        /// The key.
        key: String,
    },
    /// A key the file lacks.
    #[error("missing key {0:?}")]
    Missing(&'static str),
    /// A cost below zero, a bandwidth of zero or below, or a value that is
    /// not finite.
    #[error("{key} = {value}: {why}")]
    Value {
        /// The key.
        key: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        why: &'static str,
    },
    /// The file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        message: String,
    },
    /// `GPU_MPI_MODEL` names neither a shipped profile nor a readable file.
    #[error("GPU_MPI_MODEL={0:?}: expected h100, h200 or a profile file ({1})")]
    Env(String, String),
}

impl Profile {
    /// The NVIDIA H100 SXM (80 GB HBM3) profile shipped with the crate.
    pub fn h100() -> &'static Profile {
        static P: OnceLock<Profile> = OnceLock::new();
        P.get_or_init(|| {
            Profile::parse(include_str!("../profiles/h100.profile")).expect("the shipped H100 profile parses")
        })
    }

    /// The NVIDIA H200 profile shipped with the crate.
    pub fn h200() -> &'static Profile {
        static P: OnceLock<Profile> = OnceLock::new();
        P.get_or_init(|| {
            Profile::parse(include_str!("../profiles/h200.profile")).expect("the shipped H200 profile parses")
        })
    }

    /// The profile for the rest of the process, as
    /// [`WorldSpec::model`](crate::WorldSpec::model) and
    /// [`CpuOptions::model`](crate::CpuOptions::model) take it (a profile is
    /// read once per program: the few hundred bytes are never freed).
    pub fn leak(self) -> &'static Profile {
        Box::leak(Box::new(self))
    }

    /// A shipped profile by name (`h100`, `h200`, any case).
    pub fn named(name: &str) -> Option<&'static Profile> {
        match name.to_ascii_lowercase().as_str() {
            "h100" => Some(Profile::h100()),
            "h200" => Some(Profile::h200()),
            _ => None,
        }
    }

    /// Reads a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Profile::parse(&text)
    }

    /// The profile `GPU_MPI_MODEL` names: `h100`, `h200` or a profile
    /// file's path; `Ok(None)` when the variable is unset or empty.
    pub fn from_env() -> Result<Option<&'static Profile>, ProfileError> {
        let Some(v) = std::env::var_os("GPU_MPI_MODEL") else {
            return Ok(None);
        };
        let v = v.to_string_lossy().into_owned();
        if v.is_empty() {
            return Ok(None);
        }
        if let Some(p) = Profile::named(&v) {
            return Ok(Some(p));
        }
        Profile::load(Path::new(&v))
            .map(|p| Some(p.leak()))
            .map_err(|e| ProfileError::Env(v, e.to_string()))
    }

    /// Parses the text of a profile file.
    pub fn parse(text: &str) -> Result<Profile, ProfileError> {
        let mut name: Option<String> = None;
        let mut values: [Option<f64>; KEYS.len()] = [None; KEYS.len()];
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let body = raw.split('#').next().unwrap_or("").trim();
            if body.is_empty() {
                continue;
            }
            let syntax = |why| ProfileError::Syntax {
                line,
                text: raw.to_string(),
                why,
            };
            let (key, value) = body
                .split_once('=')
                .ok_or_else(|| syntax("expected `key = value`"))?;
            let (key, value) = (key.trim(), value.trim());
            if key == "name" {
                let s = value
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .ok_or_else(|| syntax("the name is a quoted string"))?;
                if name.replace(s.to_string()).is_some() {
                    return Err(ProfileError::Repeated {
                        line,
                        key: key.to_string(),
                    });
                }
                continue;
            }
            let Some(k) = KEYS.iter().position(|&k| k == key) else {
                return Err(ProfileError::UnknownKey {
                    line,
                    key: key.to_string(),
                });
            };
            let v: f64 = value.parse().map_err(|_| syntax("the value is not a number"))?;
            if values[k].replace(v).is_some() {
                return Err(ProfileError::Repeated {
                    line,
                    key: key.to_string(),
                });
            }
        }
        let name = name.ok_or(ProfileError::Missing("name"))?;
        let mut v = [0.0; KEYS.len()];
        for (k, slot) in values.iter().enumerate() {
            v[k] = slot.ok_or(ProfileError::Missing(KEYS[k]))?;
            let bad = |why| ProfileError::Value {
                key: KEYS[k],
                value: v[k],
                why,
            };
            if !v[k].is_finite() {
                return Err(bad("not a finite number"));
            }
            if KEYS[k].ends_with("_gbps") {
                if v[k] <= 0.0 {
                    return Err(bad("a bandwidth above zero"));
                }
            } else if v[k] < 0.0 {
                return Err(bad("a time of zero or more"));
            }
        }
        Ok(Profile {
            name,
            load_hit_ns: v[0],
            load_ns: v[1],
            acquire_ns: v[2],
            store_ns: v[3],
            visible_ns: v[4],
            release_ns: v[5],
            fence_ns: v[6],
            rmw_ns: v[7],
            rmw_interval_ns: v[8],
            sleep_min_ns: v[9],
            block_barrier_ns: v[10],
            warp_op_ns: v[11],
            copy_thread_gbps: v[12],
            copy_device_gbps: v[13],
            launch_ns: v[14],
            issue_ns: v[15],
            library_ns: v[16],
            copy_wide_gbps: v[17],
            shared_ns: v[18],
            batch_load_ns: v[19],
            line_ns: v[20],
            cta_fence_ns: v[21],
            shared_batch_load_ns: v[22],
        })
    }

    /// Every parameter as `(key, value)`, in the order of the file
    /// format (`name` aside): what a program needs to print or record a
    /// profile.
    pub fn entries(&self) -> impl Iterator<Item = (&'static str, f64)> {
        KEYS.into_iter().zip(self.values())
    }

    fn values(&self) -> [f64; KEYS.len()] {
        [
            self.load_hit_ns,
            self.load_ns,
            self.acquire_ns,
            self.store_ns,
            self.visible_ns,
            self.release_ns,
            self.fence_ns,
            self.rmw_ns,
            self.rmw_interval_ns,
            self.sleep_min_ns,
            self.block_barrier_ns,
            self.warp_op_ns,
            self.copy_thread_gbps,
            self.copy_device_gbps,
            self.launch_ns,
            self.issue_ns,
            self.library_ns,
            self.copy_wide_gbps,
            self.shared_ns,
            self.batch_load_ns,
            self.line_ns,
            self.cta_fence_ns,
            self.shared_batch_load_ns,
        ]
    }
}

/// The profile as a file that [`Profile::parse`] reads back.
impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "name = \"{}\"", self.name)?;
        for (k, v) in KEYS.iter().zip(self.values()) {
            writeln!(f, "{k} = {v}")?;
        }
        Ok(())
    }
}

/// Where a rank's modelled time went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeCategory {
    /// Loads, each waiting for its value: a chain of dependent loads costs
    /// its full length, a batch of independent ones one latency plus
    /// `batch_load_ns` per load after the first.
    Loads,
    /// Issuing stores.
    Stores,
    /// Read-modify-writes' round trips.
    Atomics,
    /// Ordering: release waits, acquire invalidations, fences.
    Fences,
    /// Waiting for another rank: a value not yet visible, a word's earlier
    /// read-modify-writes, the device's copy bandwidth.
    Waiting,
    /// Block barriers and warp collectives, from the rank's arrival to the
    /// release.
    Barriers,
    /// Copying bytes at the thread's bandwidth.
    Copying,
    /// Backoff sleeps after failed polls.
    Sleeping,
    /// The instructions around each access.
    Issue,
}

impl TimeCategory {
    /// Every category, in the order of [`RankTime::spent_ps`].
    pub const ALL: [TimeCategory; 9] = [
        TimeCategory::Loads,
        TimeCategory::Stores,
        TimeCategory::Atomics,
        TimeCategory::Fences,
        TimeCategory::Waiting,
        TimeCategory::Barriers,
        TimeCategory::Copying,
        TimeCategory::Sleeping,
        TimeCategory::Issue,
    ];

    /// A short lower-case name (`loads`, `waiting`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            TimeCategory::Loads => "loads",
            TimeCategory::Stores => "stores",
            TimeCategory::Atomics => "atomics",
            TimeCategory::Fences => "fences",
            TimeCategory::Waiting => "waiting",
            TimeCategory::Barriers => "barriers",
            TimeCategory::Copying => "copying",
            TimeCategory::Sleeping => "sleeping",
            TimeCategory::Issue => "issue",
        }
    }
}

/// One rank's modelled time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankTime {
    /// Its virtual clock when it returned, in picoseconds from the kernel's
    /// start.
    pub end_ps: u64,
    /// Picoseconds spent per [`TimeCategory`] (in [`TimeCategory::ALL`]'s
    /// order); they add up to `end_ps`.
    pub spent_ps: [u64; 9],
}

impl RankTime {
    /// Nanoseconds spent on `category`.
    pub fn ns(&self, category: TimeCategory) -> f64 {
        let i = TimeCategory::ALL.iter().position(|&c| c == category).unwrap_or(0);
        self.spent_ps[i] as f64 / 1e3
    }
}

/// What a launch in timing mode reports ([`LaunchReport::model`](crate::LaunchReport::model)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelledTime {
    /// The profile's name.
    pub profile: String,
    /// The kernel's modelled time in picoseconds: the launch, then until
    /// the last rank returned.
    pub kernel_ps: u64,
    /// Per rank, its modelled time.
    pub ranks: Vec<RankTime>,
    /// The access log of one rank, when the launch asked for one
    /// ([`WorldSpec::model_log`](crate::WorldSpec::model_log), `GPU_MPI_MODEL_LOG`).
    pub log: Option<AccessLog>,
}

/// The accesses one rank made in timing mode, each with its modelled time
/// and the place in the world memory it touched: where that rank's time
/// went, access by access (docs/model.md, "Where one rank's time went").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessLog {
    /// The rank.
    pub rank: u32,
    /// Its accesses in program order, at most [`AccessLog::MAX_ACCESSES`].
    pub accesses: Vec<LoggedAccess>,
    /// Accesses made after the log was full, not in it.
    pub dropped: u64,
}

/// One access of an [`AccessLog`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedAccess {
    /// The rank's clock when it made the access, in picoseconds from the
    /// kernel's start.
    pub at_ps: u64,
    /// What the access cost the rank, in picoseconds (waiting for a value
    /// not yet visible included).
    pub cost_ps: u64,
    /// What it was: `load acquire`, `store relaxed`, `rmw acq_rel`,
    /// `private read 4 B`, `plain write 8 B`, `fence release`,
    /// `copy 64 B`, `sleep 32 ns`, `batch begin`, `batch end`.
    pub what: String,
    /// Where: the place in the world memory (`rank 3 header.free_count`,
    /// `rank 0 slot 2 payload+8`, `grid barrier+4`), `the block's shared
    /// memory` (a window's shared memory, the library's block words),
    /// `outside the world` (a user buffer, a stack), or empty (a fence, a
    /// sleep, a batch).
    pub place: String,
}

impl AccessLog {
    /// The most accesses a log keeps (later ones are counted in
    /// [`AccessLog::dropped`]).
    pub const MAX_ACCESSES: usize = 1 << 20;

    /// One line per access: the clock and the cost in nanoseconds, what
    /// and where; then, per place, how often it was touched and what that
    /// cost in all, the costliest first.
    pub fn render(&self) -> String {
        let mut s = format!(
            "access log of rank {} ({} accesses{}): at ns, cost ns, access, place\n",
            self.rank,
            self.accesses.len(),
            if self.dropped > 0 {
                format!(", {} more not kept", self.dropped)
            } else {
                String::new()
            }
        );
        for a in &self.accesses {
            s.push_str(&format!(
                "{:>12.3} {:>9.3}  {:<18} {}\n",
                a.at_ps as f64 / 1e3,
                a.cost_ps as f64 / 1e3,
                a.what,
                a.place
            ));
        }
        s.push_str("by place: accesses, cost ns\n");
        for (place, n, ps) in self.by_place() {
            s.push_str(&format!("{n:>9} {:>12.3}  {place}\n", ps as f64 / 1e3));
        }
        s
    }

    /// Per place (empty: fences, sleeps and batches), how many accesses and
    /// their summed cost in picoseconds, the costliest first.
    pub fn by_place(&self) -> Vec<(String, u64, u64)> {
        let mut m: std::collections::HashMap<&str, (u64, u64)> = std::collections::HashMap::new();
        for a in &self.accesses {
            let e = m.entry(a.place.as_str()).or_default();
            e.0 += 1;
            e.1 += a.cost_ps;
        }
        let mut v: Vec<_> = m.into_iter().map(|(p, (n, ps))| (p.to_string(), n, ps)).collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        v
    }
}

impl ModelledTime {
    /// The kernel's modelled time in nanoseconds.
    pub fn kernel_ns(&self) -> f64 {
        self.kernel_ps as f64 / 1e3
    }

    /// Nanoseconds per category, summed over the ranks.
    pub fn total_ns(&self, category: TimeCategory) -> f64 {
        self.ranks.iter().map(|r| r.ns(category)).sum()
    }

    /// A few lines: the kernel's time, where the ranks' time went (as
    /// shares of their summed clocks), and the split of the rank that
    /// returned last, in microseconds.
    pub fn summary(&self) -> String {
        let all: f64 = self.ranks.iter().map(|r| r.end_ps as f64 / 1e3).sum();
        let mut s = format!(
            "modelled on {}: kernel {:.2} us, {} ranks\n",
            self.profile,
            self.kernel_ns() / 1e3,
            self.ranks.len()
        );
        for c in TimeCategory::ALL {
            let t = self.total_ns(c);
            if t > 0.0 {
                s.push_str(&format!(
                    "  {:<9} {:>6.1}%\n",
                    c.name(),
                    if all > 0.0 { 100.0 * t / all } else { 0.0 }
                ));
            }
        }
        // The rank that returned last ends the kernel: its own split says
        // what the kernel's time is made of.
        if let Some((r, last)) = self.ranks.iter().enumerate().max_by_key(|(_, t)| t.end_ps) {
            s.push_str(&format!(
                "  last to return: rank {r} at {:.2} us:",
                last.end_ps as f64 / 1e6
            ));
            for c in TimeCategory::ALL {
                let t = last.ns(c);
                if t > 0.0 {
                    s.push_str(&format!(" {} {:.2}", c.name(), t / 1e3));
                }
            }
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_profiles_parse_and_print_back() {
        for p in [Profile::h100(), Profile::h200()] {
            assert_eq!(Profile::parse(&p.to_string()).as_ref(), Ok(p));
            assert!(p.load_ns > p.load_hit_ns);
            assert!(p.copy_device_gbps > p.copy_thread_gbps);
        }
        assert_eq!(Profile::named("H100"), Some(Profile::h100()));
        assert_eq!(Profile::named("a100"), None);
    }

    #[test]
    fn bad_profiles_say_where() {
        let good = Profile::h100().to_string();
        let without = good
            .lines()
            .filter(|l| !l.starts_with("rmw_ns"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(Profile::parse(&without), Err(ProfileError::Missing("rmw_ns")));
        let twice = format!("{good}load_ns = 3\n");
        assert!(
            matches!(Profile::parse(&twice), Err(ProfileError::Repeated { key, .. }) if key == "load_ns")
        );
        let unknown = format!("{good}warp_speed = 9\n");
        assert!(matches!(
            Profile::parse(&unknown),
            Err(ProfileError::UnknownKey { line: 25, .. })
        ));
        let word = good.replace("fence_ns = ", "fence_ns = fast");
        assert!(matches!(Profile::parse(&word), Err(ProfileError::Syntax { .. })));
        let negative = good.replace("store_ns = ", "store_ns = -");
        assert!(matches!(
            Profile::parse(&negative),
            Err(ProfileError::Value { key: "store_ns", .. })
        ));
        let zero_bw = good.replace(
            &format!("copy_thread_gbps = {}", Profile::h100().copy_thread_gbps),
            "copy_thread_gbps = 0",
        );
        assert!(matches!(
            Profile::parse(&zero_bw),
            Err(ProfileError::Value {
                key: "copy_thread_gbps",
                ..
            })
        ));
    }
}
