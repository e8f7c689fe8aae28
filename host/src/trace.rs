//! Message traces of a launch (docs/tracing.md): what every rank recorded
//! in its trace buffer ([`WorldSpec::trace`]), decoded from the world
//! memory, linked (each message's send to the receive that matched it; each
//! one-sided operation from its origin to its target, MPI 4.1 chapter 12),
//! with the spans of collectives and of one-sided epochs, and exported as Chrome trace event JSON (Perfetto, `chrome://tracing`) or as
//! a self-contained HTML page.
//!
//! [`WorldSpec::trace`]: crate::WorldSpec::trace

use crate::report::{BlockedState, DeadlockReport};
use gpu_mpi_device::abi::layout::Layout;
use gpu_mpi_device::abi::polling::{Call, WaitDisplay};
use gpu_mpi_device::abi::trace::{
    Creation, RmaEpoch, RmaOp, TraceEvent, TraceHeader, TraceKind, NO_CONTEXT, RMA_OFFSET_BITS,
};
use gpu_mpi_device::ErrorClass;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Worlds of at most this many ranks get a sequence diagram in the HTML
/// page; larger ones get the per-block table only.
pub const SEQUENCE_DIAGRAM_MAX_RANKS: u32 = 64;
/// The HTML page's sequence diagram draws at most this many messages.
pub const SEQUENCE_DIAGRAM_MAX_MESSAGES: usize = 2000;
/// The buffer [`Trace::write_files`] writes the Chrome JSON through.
const WRITE_BUFFER_BYTES: usize = 1 << 16;

/// What one rank recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankTrace {
    /// The rank.
    pub rank: u32,
    /// Its block.
    pub block: u32,
    /// The SM it ran on at its first event (`%smid`; the emulator's worker).
    pub sm_first: u32,
    /// The SM at its last event.
    pub sm_last: u32,
    /// Events not recorded because its buffer was full.
    pub dropped: u32,
    /// Its events, in the order recorded (time order).
    pub events: Vec<TraceEvent>,
}

/// One message whose send and matching receive were both recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageLink {
    /// The sender (a world rank).
    pub source: u32,
    /// The sender's number for the message ([`TraceKind::Sent`]'s `arg`).
    pub sequence: u32,
    /// The message's context word (`TraceEvent::context`): `2 × id` for
    /// point-to-point traffic of communicator context `id` (0 the world),
    /// `2 × id + 1` for a collective's own messages.
    pub context: u16,
    /// The receiver.
    pub dest: u32,
    /// The tag.
    pub tag: i32,
    /// Bytes.
    pub bytes: u32,
    /// Index of the [`TraceKind::Sent`] event in the sender's events.
    pub sent: usize,
    /// Index of the [`TraceKind::Matched`] event in the receiver's events.
    pub matched: usize,
}

/// What a [`SpanRecord`] spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    /// A collective: its `polling::Call`.
    Collective(Call),
    /// A communicator creation.
    Creation(Creation),
}

/// A collective or a communicator creation as one rank recorded it: its
/// enter event paired with the leave event that followed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanRecord {
    /// The rank (world).
    pub rank: u32,
    /// What it was.
    pub kind: SpanKind,
    /// The context id of the communicator it ran on (0 the world).
    pub communicator: u32,
    /// Index of its enter event in the rank's events.
    pub enter: usize,
    /// Index of its leave event; `None` when none was recorded (the rank
    /// stopped inside: a deadlock, a panic, an abort; or the buffer was
    /// full).
    pub leave: Option<usize>,
    /// The class of the error it returned (`None`: success, or no leave).
    pub error: Option<ErrorClass>,
    /// A creation that returned a communicator: its context id.
    pub created: Option<u32>,
}

impl SpanRecord {
    /// The slice's name in the exports: "all_reduce (comm 3)",
    /// "broadcast(root 3) (world)", "split (world → comm 2)",
    /// "duplicate (comm 1 → none)", with " failed: MPI_ERR_…" when it
    /// returned an error.
    pub fn name(&self, events: &[TraceEvent]) -> String {
        let e = &events[self.enter];
        let mut name = match self.kind {
            SpanKind::Collective(_) => {
                format!(
                    "{} ({})",
                    call_name(e.call as u32, e.peer, -1),
                    comm_name(self.communicator)
                )
            }
            SpanKind::Creation(c) => match (self.leave, self.created) {
                (Some(_), Some(id)) => format!(
                    "{} ({} → {})",
                    c.name(),
                    comm_name(self.communicator),
                    comm_name(id)
                ),
                (Some(_), None) if self.error.is_none() => {
                    format!("{} ({} → none)", c.name(), comm_name(self.communicator))
                }
                _ => format!("{} ({})", c.name(), comm_name(self.communicator)),
            },
        };
        if let Some(class) = self.error {
            let _ = write!(name, " failed: {}", class.mpi_name());
        }
        name
    }
}

/// One one-sided operation as its origin recorded it
/// ([`TraceKind::RmaOperation`]): an arrow from the origin to the target in
/// the exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmaRecord {
    /// The origin (a world rank).
    pub origin: u32,
    /// Index of its event in the origin's events.
    pub event: usize,
    /// The operation.
    pub op: RmaOp,
    /// The target (a world rank).
    pub target: u32,
    /// The window id.
    pub window: u32,
    /// The context id of the window's communicator (0 the world).
    pub communicator: u32,
    /// Bytes of the origin buffer.
    pub bytes: u32,
    /// The byte offset at the target (displacement × displacement unit; on
    /// a dynamic window the displacement itself, an address).
    pub offset: u64,
    /// The notification counter of a `put_notify` or `accumulate_notify`.
    pub counter: Option<u32>,
}

impl RmaRecord {
    /// Decodes an [`TraceKind::RmaOperation`] event of `origin` (event
    /// `event`); `None` for another kind, an unknown operation or a
    /// negative target.
    pub fn of(origin: u32, event: usize, e: &TraceEvent) -> Option<RmaRecord> {
        if e.kind() != Some(TraceKind::RmaOperation) {
            return None;
        }
        let op = RmaOp::from_code(e.call)?;
        Some(RmaRecord {
            origin,
            event,
            op,
            target: u32::try_from(e.peer).ok()?,
            window: e.tag as u32,
            communicator: e.communicator().unwrap_or(0),
            bytes: e.bytes,
            offset: e.arg & ((1 << RMA_OFFSET_BITS) - 1),
            counter: op.notifies().then_some((e.arg >> RMA_OFFSET_BITS) as u32),
        })
    }

    /// The arrow's name: "put 0 -> 3 (win 0, 8 B at 16)", with ", counter
    /// 2" for a notifying one.
    pub fn name(&self) -> String {
        let mut s = format!(
            "{} {} -> {} (win {}, {} B at {}",
            self.op.name(),
            self.origin,
            self.target,
            self.window,
            self.bytes,
            self.offset
        );
        if let Some(c) = self.counter {
            let _ = write!(s, ", counter {c}");
        }
        s.push(')');
        s
    }
}

/// One epoch of a window as one rank recorded it
/// ([`TraceKind::RmaEpochOpen`] paired with the
/// [`TraceKind::RmaEpochClose`] of the same epoch, window and target).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochSpan {
    /// The rank (world).
    pub rank: u32,
    /// Which epoch.
    pub epoch: RmaEpoch,
    /// The window id.
    pub window: u32,
    /// The context id of the window's communicator (0 the world).
    pub communicator: u32,
    /// A lock's target (a world rank).
    pub target: Option<u32>,
    /// The ranks it reaches (the event's `bytes`).
    pub ranks: u32,
    /// Index of its open event in the rank's events.
    pub open: usize,
    /// Index of its close event; `None` when none was recorded (the rank
    /// stopped, or returned, with the epoch open; or the buffer was full).
    pub close: Option<usize>,
}

impl EpochSpan {
    /// The slice's name: "fence epoch (win 0)", "exclusive lock of 3 (win
    /// 1)", "access epoch (start) of 2 (win 0)", with " on comm 2" for a
    /// window of another communicator than the world.
    pub fn name(&self) -> String {
        let mut s = self.epoch.name().to_string();
        match (self.epoch, self.target) {
            (RmaEpoch::LockShared | RmaEpoch::LockExclusive, Some(t)) => {
                let _ = write!(s, " of {t}");
            }
            (RmaEpoch::Access | RmaEpoch::Exposure, _) => {
                let _ = write!(s, " of {}", self.ranks);
            }
            _ => {}
        }
        let _ = write!(s, " (win {})", self.window);
        if self.communicator != 0 {
            let _ = write!(s, " on {}", comm_name(self.communicator));
        }
        s
    }
}

