//! An analysis thread: runs the application's handler on the events of its
//! connections, keeps their user state, kept chunks and the decisions its
//! callbacks took, and sends back what the capture stage must know.

use super::{Back, Event, FlowEvent, StreamEvent};
use crate::deliver::{
    Decision, FlowEnd, Handler, Opposite, OwnedChunk, Returns, Stream, StreamInfo, StreamParams,
};
use crate::flow::Side;
use crate::handoff::recv_soon;
use hashbrown::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};

/// A chunk the handler kept (`keep_chunk`), still charged to the budget.
struct Kept {
    data: Vec<u8>,
    offset: u64,
    charged: usize,
}

/// What the analysis thread holds for one stream.
struct LaneStream<S> {
    user: S,
    /// The parameters the stream's callbacks set last (newer than the
    /// capture stage's until their decision is applied).
    params: Option<StreamParams>,
    discard: bool,
    kept: Option<Kept>,
}

impl<S: Default> Default for LaneStream<S> {
    fn default() -> Self {
        LaneStream {
            user: S::default(),
            params: None,
            discard: false,
            kept: None,
        }
    }
}

type Streams<S> = HashMap<(u64, Side), LaneStream<S>>;

/// The thread's loop: handles batches until the capture stage hangs up,
/// then returns the handler.
pub(super) fn run<H: Handler>(
    lane: usize,
    mut handler: H,
    rx: &Receiver<Vec<Event>>,
    back: &Sender<Back>,
    idle: &AtomicBool,
) -> H {
    let mut streams: Streams<H::State> = HashMap::new();
    loop {
        let mut batch = match rx.try_recv() {
            Ok(b) => b,
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {
                idle.store(true, Ordering::Relaxed);
                let got = recv_soon(rx);
                idle.store(false, Ordering::Relaxed);
                match got {
                    Ok(b) => b,
                    Err(_) => break,
                }
            }
        };
        let mut returns = Returns::default();
        for ev in batch.drain(..) {
            handle(&mut handler, &mut streams, ev, &mut returns);
        }
        // The capture stage gone means the run ended: nothing to return to.
        let _ = back.send(Back {
            lane,
            batch,
            returns,
        });
    }
    handler
}

