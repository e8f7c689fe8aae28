//! Names of the places of a world's memory, for the timing model's access
//! log (docs/model.md, "Where one rank's time went"): which rank's header
//! field, slot, request record or collective cell an address is.

use gpu_mpi_device::abi::layout::{
    Layout, ABORT_OFFSET, CONFIG_OFFSET, GRID_BARRIER_OFFSET, IMMEDIATE_LOCAL_BYTES, IMMEDIATE_RECORD_BYTES,
    LAYOUT_OFFSET, RANK_HEADER_BYTES, RECORD_BYTES, RECORD_STRIDE, RESULT_STRIDE, SLOT_HEADER_BYTES,
    SLOT_STATE_BYTES,
};
use gpu_mpi_device::abi::records::{RankHeader, RequestRecord, SlotHeader, WaitRecord};
use std::mem::offset_of;

/// `(name, offset)` of each field of a record, in the order of the offsets.
macro_rules! fields {
    ($t:ty: $($f:ident),+ $(,)?) => {
        &[$((stringify!($f), offset_of!($t, $f))),+]
    };
}

const RANK_HEADER: &[(&str, usize)] = fields!(RankHeader:
    inbox, idle_count, idle_key, queue_head, queue_tail, active_head, active_tail,
    used_slots, next_sequence, spare, held_slots, free_count, spare_scope, wait_since, spare_tail);
const SLOT_HEADER: &[(&str, usize)] = fields!(SlotHeader:
    link, back, deferred, spare, tag, context, datatype, bytes, kind_sequence, signature, head_low, head_high, chunk, spare_row);
const REQUEST_RECORD: &[(&str, usize)] = fields!(RequestRecord:
    state, next, peer, tag, datatype, len, buffer, slot, offset, wanted, mode, scope, outcome,
    message_bytes, message_datatype);
const WAIT_RECORD: &[(&str, usize)] = fields!(WaitRecord: state, operation, peer, tag);

/// `.field` (with `+n` inside a field wider than the access) of the byte
/// at `at` of a record whose fields are `fields`.
fn field(fields: &[(&str, usize)], at: usize) -> String {
    match fields.iter().rev().find(|(_, o)| *o <= at) {
        Some((name, o)) if *o == at => format!(".{name}"),
        Some((name, o)) => format!(".{name}+{}", at - o),
        None => format!("+{at}"),
    }
}