/// The trace of one launch: every rank's events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// "cpu" or "cuda".
    pub backend: &'static str,
    /// Ranks per block.
    pub block_dim: u32,
    /// Events each rank's buffer held at most.
    pub events_per_rank: u32,
    /// Every rank's trace, in rank order.
    pub ranks: Vec<RankTrace>,
}

/// Why a trace could not be written to files.
#[derive(Debug, thiserror::Error)]
pub enum TraceWriteError {
    /// Writing a file failed.
    #[error("cannot write trace file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl Trace {
    /// Decodes the trace buffers of a world's memory; `None` when the world
    /// was not traced (`trace_events` 0).
    ///
    /// # Panics
    /// If `memory` is shorter than `layout.total`.
    pub fn from_world(memory: &[u8], layout: &Layout, backend: &'static str) -> Option<Trace> {
        assert!(
            memory.len() >= layout.total,
            "world memory shorter than its layout"
        );
        if layout.trace_stride == 0 {
            return None;
        }
        let capacity = ((layout.trace_stride - gpu_mpi_device::abi::layout::TRACE_HEADER_BYTES)
            / gpu_mpi_device::abi::layout::TRACE_EVENT_BYTES) as u32;
        let ranks = (0..layout.ranks)
            .map(|rank| {
                let h = TraceHeader::read(memory, layout, rank).unwrap_or_default();
                // A header can only claim what the buffer holds; a corrupt
                // count is cut to the capacity rather than read past it.
                let n = h.recorded.min(capacity);
                RankTrace {
                    rank,
                    block: rank / layout.block_dim,
                    sm_first: h.sm_first,
                    sm_last: h.sm_last,
                    dropped: h.dropped,
                    events: (0..n)
                        .map(|i| TraceEvent::read(memory, layout, rank, i))
                        .collect(),
                }
            })
            .collect();
        Some(Trace {
            backend,
            block_dim: layout.block_dim,
            events_per_rank: capacity,
            ranks,
        })
    }

    /// Events recorded, over every rank.
    pub fn recorded(&self) -> u64 {
        self.ranks.iter().map(|r| r.events.len() as u64).sum()
    }

    /// Events dropped because a buffer was full, over every rank.
    pub fn dropped(&self) -> u64 {
        self.ranks.iter().map(|r| r.dropped as u64).sum()
    }

    /// Every message whose send and matching receive (or matched probe)
    /// were both recorded, in the order the receivers recorded the matches.
    /// A message is keyed by its sender, the sender's sequence number and
    /// its context word: a match links only to a send of the same context.
    pub fn messages(&self) -> Vec<MessageLink> {
        let mut sent: HashMap<(u32, u32, u16), usize> = HashMap::new();
        for r in &self.ranks {
            for (i, e) in r.events.iter().enumerate() {
                if e.kind() == Some(TraceKind::Sent) {
                    sent.insert((r.rank, e.arg as u32, e.context), i);
                }
            }
        }
        let mut out = Vec::new();
        for r in &self.ranks {
            for (i, e) in r.events.iter().enumerate() {
                if e.kind() != Some(TraceKind::Matched) || e.peer < 0 {
                    continue;
                }
                let key = (e.peer as u32, e.arg as u32, e.context);
                if let Some(&s) = sent.get(&key) {
                    out.push(MessageLink {
                        source: key.0,
                        sequence: key.1,
                        context: key.2,
                        dest: r.rank,
                        tag: e.tag,
                        bytes: e.bytes,
                        sent: s,
                        matched: i,
                    });
                }
            }
        }
        out
    }

    /// Every collective and communicator creation of every rank, in rank
    /// order and then in the order entered: each enter event paired with
    /// the leave event that follows it. An enter followed by another enter
    /// (or by nothing) has no leave: the rank stopped inside it.
    pub fn spans(&self) -> Vec<SpanRecord> {
        self.ranks.iter().flat_map(rank_spans).collect()
    }

    /// Every one-sided operation of every rank, in rank order and then in
    /// the order carried out.
    pub fn rma_operations(&self) -> Vec<RmaRecord> {
        self.ranks
            .iter()
            .flat_map(|r| {
                r.events
                    .iter()
                    .enumerate()
                    .filter_map(|(i, e)| RmaRecord::of(r.rank, i, e))
            })
            .collect()
    }

    /// Every epoch of every rank, in rank order and then in the order
    /// opened. A close pairs with the latest open epoch of the same kind,
    /// window and target; an epoch with no close (the rank stopped or
    /// returned inside it) has `close: None`.
    pub fn epochs(&self) -> Vec<EpochSpan> {
        self.ranks.iter().flat_map(rank_epochs).collect()
    }