/// Calls `f` with a [`Stream`] for event `ev`: its descriptor with the
/// thread's own later decisions laid over the capture stage's snapshot;
/// then records what the callback decided.
fn with_stream<S: Default>(
    streams: &mut Streams<S>,
    ev: StreamEvent,
    returns: &mut Returns,
    f: impl FnOnce(&mut Stream<'_, S>, &mut LaneStream<S>, &mut Returns),
) {
    let StreamEvent {
        stream,
        key,
        mut info,
        opposite,
    } = ev;
    let st = streams.entry((stream.conn_id, stream.side)).or_default();
    if let Some(p) = st.params {
        info.params = p;
    }
    info.discard |= st.discard;
    info.params_set = false;
    info.keep = false;
    let build = || opposite.clone();
    // The state is moved out for the callback (the kept chunk and the
    // decisions stay reachable), then put back.
    let mut user = std::mem::take(&mut st.user);
    let mut s = Stream {
        info: &mut info,
        opposite: Opposite {
            built: std::cell::OnceCell::new(),
            build: &build,
        },
        key: &key,
        side: stream.side,
        state: &mut user,
        slot: stream.slot,
    };
    f(&mut s, st, returns);
    st.user = user;
    let changed = info.params_set || (info.discard && !st.discard);
    if changed {
        st.discard |= info.discard;
        if info.params_set {
            st.params = Some(info.params);
        }
        returns.decisions.push(Decision {
            stream,
            discard: info.discard,
            params: info.params_set.then_some(info.params),
        });
    }
}

/// Gives a kept chunk's memory back.
fn release(kept: Kept, returns: &mut Returns) {
    returns.released += kept.charged;
    returns.buffers.push(kept.data);
}

fn handle<H: Handler>(
    handler: &mut H,
    streams: &mut Streams<H::State>,
    ev: Event,
    returns: &mut Returns,
) {
    match ev {
        Event::Create(ev) => with_stream(streams, ev, returns, |s, _, _| handler.on_create(s)),
        Event::Data(ev, chunk) => data(handler, streams, ev, chunk, returns),
        Event::Close(ev) => with_stream(streams, ev, returns, |s, st, returns| {
            if let Some(k) = st.kept.take() {
                release(k, returns);
            }
            handler.on_close(s);
        }),
        Event::FlowEnd(fe) => flow_end(handler, streams, *fe, returns),
        Event::Tick => handler.on_tick(),
    }
}

/// A data event: joined to a kept chunk when there is one and no gap lies
/// between them; the chunk is kept again or given back after the callback.
fn data<H: Handler>(
    handler: &mut H,
    streams: &mut Streams<H::State>,
    ev: StreamEvent,
    chunk: OwnedChunk,
    returns: &mut Returns,
) {
    let mut chunk = chunk;
    with_stream(streams, ev, returns, |s, st, returns| {
        if let Some(mut k) = st.kept.take() {
            let new_at = chunk.offset + chunk.new_from as u64;
            if chunk.gap.is_none() && k.offset + k.data.len() as u64 == new_at {
                let new_from = k.data.len();
                k.data
                    .extend_from_slice(chunk.data.get(chunk.new_from..).unwrap_or(&[]));
                let spent = std::mem::replace(&mut chunk.data, k.data);
                returns.buffers.push(spent);
                chunk.offset = k.offset;
                chunk.new_from = new_from;
                chunk.charged += k.charged;
            } else {
                release(k, returns);
            }
        }
        handler.on_data(s, &chunk.as_chunk());
        if s.info.keep {
            st.kept = Some(Kept {
                data: std::mem::take(&mut chunk.data),
                offset: chunk.offset,
                charged: chunk.charged,
            });
        } else {
            returns.released += chunk.charged;
            returns.buffers.push(std::mem::take(&mut chunk.data));
        }
    });
}

fn flow_end<H: Handler>(
    handler: &mut H,
    streams: &mut Streams<H::State>,
    fe: FlowEvent,
    returns: &mut Returns,
) {
    let conn_id = fe.orig.conn_id;
    if fe.update {
        // The connection goes on: its streams' states stay here.
        let (o, r) = (fe.orig_side, fe.orig_side.other());
        let mut orig_state = streams.remove(&(conn_id, o)).unwrap_or_default();
        let mut resp_state = streams.remove(&(conn_id, r)).unwrap_or_default();
        let (orig, resp): (StreamInfo, StreamInfo) = (fe.orig, fe.resp);
        let mut update = FlowEnd {
            key: &fe.key,
            orig_side: fe.orig_side,
            orig: &orig,
            resp: &resp,
            orig_state: &mut orig_state.user,
            resp_state: &mut resp_state.user,
            history: &fe.history,
            first: fe.first,
            last: fe.last,
            update: true,
        };
        handler.on_flow_update(&mut update);
        streams.insert((conn_id, o), orig_state);
        streams.insert((conn_id, r), resp_state);
        return;
    }
    let mut take = |side: Side| {
        let mut st = streams.remove(&(conn_id, side)).unwrap_or_default();
        if let Some(k) = st.kept.take() {
            release(k, returns);
        }
        st.user
    };
    let mut orig_state = take(fe.orig_side);
    let mut resp_state = take(fe.orig_side.other());
    let (orig, resp): (StreamInfo, StreamInfo) = (fe.orig, fe.resp);
    let mut end = FlowEnd {
        key: &fe.key,
        orig_side: fe.orig_side,
        orig: &orig,
        resp: &resp,
        orig_state: &mut orig_state,
        resp_state: &mut resp_state,
        history: &fe.history,
        first: fe.first,
        last: fe.last,
        update: false,
    };
    handler.on_flow_end(&mut end);
}