/// What the byte at `offset` of a world laid out by `layout` is, e.g.
/// `rank 3 header.free_count`, `rank 0 slot 2 payload+8`,
/// `immediate slot 1 node 4+32`; `None` past the world's end (a user
/// buffer, a stack).
pub(crate) fn place(layout: &Layout, offset: usize) -> Option<String> {
    let l = layout;
    let per_rank = |start: usize, stride: usize| {
        let o = offset - start;
        (o / stride.max(1), o % stride.max(1))
    };
    let name = if offset < GRID_BARRIER_OFFSET {
        match offset {
            o if o == ABORT_OFFSET => "world header: abort flag".to_string(),
            o if o == CONFIG_OFFSET => "world header: config".to_string(),
            o if o == LAYOUT_OFFSET => "world header: layout".to_string(),
            o => format!("world header+{o}"),
        }
    } else if offset < l.records {
        format!("grid barrier+{}", offset - GRID_BARRIER_OFFSET)
    } else if offset < l.results {
        let (rank, o) = per_rank(l.records, RECORD_STRIDE);
        format!("rank {rank} wait record{}", field(WAIT_RECORD, o))
    } else if offset < l.trace {
        let (rank, o) = per_rank(l.results, RESULT_STRIDE);
        format!("rank {rank} result+{o}")
    } else if offset < l.outboxes {
        let (rank, o) = per_rank(l.trace, l.trace_stride);
        format!("rank {rank} trace+{o}")
    } else if offset < l.slot_states {
        let (rank, o) = per_rank(l.outboxes, l.outbox_stride);
        let (slot, o) = (o / l.slot_stride, o % l.slot_stride);
        if o < SLOT_HEADER_BYTES {
            format!("rank {rank} slot {slot} header{}", field(SLOT_HEADER, o))
        } else {
            format!("rank {rank} slot {slot} payload+{}", o - SLOT_HEADER_BYTES)
        }
    } else if offset < l.rank_headers {
        let id = (offset - l.slot_states) / SLOT_STATE_BYTES;
        let spr = l.slots_per_rank.max(1) as usize;
        format!("rank {} slot {} state", id / spr, id % spr)
    } else if offset < l.broadcast {
        let (rank, o) = per_rank(l.rank_headers, l.rank_stride);
        if o < RANK_HEADER_BYTES {
            format!("rank {rank} header{}", field(RANK_HEADER, o))
        } else {
            let o = o - RANK_HEADER_BYTES;
            format!(
                "rank {rank} request record {}{}",
                o / RECORD_BYTES,
                field(REQUEST_RECORD, o % RECORD_BYTES)
            )
        }
    } else if offset < l.block_scratch {
        format!("broadcast area+{}", offset - l.broadcast)
    } else if offset < l.rank_scratch {
        let (cell, o) = per_rank(l.block_scratch, l.collective_bytes);
        format!("block scratch cell {cell}+{o}")
    } else if offset < l.comms {
        let (cell, o) = per_rank(l.rank_scratch, l.collective_bytes);
        format!("rank scratch cell {cell}+{o}")
    } else if offset < l.immediate {
        format!("communicators+{}", offset - l.comms)
    } else if offset < l.immediate_local {
        let (slot, o) = per_rank(l.immediate, l.immediate_slot_stride);
        let cell = IMMEDIATE_RECORD_BYTES + l.immediate_bytes;
        let nodes = 1 + l.immediate_nodes as usize;
        if o < cell {
            format!("immediate slot {slot} world record+{o}")
        } else if o < nodes * cell {
            format!("immediate slot {slot} node {}+{}", o / cell - 1, o % cell)
        } else if o < nodes * cell + l.ranks as usize * l.immediate_bytes {
            let o = o - nodes * cell;
            format!(
                "immediate slot {slot} rank {} cell+{}",
                o / l.immediate_bytes,
                o % l.immediate_bytes
            )
        } else {
            let index = ((o - nodes * cell - l.ranks as usize * l.immediate_bytes) / 8) as u32;
            let first_node = l.immediate_node_word(0);
            if index < l.ranks {
                format!("immediate slot {slot} rank {index} word")
            } else if index >= first_node && index - first_node < l.immediate_nodes {
                format!("immediate slot {slot} node {} word", index - first_node)
            } else {
                format!("immediate slot {slot} words' padding")
            }
        }
    } else if offset < l.immediate_comms {
        let (rank, o) = per_rank(l.immediate_local, IMMEDIATE_LOCAL_BYTES);
        format!("rank {rank} immediate record+{o}")
    } else if offset < l.windows {
        format!("communicators' immediate state+{}", offset - l.immediate_comms)
    } else if offset < l.scratch {
        format!("windows+{}", offset - l.windows)
    } else if offset < l.total {
        let (rank, o) = per_rank(l.scratch, l.scratch_stride);
        format!("rank {rank} scratch+{o}")
    } else {
        return None;
    };
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_mpi_device::abi::WorldConfig;

    #[test]
    fn names_the_places_the_engine_touches() {
        let l = WorldConfig::new(64, 32).layout().unwrap();
        let free = l.rank_header(3) + offset_of!(RankHeader, free_count);
        assert_eq!(place(&l, free).as_deref(), Some("rank 3 header.free_count"));
        let idle = l.rank_header(0) + offset_of!(RankHeader, idle_key) + 4;
        assert_eq!(place(&l, idle).as_deref(), Some("rank 0 header.idle_key+4"));
        let link = l.slot(5, 2) + offset_of!(SlotHeader, link);
        assert_eq!(place(&l, link).as_deref(), Some("rank 5 slot 2 header.link"));
        let state = l.slot_state_of_id(5 * l.slots_per_rank + 2);
        assert_eq!(place(&l, state).as_deref(), Some("rank 5 slot 2 state"));
        let payload = l.slot(5, 2) + SLOT_HEADER_BYTES + 8;
        assert_eq!(place(&l, payload).as_deref(), Some("rank 5 slot 2 payload+8"));
        let scope = l.record_of(7, 1) + offset_of!(RequestRecord, scope);
        assert_eq!(place(&l, scope).as_deref(), Some("rank 7 request record 1.scope"));
        let wait = l.record(9) + offset_of!(WaitRecord, tag);
        assert_eq!(place(&l, wait).as_deref(), Some("rank 9 wait record.tag"));
        assert_eq!(
            place(&l, GRID_BARRIER_OFFSET + 4).as_deref(),
            Some("grid barrier+4")
        );
        assert_eq!(place(&l, l.result(2) + 4).as_deref(), Some("rank 2 result+4"));
        let mut traced = WorldConfig::new(64, 32);
        traced.trace_events = 4;
        let t = traced.layout().unwrap();
        assert_eq!(place(&t, t.trace_of(1) + 8).as_deref(), Some("rank 1 trace+8"));
        assert_eq!(
            place(&t, t.slot(0, 0)).as_deref(),
            Some("rank 0 slot 0 header.link")
        );
        assert_eq!(
            place(&l, l.immediate_node(1, 0) + 32).as_deref(),
            Some("immediate slot 1 node 0+32")
        );
        assert_eq!(
            place(&l, l.immediate_rank(0, 2)).as_deref(),
            Some("immediate slot 0 rank 2 cell+0")
        );
        assert_eq!(
            place(&l, l.immediate_word(1, 3)).as_deref(),
            Some("immediate slot 1 rank 3 word")
        );
        assert_eq!(
            place(&l, l.immediate_word(0, l.immediate_node_word(1)) + 4).as_deref(),
            Some("immediate slot 0 node 1 word")
        );
        assert_eq!(
            place(&l, ABORT_OFFSET).as_deref(),
            Some("world header: abort flag")
        );
        assert_eq!(place(&l, CONFIG_OFFSET).as_deref(), Some("world header: config"));
        assert_eq!(place(&l, LAYOUT_OFFSET).as_deref(), Some("world header: layout"));
        assert_eq!(place(&l, LAYOUT_OFFSET + 8).as_deref(), Some("world header+264"));
        assert_eq!(place(&l, l.total), None);
    }
}