    /// The keys (sender, sequence, context word) of every message whose
    /// *sent* and *matched* events were both recorded, sorted: a message's
    /// flow id in the Chrome JSON is its index here. Costs 13 bytes per
    /// *sent* event while it is built (its key and a mark), 12 per linked
    /// message after.
    fn link_keys(&self) -> Vec<LinkKey> {
        fn sends(r: &RankTrace) -> impl Iterator<Item = LinkKey> + '_ {
            r.events
                .iter()
                .filter(|e| e.kind() == Some(TraceKind::Sent))
                .map(move |e| (r.rank, e.arg as u32, e.context))
        }
        // Counted first: a vector grown by doubling would hold up to twice
        // the keys' bytes.
        let n = self.ranks.iter().map(|r| sends(r).count()).sum();
        let mut keys: Vec<LinkKey> = Vec::with_capacity(n);
        keys.extend(self.ranks.iter().flat_map(sends));
        keys.sort_unstable();
        keys.dedup();
        let mut matched = vec![false; keys.len()];
        for e in self.ranks.iter().flat_map(|r| r.events.iter()) {
            if e.kind() == Some(TraceKind::Matched) && e.peer >= 0 {
                if let Ok(i) = keys.binary_search(&(e.peer as u32, e.arg as u32, e.context)) {
                    matched[i] = true;
                }
            }
        }
        let mut i = 0;
        keys.retain(|_| {
            i += 1;
            matched[i - 1]
        });
        keys.shrink_to_fit();
        keys
    }

    /// The earliest timestamp of any event (the origin of the exports).
    fn origin(&self) -> u64 {
        self.ranks
            .iter()
            .flat_map(|r| r.events.iter())
            .map(|e| match e.kind() {
                Some(TraceKind::Blocked) => e.time_ns.saturating_sub(e.arg),
                _ => e.time_ns,
            })
            .min()
            .unwrap_or(0)
    }

    /// The number of blocks.
    fn blocks(&self) -> u32 {
        self.ranks.iter().map(|r| r.block + 1).max().unwrap_or(0)
    }

    /// The trace in the Chrome trace event format (the JSON object form),
    /// as [`write_chrome_json`](Self::write_chrome_json) writes it.
    pub fn to_chrome_json(&self) -> String {
        let mut out = Vec::new();
        self.write_chrome_json(&mut out)
            .expect("writing into a Vec<u8> does not fail");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// Writes the trace in the Chrome trace event format (the JSON object
    /// form), which Perfetto (ui.perfetto.dev) and `chrome://tracing` open:
    /// one process per block (named with its SM on the GPU), one thread per
    /// rank; requests as async slices from posted to completed; blocked
    /// waits and the sends and matches as complete slices; collectives and
    /// communicator creations as begin/end slices named with their
    /// communicator ("all_reduce (comm 1)", "barrier (world)", "split
    /// (world → comm 1)", with " failed: MPI_ERR_…" when they returned an
    /// error); probes as instants; one flow (`s` to `f`) from each
    /// message's send to the receive that matched it. Every event carries
    /// `args.kind`, the [`TraceKind`] name it came from, and
    /// `args.communicator` ("world", "comm 3", or null). `otherData` holds
    /// the backend, the buffer size, and the events recorded and dropped.
    ///
    /// It streams: the metadata, then each rank's events in time order,
    /// rank by rank, each event written as it is decoded. Besides the
    /// trace itself it holds one rank's events rendered (about 300 bytes
    /// each) and the keys of the linked messages (12 bytes each), never
    /// the whole document (docs/tracing.md, "Cost").
    pub fn write_chrome_json<W: Write>(&self, mut out: W) -> std::io::Result<()> {
        let origin = self.origin();
        let links = self.link_keys();
        let rma = RmaIndex::new(self, links.len());
        out.write_all(b"{\"traceEvents\":[")?;
        let mut items = Items::default();
        // The SM of each block: the first SM of its first rank with events.
        let mut sm: Vec<Option<u32>> = vec![None; self.blocks() as usize];
        for r in self.ranks.iter().filter(|r| !r.events.is_empty()) {
            sm[r.block as usize].get_or_insert(r.sm_first);
        }
        for (b, sm) in sm.iter().enumerate() {
            let name = match (self.backend, sm) {
                ("cuda", Some(sm)) => format!("block {b} (SM {sm})"),
                _ => format!("block {b}"),
            };
            items.value(
                &mut out,
                &json!({"ph": "M", "name": "process_name", "pid": b, "args": {"name": name}}),
            )?;
            items.value(
                &mut out,
                &json!({"ph": "M", "name": "process_sort_index", "pid": b, "args": {"sort_index": b}}),
            )?;
        }
        let mut scratch = RankScratch::default();
        let mut async_id = 0u64;
        for r in &self.ranks {
            let (pid, tid) = (r.block, r.rank);
            items.value(
                &mut out,
                &json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": format!("rank {}", r.rank)}}),
            )?;
            items.value(
                &mut out,
                &json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                    "args": {"sort_index": r.rank}}),
            )?;
            scratch.render(r, origin, &links, &rma, self, &mut async_id)?;
            for &(_, _, start, end) in &scratch.order {
                items.item(&mut out, &scratch.bytes[start as usize..end as usize])?;
            }
        }
        drop(links);
        let rma_operations = rma.by_origin.len();
        drop(rma);
        out.write_all(b"],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        let mut other = serde_json::to_vec(&json!({
            "producer": "gpu-mpi",
            "backend": self.backend,
            "ranks": self.ranks.len(),
            "block_dim": self.block_dim,
            "events_per_rank": self.events_per_rank,
            "recorded": self.recorded(),
            "dropped": self.dropped(),
            "rma_operations": rma_operations,
        }))?;
        // The per-rank list goes in last, written number by number.
        other.pop();
        out.write_all(&other)?;
        out.write_all(b",\"dropped_per_rank\":[")?;
        for (i, r) in self.ranks.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            write!(out, "{}", r.dropped)?;
        }
        out.write_all(b"]}}")?;
        out.flush()
    }

    /// A self-contained HTML page of the trace (no network: inline CSS,
    /// JS and SVG): a summary, a table per block, a sequence diagram of the
    /// messages for worlds of up to [`SEQUENCE_DIAGRAM_MAX_RANKS`] ranks
    /// (one `<line class="msg">` per message, labelled with its tag and
    /// size), and, for a deadlock, its report and wait-for graph (one
    /// `<line class="wait-edge">` per rank waiting on a known peer).
    pub fn to_html(&self, title: &str, deadlock: Option<&DeadlockReport>) -> String {
        page(title, Some(self), deadlock)
    }

    /// Writes the Chrome JSON to `path` and the HTML page beside it (the
    /// same name with the extension `.html`); returns the HTML's path.
    pub fn write_files(
        &self,
        path: &Path,
        title: &str,
        deadlock: Option<&DeadlockReport>,
    ) -> Result<PathBuf, TraceWriteError> {
        let html = path.with_extension("html");
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| TraceWriteError::Io { path: p, source }
        };
        let file = std::fs::File::create(path).map_err(io(path))?;
        self.write_chrome_json(std::io::BufWriter::with_capacity(WRITE_BUFFER_BYTES, file))
            .map_err(io(path))?;
        std::fs::write(&html, self.to_html(title, deadlock)).map_err(io(&html))?;
        Ok(html)
    }

    /// Per-block counts for the HTML table, in one pass over the ranks
    /// (which are in rank order, so a block's ranks are one run).
    fn block_rows(&self) -> Vec<Value> {
        self.ranks
            .chunk_by(|a, b| a.block == b.block)
            .map(|ranks| {
                let b = ranks[0].block;
                let count = |k: TraceKind| {
                    ranks
                        .iter()
                        .flat_map(|r| r.events.iter())
                        .filter(|e| e.kind() == Some(k))
                        .count()
                };
                let bytes: u64 = ranks
                    .iter()
                    .flat_map(|r| r.events.iter())
                    .filter(|e| e.kind() == Some(TraceKind::Sent))
                    .map(|e| e.bytes as u64)
                    .sum();
                let blocked: u64 = ranks
                    .iter()
                    .flat_map(|r| r.events.iter())
                    .filter(|e| e.kind() == Some(TraceKind::Blocked))
                    .map(|e| e.arg)
                    .sum();
                let mut sms: Vec<u32> = ranks.iter().filter(|r| !r.events.is_empty()).map(|r| r.sm_first).collect();
                sms.sort();
                sms.dedup();
                json!({
                    "block": b,
                    "ranks": format!("{}-{}", ranks.first().map_or(0, |r| r.rank), ranks.last().map_or(0, |r| r.rank)),
                    "sm": sms.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
                    "sent": count(TraceKind::Sent),
                    "bytes": bytes,
                    "received": count(TraceKind::Matched),
                    "collectives": count(TraceKind::CollectiveEnter),
                    "rma": count(TraceKind::RmaOperation),
                    "blocked_us": blocked as f64 / 1000.0,
                    "dropped": ranks.iter().map(|r| r.dropped as u64).sum::<u64>(),
                })
            })
            .collect()
    }

    /// The data the page's script draws the sequence diagram from.
    fn diagram_data(&self) -> Value {
        let origin = self.origin();
        let all = self.messages();
        let messages: Vec<Value> = all
            .iter()
            .take(SEQUENCE_DIAGRAM_MAX_MESSAGES)
            .map(|m| {
                let s = &self.ranks[m.source as usize].events[m.sent];
                let f = &self.ranks[m.dest as usize].events[m.matched];
                json!({"from": m.source, "to": m.dest, "tag": m.tag, "bytes": m.bytes,
                    "comm": diagram_comm(m.context),
                    "t0": s.time_ns.saturating_sub(origin), "t1": f.time_ns.saturating_sub(origin)})
            })
            .collect();
        let mut spans = Vec::new();
        for s in self.spans() {
            let events = &self.ranks[s.rank as usize].events;
            // A span with no leave ends at the rank's next event.
            let end = s.leave.unwrap_or((s.enter + 1).min(events.len() - 1));
            spans.push(json!({"rank": s.rank,
                "t0": events[s.enter].time_ns.saturating_sub(origin),
                "t1": events[end].time_ns.saturating_sub(origin),
                "kind": "coll", "failed": s.error.is_some() || s.leave.is_none(),
                "name": s.name(events)}));
        }
        for s in self.epochs() {
            let events = &self.ranks[s.rank as usize].events;
            // An epoch never closed ends at the rank's last event.
            let end = s.close.unwrap_or(events.len() - 1);
            spans.push(json!({"rank": s.rank,
                "t0": events[s.open].time_ns.saturating_sub(origin),
                "t1": events[end].time_ns.saturating_sub(origin),
                "kind": "epoch", "failed": s.close.is_none(), "name": s.name()}));
        }
        let all_rma = self.rma_operations();
        let rma: Vec<Value> = all_rma
            .iter()
            .filter(|op| (op.target as usize) < self.ranks.len())
            .take(SEQUENCE_DIAGRAM_MAX_MESSAGES)
            .map(|op| {
                let t = self.ranks[op.origin as usize].events[op.event]
                    .time_ns
                    .saturating_sub(origin);
                json!({"from": op.origin, "to": op.target, "t": t, "name": op.name(),
                    "label": format!("{} · win {} · {} B", op.op.name(), op.window, op.bytes)})
            })
            .collect();
        for r in &self.ranks {
            for e in r.events.iter().filter(|e| e.kind() == Some(TraceKind::Blocked)) {
                let t = e.time_ns.saturating_sub(origin);
                spans.push(json!({"rank": r.rank, "t0": t.saturating_sub(e.arg),
                    "t1": t, "kind": "blocked", "name": call_name(e.call as u32, e.peer, e.tag)}));
            }
        }
        json!({"messages": messages, "spans": spans, "total_messages": all.len(),
            "rma": rma, "total_rma": all_rma.len()})
    }
}

/// A message's key: its sender, the sender's sequence number, its context
/// word.
type LinkKey = (u32, u32, u16);

/// The pairs of collectives and creations of one rank: each enter event
/// paired with the leave event that follows it, in the order entered.
fn rank_spans(r: &RankTrace) -> Vec<SpanRecord> {
    let mut out = Vec::new();
    let mut open: Option<SpanRecord> = None;
    for (i, e) in r.events.iter().enumerate() {
        let kind = match e.kind() {
            Some(TraceKind::CollectiveEnter) => Call::from_code(e.call as u32).map(SpanKind::Collective),
            Some(TraceKind::CreationEnter) => Creation::from_code(e.call).map(SpanKind::Creation),
            Some(k @ (TraceKind::CollectiveLeave | TraceKind::CreationLeave)) => {
                let pairs = matches!(
                    (k, open.map(|o| o.kind)),
                    (TraceKind::CollectiveLeave, Some(SpanKind::Collective(_)))
                        | (TraceKind::CreationLeave, Some(SpanKind::Creation(_)))
                );
                if let (true, Some(mut s)) = (pairs, open.take()) {
                    s.leave = Some(i);
                    s.error = ErrorClass::from_code(e.arg as u32).filter(|c| *c != ErrorClass::Success);
                    if k == TraceKind::CreationLeave {
                        s.created = e.communicator();
                    }
                    out.push(s);
                }
                continue;
            }
            _ => continue,
        };
        let Some(kind) = kind else { continue };
        out.extend(open.take());
        open = Some(SpanRecord {
            rank: r.rank,
            kind,
            communicator: e.communicator().unwrap_or(0),
            enter: i,
            leave: None,
            error: None,
            created: None,
        });
    }
    out.extend(open);
    out
}

/// The epochs of one rank: each open event paired with the next close
/// event of the same epoch, window and target, in the order opened.
fn rank_epochs(r: &RankTrace) -> Vec<EpochSpan> {
    let mut out: Vec<EpochSpan> = Vec::new();
    // Indices in `out` of the epochs not yet closed.
    let mut open: Vec<usize> = Vec::new();
    for (i, e) in r.events.iter().enumerate() {
        let kind = e.kind();
        if !matches!(kind, Some(TraceKind::RmaEpochOpen | TraceKind::RmaEpochClose)) {
            continue;
        }
        let Some(epoch) = RmaEpoch::from_code(e.call) else {
            continue;
        };
        let target = u32::try_from(e.peer).ok();
        let window = e.tag as u32;
        if kind == Some(TraceKind::RmaEpochOpen) {
            open.push(out.len());
            out.push(EpochSpan {
                rank: r.rank,
                epoch,
                window,
                communicator: e.communicator().unwrap_or(0),
                target,
                ranks: e.bytes,
                open: i,
                close: None,
            });
        } else if let Some(k) = open.iter().rposition(|&j| {
            let s = &out[j];
            (s.epoch, s.window, s.target) == (epoch, window, target)
        }) {
            out[open.remove(k)].close = Some(i);
        }
    }
    out
}

/// The one-sided operations of a trace for the Chrome JSON, 16 bytes each:
/// an operation's flow id is `first_id` plus its index in `by_origin`.
struct RmaIndex {
    /// (origin, index of its event) of every operation whose target is a
    /// rank of the trace, sorted.
    by_origin: Vec<(u32, u32)>,
    /// (target, index in `by_origin`), sorted.
    by_target: Vec<(u32, u32)>,
    /// The first flow id after the messages'.
    first_id: usize,
}

impl RmaIndex {
    fn new(t: &Trace, first_id: usize) -> RmaIndex {
        let mut by_origin = Vec::new();
        let mut by_target = Vec::new();
        for r in &t.ranks {
            for (i, e) in r.events.iter().enumerate() {
                if let Some(op) =
                    RmaRecord::of(r.rank, i, e).filter(|op| (op.target as usize) < t.ranks.len())
                {
                    by_target.push((op.target, by_origin.len() as u32));
                    by_origin.push((r.rank, i as u32));
                }
            }
        }
        by_target.sort_unstable();
        RmaIndex {
            by_origin,
            by_target,
            first_id,
        }
    }

    /// The flow id of event `i` of `rank`, if it is an indexed operation.
    fn id(&self, rank: u32, i: usize) -> Option<usize> {
        self.by_origin
            .binary_search(&(rank, i as u32))
            .ok()
            .map(|k| self.first_id + k)
    }

    /// The operations whose target is `rank`: (flow id, origin, event index).
    fn incoming(&self, rank: u32) -> impl Iterator<Item = (usize, u32, usize)> + '_ {
        let from = self.by_target.partition_point(|&(t, _)| t < rank);
        self.by_target[from..]
            .iter()
            .take_while(move |&&(t, _)| t == rank)
            .map(|&(_, k)| {
                let (origin, i) = self.by_origin[k as usize];
                (self.first_id + k as usize, origin, i as usize)
            })
    }
}

/// The start (`ph` "s", on the origin's track) or finish ("f", on the
/// target's) of the arrow of one-sided operation `op`, flow `id`, at `ts`
/// on a track of process `pid`.
fn rma_flow(ph: &str, id: usize, op: &RmaRecord, pid: u32, ts: f64) -> Value {
    let tid = if ph == "s" { op.origin } else { op.target };
    let mut v = json!({"ph": ph, "id": id, "name": op.name(), "cat": "rma", "pid": pid, "tid": tid, "ts": ts,
        "args": rma_args(op)});
    v["args"]["kind"] = json!("one-sided operation");
    if ph == "f" {
        v["bp"] = json!("e");
    }
    v
}

/// The `args` that describe one-sided operation `op`.
fn rma_args(op: &RmaRecord) -> Value {
    json!({"operation": op.op.name(), "origin": op.origin, "target": op.target, "window": op.window,
        "bytes": op.bytes, "offset": op.offset, "counter": op.counter,
        "communicator": comm_name(op.communicator)})
}

/// The `args` that describe epoch `s`.
fn epoch_args(s: &EpochSpan, kind: &str) -> Value {
    json!({"kind": kind, "epoch": s.epoch.name(), "window": s.window, "target": s.target,
        "ranks": s.ranks, "communicator": comm_name(s.communicator)})
}

/// The items of the JSON array of events, written one by one.
#[derive(Default)]
struct Items {
    /// Whether one was written (the next needs a comma).
    any: bool,
    /// One event rendered.
    one: Vec<u8>,
}

impl Items {
    /// Writes one rendered item.
    fn item(&mut self, out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
        if std::mem::replace(&mut self.any, true) {
            out.write_all(b",")?;
        }
        out.write_all(bytes)
    }

    /// Renders `v` and writes it as one item.
    fn value(&mut self, out: &mut impl Write, v: &Value) -> std::io::Result<()> {
        let mut one = std::mem::take(&mut self.one);
        one.clear();
        serde_json::to_writer(&mut one, v)?;
        self.item(out, &one)?;
        self.one = one;
        Ok(())
    }
}

/// One rank's Chrome JSON events, rendered and put in time order; kept
/// between ranks so that its buffers are allocated once.
#[derive(Default)]
struct RankScratch {
    /// The rendered events, one after another.
    bytes: Vec<u8>,
    /// Per event: (timestamp, the order rendered, start and end in `bytes`),
    /// sorted by the first two.
    order: Vec<(f64, u32, u32, u32)>,
}

impl RankScratch {
    /// Appends `v` at time `ts`.
    fn push(&mut self, ts: f64, v: &Value) -> std::io::Result<()> {
        let start = self.bytes.len() as u32;
        serde_json::to_writer(&mut self.bytes, v)?;
        let n = self.order.len() as u32;
        self.order.push((ts, n, start, self.bytes.len() as u32));
        Ok(())
    }

    /// Renders rank `r`'s events (and the flows of its linked messages,
    /// `links`) into the buffers, in time order; `async_id` numbers the
    /// requests over the whole trace.
    fn render(
        &mut self,
        r: &RankTrace,
        origin: u64,
        links: &[LinkKey],
        rma: &RmaIndex,
        trace: &Trace,
        async_id: &mut u64,
    ) -> std::io::Result<()> {
        self.bytes.clear();
        self.order.clear();
        let us = |ns: u64| (ns.saturating_sub(origin)) as f64 / 1000.0;
        let (pid, tid) = (r.block, r.rank);
        // Open requests by record index: (async id, name).
        let mut open: HashMap<u64, (u64, String)> = HashMap::new();
        let last = r.events.last().map_or(origin, |e| e.time_ns);
        let spans = rank_spans(r);
        let mut span_at: HashMap<usize, (bool, &SpanRecord)> = HashMap::new();
        for s in &spans {
            span_at.insert(s.enter, (true, s));
            if let Some(l) = s.leave {
                span_at.insert(l, (false, s));
            }
        }
        // The span entered last and not yet left: its name.
        let mut open_span: Option<String> = None;
        let epochs = rank_epochs(r);
        let mut epoch_at: HashMap<usize, usize> = HashMap::new();
        for (k, s) in epochs.iter().enumerate() {
            epoch_at.insert(s.open, k);
            if let Some(c) = s.close {
                epoch_at.insert(c, k);
            }
        }
        // The epochs open, innermost last: (index in `epochs`, name).
        let mut epoch_stack: Vec<(usize, String)> = Vec::new();
        // The one-sided operations that reached this rank: a slice and the
        // arrow's end on its track, at the origin's time.
        for (id, from, ev) in rma.incoming(r.rank) {
            let e = &trace.ranks[from as usize].events[ev];
            let Some(op) = RmaRecord::of(from, ev, e) else {
                continue;
            };
            let ts = us(e.time_ns);
            let mut args = rma_args(&op);
            args["kind"] = json!("one-sided operation");
            let name = format!("{} from {}", op.op.name(), op.origin);
            let v = json!({"ph": "X", "name": name, "cat": "rma", "pid": pid, "tid": tid, "ts": ts, "dur": 0,
                "args": args});
            self.push(ts, &v)?;
            self.push(ts, &rma_flow("f", id, &op, pid, ts))?;
        }
        for (i, e) in r.events.iter().enumerate() {
            let Some(kind) = e.kind() else { continue };
            let ts = us(e.time_ns);
            let base = |ph: &str, name: String| {
                json!({"ph": ph, "name": name, "cat": "mpi", "pid": pid, "tid": tid, "ts": ts,
                    "args": {"kind": kind.name(), "peer": e.peer, "tag": e.tag, "bytes": e.bytes,
                        "communicator": context_name(e.context), "context": e.context}})
            };
            match kind {
                TraceKind::SendPosted | TraceKind::ReceivePosted => {
                    *async_id += 1;
                    let name = if kind == TraceKind::SendPosted {
                        format!("send to {} (tag {}){}", e.peer, e.tag, context_suffix(e.context))
                    } else {
                        format!(
                            "receive from {} (tag {}){}",
                            peer_name(e.peer),
                            peer_name(e.tag),
                            context_suffix(e.context)
                        )
                    };
                    let mut v = base("b", name.clone());
                    v["cat"] = json!("request");
                    v["id"] = json!(*async_id);
                    self.push(ts, &v)?;
                    open.insert(e.arg, (*async_id, name));
                }
                TraceKind::SendCompleted | TraceKind::ReceiveCompleted => {
                    if let Some((id, name)) = open.remove(&e.arg) {
                        let mut v = base("e", name);
                        v["cat"] = json!("request");
                        v["id"] = json!(id);
                        self.push(ts, &v)?;
                    }
                }
                TraceKind::Sent => {
                    let mut v = base("X", format!("sent to {}{}", e.peer, context_suffix(e.context)));
                    v["dur"] = json!(0);
                    v["args"]["sequence"] = json!(e.arg);
                    self.push(ts, &v)?;
                    let key = (r.rank, e.arg as u32, e.context);
                    if let (Ok(id), Ok(dest)) = (links.binary_search(&key), u32::try_from(e.peer)) {
                        self.push(ts, &flow("s", id, key, dest, e, pid, ts))?;
                    }
                }
                TraceKind::Matched => {
                    let mut v = base(
                        "X",
                        format!("matched from {}{}", e.peer, context_suffix(e.context)),
                    );
                    v["dur"] = json!(0);
                    v["args"]["sequence"] = json!(e.arg);
                    self.push(ts, &v)?;
                    if let Ok(source) = u32::try_from(e.peer) {
                        let key = (source, e.arg as u32, e.context);
                        if let Ok(id) = links.binary_search(&key) {
                            self.push(ts, &flow("f", id, key, r.rank, e, pid, ts))?;
                        }
                    }
                }
                TraceKind::Probe => {
                    let mut v = base("i", format!("probe found {}", e.peer));
                    v["s"] = json!("t");
                    self.push(ts, &v)?;
                }
                TraceKind::CollectiveEnter | TraceKind::CreationEnter => {
                    // One that recorded no leave (the rank stopped in
                    // it) ends where the next one begins.
                    if let Some(name) = open_span.take() {
                        self.push(ts, &unfinished_end(pid, tid, ts, name))?;
                    }
                    let Some(&(true, s)) = span_at.get(&i) else {
                        continue;
                    };
                    let name = s.name(&r.events);
                    let mut v = base("B", name.clone());
                    let a = &mut v["args"];
                    a["communicator"] = json!(comm_name(s.communicator));
                    if kind == TraceKind::CollectiveEnter {
                        a["root"] = json!(e.peer);
                        a["root_world_rank"] = json!(e.tag);
                        a["communicator_size"] = json!(e.bytes);
                        a["communicator_rank"] = json!(e.arg >> 32);
                        a["communicator_first_entry"] = json!(e.arg & 0xffff_ffff);
                    } else {
                        a["creation"] = json!(Creation::from_code(e.call).map(Creation::name));
                        a["color"] = json!(e.peer);
                        a["key"] = json!(e.tag);
                        a["parent_size"] = json!(e.bytes);
                        a["parent_rank"] = json!(e.arg);
                    }
                    open_span = Some(name);
                    self.push(ts, &v)?;
                }
                TraceKind::CollectiveLeave | TraceKind::CreationLeave => {
                    let Some(&(false, s)) = span_at.get(&i) else {
                        continue;
                    };
                    let Some(name) = open_span.take() else { continue };
                    let mut v = base("E", name);
                    let a = &mut v["args"];
                    a["communicator"] = json!(comm_name(s.communicator));
                    a["result"] = json!(s.error.unwrap_or(ErrorClass::Success).mpi_name());
                    a["failed"] = json!(s.error.is_some());
                    if kind == TraceKind::CreationLeave {
                        a["created"] = json!(s.created.map(comm_name));
                        a["new_rank"] = json!(e.peer);
                        a["new_size"] = json!(e.bytes);
                    }
                    self.push(ts, &v)?;
                }
                TraceKind::Blocked => {
                    let start = us(e.time_ns.saturating_sub(e.arg));
                    let mut v = base(
                        "X",
                        format!("blocked in {}", call_name(e.call as u32, e.peer, e.tag)),
                    );
                    v["ts"] = json!(start);
                    v["dur"] = json!(e.arg as f64 / 1000.0);
                    v["args"]["blocked_ns"] = json!(e.arg);
                    self.push(start, &v)?;
                }
                TraceKind::RmaOperation => {
                    let Some(op) = RmaRecord::of(r.rank, i, e) else {
                        continue;
                    };
                    let mut args = rma_args(&op);
                    args["kind"] = json!(kind.name());
                    let v = json!({"ph": "X", "name": op.name(), "cat": "rma", "pid": pid, "tid": tid, "ts": ts,
                        "dur": 0, "args": args});
                    self.push(ts, &v)?;
                    if let Some(id) = rma.id(r.rank, i) {
                        self.push(ts, &rma_flow("s", id, &op, pid, ts))?;
                    }
                }
                TraceKind::RmaEpochOpen => {
                    let Some(&k) = epoch_at.get(&i) else { continue };
                    let s = &epochs[k];
                    let name = s.name();
                    let v = json!({"ph": "B", "name": name, "cat": "epoch", "pid": pid, "tid": tid, "ts": ts,
                        "args": epoch_args(s, kind.name())});
                    self.push(ts, &v)?;
                    epoch_stack.push((k, name));
                }
                TraceKind::RmaEpochClose => {
                    let Some(&k) = epoch_at.get(&i) else { continue };
                    let Some(at) = epoch_stack.iter().position(|&(j, _)| j == k) else {
                        continue;
                    };
                    // Slices on one track nest: the epochs opened after this
                    // one and still open (locks given back out of order) end
                    // here and begin again after it.
                    let above = epoch_stack.split_off(at + 1);
                    for (j, name) in above.iter().rev() {
                        let v = json!({"ph": "E", "name": name, "cat": "epoch", "pid": pid, "tid": tid, "ts": ts,
                            "args": epoch_args(&epochs[*j], "epoch continues")});
                        self.push(ts, &v)?;
                    }
                    let (_, name) = epoch_stack.pop().expect("the closed epoch is on the stack");
                    let v = json!({"ph": "E", "name": name, "cat": "epoch", "pid": pid, "tid": tid, "ts": ts,
                        "args": epoch_args(&epochs[k], kind.name())});
                    self.push(ts, &v)?;
                    for (j, name) in above {
                        let v = json!({"ph": "B", "name": name, "cat": "epoch", "pid": pid, "tid": tid, "ts": ts,
                            "args": epoch_args(&epochs[j], "epoch continues")});
                        self.push(ts, &v)?;
                        epoch_stack.push((j, name));
                    }
                }
                TraceKind::RmaNotified => {
                    let name = format!(
                        "notifications waited: {} on counter {} (win {})",
                        e.bytes, e.arg, e.tag
                    );
                    let mut v = base("i", name);
                    v["s"] = json!("t");
                    v["args"]["window"] = json!(e.tag);
                    v["args"]["counter"] = json!(e.arg);
                    v["args"]["count"] = json!(e.bytes);
                    self.push(ts, &v)?;
                }
            }
        }
        // Spans and requests still open at the end (a deadlock, or their
        // completion was dropped) end at the rank's last event, marked
        // unfinished.
        let end = us(last);
        if let Some(name) = open_span.take() {
            self.push(end, &unfinished_end(pid, tid, end, name))?;
        }
        while let Some((_, name)) = epoch_stack.pop() {
            self.push(end, &unfinished_end(pid, tid, end, name))?;
        }
        let mut rest: Vec<_> = open.into_values().collect();
        rest.sort();
        for (id, name) in rest {
            self.push(
                end,
                &json!({"ph": "e", "name": name, "cat": "request", "id": id, "pid": pid, "tid": tid,
                    "ts": end, "args": {"kind": "unfinished"}}),
            )?;
        }
        // A blocked wait begins before the events recorded while it
        // waited: each track in time order.
        self.order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        Ok(())
    }
}

/// The start (`ph` "s", on the sender's track) or finish ("f", on the
/// receiver's) of the flow of message `key`, number `id`, to `dest`;
/// `e` is the event it is drawn at (the *sent* or the *matched*), on a
/// track of process `pid`.
fn flow(ph: &str, id: usize, key: LinkKey, dest: u32, e: &TraceEvent, pid: u32, ts: f64) -> Value {
    let (source, sequence, context) = key;
    let name = format!(
        "message {source} -> {dest} (tag {}, {} B){}",
        e.tag,
        e.bytes,
        context_suffix(context)
    );
    let tid = if ph == "s" { source } else { dest };
    let mut v = json!({"ph": ph, "id": id, "name": name, "cat": "message", "pid": pid, "tid": tid, "ts": ts,
        "args": {"kind": "message", "source": source, "dest": dest, "sequence": sequence, "tag": e.tag,
            "bytes": e.bytes, "communicator": context_name(context), "context": context}});
    if ph == "f" {
        v["bp"] = json!("e");
    }
    v
}

/// A page for a launch with no trace (a deadlock report alone).
pub fn deadlock_html(title: &str, report: &DeadlockReport) -> String {
    page(title, None, Some(report))
}

/// The end of a collective slice that recorded no leave event.
fn unfinished_end(pid: u32, tid: u32, ts: f64, name: String) -> Value {
    json!({"ph": "E", "name": name, "cat": "mpi", "pid": pid, "tid": tid, "ts": ts,
        "args": {"kind": "unfinished"}})
}

/// "world" or "comm 3" for a communicator's context id.
fn comm_name(id: u32) -> String {
    if id == 0 {
        "world".to_string()
    } else {
        format!("comm {id}")
    }
}

/// The communicator of an event's context word, `None` for [`NO_CONTEXT`].
fn context_name(context: u16) -> Option<String> {
    (context != NO_CONTEXT).then(|| comm_name(context as u32 >> 1))
}

/// What a slice's name adds for a message's context: nothing for the
/// world's point-to-point traffic, " on comm 3" for a communicator's,
/// " (world collective)" or " (comm 3 collective)" for a collective's own.
fn context_suffix(context: u16) -> String {
    if context == NO_CONTEXT || context == 0 {
        return String::new();
    }
    let comm = comm_name(context as u32 >> 1);
    if context & 1 == 1 {
        format!(" ({comm} collective)")
    } else {
        format!(" on {comm}")
    }
}

/// The communicator an arrow of the sequence diagram names: nothing for
/// the world's point-to-point traffic, "comm 3", or "comm 3 coll." and
/// "world coll." for a collective's own messages.
fn diagram_comm(context: u16) -> String {
    match context {
        0 | NO_CONTEXT => String::new(),
        c if c & 1 == 1 => format!("{} coll.", comm_name(c as u32 >> 1)),
        c => comm_name(c as u32 >> 1),
    }
}

fn peer_name(v: i32) -> String {
    if v == gpu_mpi_device::ANY_SOURCE {
        "any".to_string()
    } else {
        v.to_string()
    }
}

fn call_name(call: u32, peer: i32, tag: i32) -> String {
    match Call::from_code(call) {
        Some(_) => WaitDisplay {
            operation: call,
            peer,
            tag,
        }
        .to_string(),
        None => format!("operation {call}"),
    }
}

/// The id of the wait-for graph's node that stands for "any source".
const ANY_SOURCE_NODE: &str = "any";

/// The wait-for graph of a deadlock: nodes are the ranks that had not
/// exited, an edge goes from a rank to the peer it waited for (a send's
/// destination, a receive's or probe's source, a rooted collective's
/// root). A receive or probe from any source gets an edge to one more
/// node, "any source", labelled with the ranks that could still send
/// (none when every other rank has exited). An unrooted collective has no
/// edge but is named in the node's label.
fn wait_for_graph(report: &DeadlockReport) -> Value {
    let mut nodes: Vec<Value> = report
        .blocked()
        .map(|r| json!({"id": r.rank.to_string(), "name": r.rank.to_string(), "label": r.state.to_string()}))
        .collect();
    let mut any_source = false;
    let edges: Vec<Value> = report
        .blocked()
        .filter_map(|r| match r.state {
            BlockedState::Waiting { peer, operation, tag }
            | BlockedState::TimedOut { peer, operation, tag }
            | BlockedState::Aborted { peer, operation, tag } => {
                let label = call_name(operation, peer, tag);
                if peer >= 0 && peer as u32 != r.rank {
                    Some(json!({"from": r.rank.to_string(), "to": peer.to_string(), "label": label}))
                } else if r
                    .state
                    .receive()
                    .is_some_and(|(s, _)| s == gpu_mpi_device::ANY_SOURCE)
                {
                    any_source = true;
                    Some(json!({"from": r.rank.to_string(), "to": ANY_SOURCE_NODE, "label": label}))
                } else {
                    None
                }
            }
            _ => None,
        })
        .collect();
    if any_source {
        let senders: Vec<u32> = report.blocked().map(|r| r.rank).collect();
        let label = if senders.len() <= 1 {
            "no rank left to send: every other rank has exited".to_string()
        } else {
            format!("{} have not exited", crate::deadlock::Ranks(&senders))
        };
        nodes.push(json!({"id": ANY_SOURCE_NODE, "name": "any", "label": label}));
    }
    json!({"nodes": nodes, "edges": edges, "text": report.to_string()})
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JSON for a `<script type="application/json">` element: `</` cannot end it.
fn script_json(v: &Value) -> String {
    v.to_string().replace("</", "<\\/")
}

fn page(title: &str, trace: Option<&Trace>, deadlock: Option<&DeadlockReport>) -> String {
    let mut summary = String::new();
    let data = match trace {
        Some(t) => {
            let blocks = t.blocks();
            let _ = write!(
                summary,
                "{} ranks in {} block(s) of {} on the {} backend; {} events recorded, {} dropped ({} per rank at most); {} messages linked; {} one-sided operations",
                t.ranks.len(),
                blocks,
                t.block_dim,
                t.backend,
                t.recorded(),
                t.dropped(),
                t.events_per_rank,
                t.link_keys().len(),
                t.ranks
                    .iter()
                    .flat_map(|r| r.events.iter())
                    .filter(|e| e.kind() == Some(TraceKind::RmaOperation))
                    .count()
            );
            json!({
                "ranks": t.ranks.len(),
                "blocks": t.block_rows(),
                "diagram": (t.ranks.len() as u32 <= SEQUENCE_DIAGRAM_MAX_RANKS).then(|| t.diagram_data()),
                "deadlock": deadlock.map(wait_for_graph),
            })
        }
        None => {
            summary.push_str("no trace recorded (launch with WorldSpec::trace or GPU_MPI_TRACE)");
            json!({"ranks": deadlock.map_or(0, |d| d.ranks.len()), "blocks": [], "diagram": null,
                "deadlock": deadlock.map(wait_for_graph)})
        }
    };
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{STYLE}</style></head>
<body>
<h1>{title}</h1>
<p id="summary">{summary}</p>
<div id="deadlock"></div>
<h2>Blocks</h2>
<table id="blocks"><thead><tr><th>block</th><th>ranks</th><th>SM</th><th>messages sent</th><th>bytes sent</th><th>messages received</th><th>collectives</th><th>one-sided operations</th><th>blocked (µs)</th><th>events dropped</th></tr></thead><tbody></tbody></table>
<h2>Sequence diagram</h2>
<p class="note" id="diagram-note"></p>
<div id="diagram"></div>
<script type="application/json" id="trace-data">{data}</script>
<script>{SCRIPT}</script>
</body></html>
"#,
        title = escape(title),
        summary = escape(&summary),
        data = script_json(&data),
    );
    out
}

const STYLE: &str = r#"
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; } h2 { font-size: 15px; margin-top: 20px; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
th { background: #f0f0f0; }
.note { color: #666; }
pre { background: #fff4f4; border: 1px solid #e0b0b0; padding: 8px; white-space: pre-wrap; }
svg text { font: 11px system-ui, sans-serif; }
.lifeline { stroke: #999; stroke-dasharray: 4 3; }
.msg { stroke: #1f5fbf; stroke-width: 1.4; }
.msg-label { fill: #1f5fbf; }
.blocked { fill: #f4a261; opacity: 0.7; }
.coll { fill: #2a9d8f; opacity: 0.35; }
.coll.failed { fill: #e63946; opacity: 0.5; }
.epoch { fill: #9b5de5; opacity: 0.18; }
.epoch.failed { fill: #e63946; opacity: 0.25; }
.rma { stroke: #7b2cbf; stroke-width: 1.4; stroke-dasharray: 5 2; }
.rma-label { fill: #7b2cbf; }
.wait-node { fill: #fde2e2; stroke: #c0392b; }
.wait-node.any-source { fill: #fff; stroke-dasharray: 3 2; }
.wait-edge { stroke: #c0392b; stroke-width: 1.6; }
"#;

const SCRIPT: &str = r#"
(function () {
  const NS = 'http://www.w3.org/2000/svg';
  const data = JSON.parse(document.getElementById('trace-data').textContent);
  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(x, y, s, parent, cls, anchor) {
    const t = el('text', {x: x, y: y, 'text-anchor': anchor || 'middle'}, parent);
    if (cls) t.setAttribute('class', cls);
    t.textContent = s;
    return t;
  }
  function marker(svg, id, color) {
    const defs = el('defs', {}, svg);
    const m = el('marker', {id: id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse'}, defs);
    el('path', {d: 'M 0 0 L 10 5 L 0 10 z', fill: color}, m);
  }
  const tbody = document.querySelector('#blocks tbody');
  for (const b of data.blocks) {
    const tr = document.createElement('tr');
    tr.className = 'block-row';
    for (const k of ['block', 'ranks', 'sm', 'sent', 'bytes', 'received', 'collectives', 'rma', 'blocked_us', 'dropped']) {
      const td = document.createElement('td');
      td.textContent = (k === 'blocked_us') ? b[k].toFixed(1) : b[k];
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
  if (data.deadlock) {
    const box = document.getElementById('deadlock');
    const h = document.createElement('h2');
    h.textContent = 'Deadlock: wait-for graph';
    box.appendChild(h);
    const pre = document.createElement('pre');
    pre.textContent = data.deadlock.text;
    box.appendChild(pre);
    const nodes = data.deadlock.nodes;
    const n = nodes.length, R = Math.max(90, n * 22), W = 2 * R + 320, H = 2 * R + 80;
    const svg = el('svg', {width: W, height: H, id: 'wait-for'}, box);
    marker(svg, 'wf-arrow', '#c0392b');
    const pos = {};
    nodes.forEach(function (nd, i) {
      const a = 2 * Math.PI * i / Math.max(n, 1) - Math.PI / 2;
      pos[nd.id] = [W / 2 + R * Math.cos(a), H / 2 + R * Math.sin(a)];
    });
    for (const e of data.deadlock.edges) {
      const p = pos[e.from], q = pos[e.to];
      if (!p || !q) continue;
      const dx = q[0] - p[0], dy = q[1] - p[1], d = Math.hypot(dx, dy) || 1, r = 18;
      const line = el('line', {x1: p[0] + dx / d * r, y1: p[1] + dy / d * r, x2: q[0] - dx / d * r, y2: q[1] - dy / d * r,
        'class': 'wait-edge', 'marker-end': 'url(#wf-arrow)'}, svg);
      el('title', {}, line).textContent = 'rank ' + e.from + ' waits in ' + e.label;
    }
    nodes.forEach(function (nd) {
      const p = pos[nd.id];
      el('circle', {cx: p[0], cy: p[1], r: 18, 'class': nd.id === 'any' ? 'wait-node any-source' : 'wait-node'}, svg);
      text(p[0], p[1] + 4, nd.name, svg);
      text(p[0], p[1] + 32, nd.label, svg, 'wait-label');
    });
  }
  const note = document.getElementById('diagram-note');
  const d = data.diagram;
  if (!d) {
    note.textContent = data.ranks > 0 ? 'No sequence diagram: more than 64 ranks (or no trace); see the table and the Chrome trace JSON.' : '';
    return;
  }
  if (d.total_messages > d.messages.length) {
    note.textContent = 'Showing the first ' + d.messages.length + ' of ' + d.total_messages + ' messages.';
  } else {
    note.textContent = d.messages.length + ' messages; time runs down (rows in event order, not to scale).';
  }
  if (d.total_rma > d.rma.length) {
    note.textContent += ' Showing the first ' + d.rma.length + ' of ' + d.total_rma + ' one-sided operations.';
  } else if (d.rma.length > 0) {
    note.textContent += ' ' + d.rma.length + ' one-sided operations (dashed).';
  }
  // Rows: the distinct times of every drawn point, in order.
  const times = [];
  for (const m of d.messages) { times.push(m.t0, m.t1); }
  for (const s of d.spans) { times.push(s.t0, s.t1); }
  for (const o of d.rma) { times.push(o.t); }
  const uniq = Array.from(new Set(times)).sort(function (a, b) { return a - b; });
  const row = new Map();
  uniq.forEach(function (t, i) { row.set(t, i); });
  const colW = 90, rowH = 22, top = 40, left = 60;
  const W = left + data.ranks * colW, H = top + (uniq.length + 1) * rowH + 20;
  const svg = el('svg', {width: W, height: H, id: 'sequence'}, document.getElementById('diagram'));
  marker(svg, 'msg-arrow', '#1f5fbf');
  marker(svg, 'rma-arrow', '#7b2cbf');
  const x = function (r) { return left + r * colW; };
  const y = function (t) { return top + (row.get(t) + 1) * rowH; };
  for (let r = 0; r < data.ranks; r++) {
    text(x(r), 20, 'rank ' + r, svg, 'rank-label');
    el('line', {x1: x(r), y1: 28, x2: x(r), y2: H - 10, 'class': 'lifeline'}, svg);
  }
  // Epochs first: the narrower bars inside them are drawn over them.
  const spans = d.spans.filter(function (s) { return s.kind === 'epoch'; })
    .concat(d.spans.filter(function (s) { return s.kind !== 'epoch'; }));
  for (const s of spans) {
    const y0 = y(s.t0), y1 = y(s.t1);
    const w = s.kind === 'epoch' ? 28 : s.kind === 'coll' ? 16 : 8;
    const rect = el('rect', {x: x(s.rank) - w / 2, y: y0, width: w, height: Math.max(2, y1 - y0), 'class': s.kind + (s.failed ? ' failed' : '')}, svg);
    el('title', {}, rect).textContent = (s.kind === 'blocked' ? 'blocked in ' : '') + s.name + ' (' + ((s.t1 - s.t0) / 1000).toFixed(1) + ' µs)';
  }
  for (const o of d.rma) {
    const x0 = x(o.from), x1 = x(o.to), y0 = y(o.t);
    const self = x0 === x1;
    const line = el('line', {x1: x0, y1: y0, x2: self ? x0 + 30 : x1, y2: y0 + (self ? 8 : 0), 'class': 'rma', 'marker-end': 'url(#rma-arrow)'}, svg);
    el('title', {}, line).textContent = o.name;
    text((x0 + (self ? x0 + 30 : x1)) / 2, y0 - 3, o.label, svg, 'rma-label');
  }
  for (const m of d.messages) {
    const x0 = x(m.from), x1 = x(m.to), y0 = y(m.t0), y1 = y(m.t1);
    const self = x0 === x1;
    const line = el('line', {x1: x0, y1: y0, x2: self ? x0 + 30 : x1, y2: y1, 'class': 'msg', 'marker-end': 'url(#msg-arrow)'}, svg);
    el('title', {}, line).textContent = 'rank ' + m.from + ' -> rank ' + m.to + ', tag ' + m.tag + ', ' + m.bytes + ' B' + (m.comm ? ' ' + m.comm : '');
    text((x0 + (self ? x0 + 30 : x1)) / 2, (y0 + y1) / 2 - 3, (m.comm ? m.comm + ' · ' : '') + 'tag ' + m.tag + ' · ' + m.bytes + ' B', svg, 'msg-label');
  }
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deadlock::tests::{put, world};
    use gpu_mpi_device::abi::polling::{STATE_EXITED, STATE_WAITING};

    /// `(from, to)` of every edge of the wait-for graph of `report`.
    fn edges(report: &DeadlockReport) -> (Value, Vec<(String, String)>) {
        let g = wait_for_graph(report);
        let e = g["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["from"].as_str().unwrap().to_string(),
                    e["to"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        (g, e)
    }

    /// A one-sided event of rank 0 at `time_ns` on window 1 of the world.
    fn rma_event(time_ns: u64, kind: TraceKind, call: u8, peer: i32, bytes: u32, arg: u64) -> TraceEvent {
        TraceEvent {
            time_ns,
            kind: kind as u8,
            call,
            context: 1,
            peer,
            tag: 1,
            bytes,
            arg,
        }
    }

    #[test]
    fn locks_given_back_out_of_order_pair_by_target_and_nest_on_the_track() {
        use TraceKind::{RmaEpochClose as Close, RmaEpochOpen as Open};
        let shared = RmaEpoch::LockShared as u8;
        let events = vec![
            rma_event(10, Open, shared, 1, 1, 0),
            rma_event(20, Open, shared, 2, 1, 0),
            rma_event(30, TraceKind::RmaOperation, RmaOp::Put as u8, 2, 8, 16),
            rma_event(40, Close, shared, 1, 1, 0),
            rma_event(50, Close, shared, 2, 1, 0),
            rma_event(60, Open, RmaEpoch::LockAll as u8, -2, 3, 0),
        ];
        let rank = |rank, events| RankTrace {
            rank,
            block: 0,
            sm_first: 0,
            sm_last: 0,
            dropped: 0,
            events,
        };
        let t = Trace {
            backend: "cpu",
            block_dim: 3,
            events_per_rank: 8,
            ranks: vec![rank(0, events), rank(1, Vec::new()), rank(2, Vec::new())],
        };
        // Each close pairs with the open of its target, not the latest.
        let epochs = t.epochs();
        let pairs: Vec<_> = epochs.iter().map(|s| (s.target, s.open, s.close)).collect();
        assert_eq!(
            pairs,
            [(Some(1), 0, Some(3)), (Some(2), 1, Some(4)), (None, 5, None)]
        );
        assert_eq!(epochs[0].name(), "shared lock of 1 (win 1)");
        assert_eq!(epochs[2].name(), "lock_all (win 1)");
        let doc: Value = serde_json::from_str(&t.to_chrome_json()).unwrap();
        let track: Vec<(String, String, String)> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["tid"] == 0 && (e["ph"] == "B" || e["ph"] == "E"))
            .map(|e| {
                let s = |v: &Value| v.as_str().unwrap().to_string();
                (s(&e["ph"]), s(&e["name"]), s(&e["args"]["kind"]))
            })
            .collect();
        let row = |ph: &str, name: &str, kind: &str| (ph.to_string(), name.to_string(), kind.to_string());
        let (one, two) = ("shared lock of 1 (win 1)", "shared lock of 2 (win 1)");
        assert_eq!(
            track,
            [
                row("B", one, "epoch opened"),
                row("B", two, "epoch opened"),
                // Lock 1 given back first: lock 2's slice ends and begins again.
                row("E", two, "epoch continues"),
                row("E", one, "epoch closed"),
                row("B", two, "epoch continues"),
                row("E", two, "epoch closed"),
                // Never closed: ended at the rank's last event.
                row("B", "lock_all (win 1)", "epoch opened"),
                row("E", "lock_all (win 1)", "unfinished"),
            ]
        );
        // The put: an arrow from rank 0's track to rank 2's.
        let flows: Vec<(String, u64)> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "rma" && (e["ph"] == "s" || e["ph"] == "f"))
            .map(|e| (e["ph"].as_str().unwrap().to_string(), e["tid"].as_u64().unwrap()))
            .collect();
        assert_eq!(flows, [("s".to_string(), 0), ("f".to_string(), 2)]);
    }

    #[test]
    fn a_receive_from_any_source_points_at_the_any_source_node() {
        let (mut m, l) = world(4);
        let any = gpu_mpi_device::ANY_SOURCE as u32;
        put(
            &mut m,
            l.record(0),
            &[STATE_WAITING, Call::Receive as u32, any, 2],
        );
        for r in 1..4 {
            put(&mut m, l.record(r), &[STATE_EXITED]);
        }
        let report = DeadlockReport::from_world(&m, &l, |_| false);
        let (g, e) = edges(&report);
        assert_eq!(e, [("0".to_string(), ANY_SOURCE_NODE.to_string())]);
        let nodes = g["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1]["id"], ANY_SOURCE_NODE);
        assert_eq!(
            nodes[1]["label"],
            "no rank left to send: every other rank has exited"
        );
        // Two ranks waiting on any source, one on a known peer.
        put(&mut m, l.record(1), &[STATE_WAITING, Call::Probe as u32, any, 2]);
        put(&mut m, l.record(2), &[STATE_WAITING, Call::Receive as u32, 0, 2]);
        let report = DeadlockReport::from_world(&m, &l, |_| false);
        let (g, e) = edges(&report);
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(e, [pair("0", "any"), pair("1", "any"), pair("2", "0")]);
        assert_eq!(
            g["nodes"].as_array().unwrap()[3]["label"],
            "ranks 0-2 have not exited"
        );
    }
}
