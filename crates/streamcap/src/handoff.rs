//! Channel operations for two threads that hand work to each other, each
//! on its own core: they poll for a short while before they sleep.
//!
//! A thread blocked on a channel sleeps, and the other thread must then
//! wake it: a `futex` call whose wake-up is an interrupt to the other CPU
//! (a VM exit on a virtual machine whose idle CPUs halt at once, as this
//! project's host does) and whose sleeper takes tens of microseconds to
//! run again. Where threads hand over a buffer every 100–200 µs, as the
//! read-ahead thread and the worker do (a 1 MiB buffer of a capture file)
//! or a worker and its output's writer thread (a batch of 512 records),
//! that cost is of the order of the work itself. Polling for up to [`SPIN`]
//! first catches the usual wait, which is shorter, without a wake-up; a
//! longer wait (a slow pipe, a slow reader of the output) sleeps.
//!
//! Polling must not take a CPU that other work needs: between two polls
//! the poller yields (`sched_yield`), and once it finds it was kept off its
//! CPU for more than [`PREEMPTED`] (another thread ran there, perhaps the
//! very thread it waits for), it sleeps at once. A bare spin loop gains
//! as much on an idle machine but, with one busy process beside it, makes
//! `streams` on the campus trace take 0.72 s instead of 0.37 s; yielding
//! and giving up costs 0–8 % there.
//!
//! Both functions are for bounded channels of capacity 1 or more (with a
//! rendezvous channel, capacity 0, polling never meets the other end and
//! they end up blocking, as `recv` and `send` would).
//!
//! Measured on a 2-core VM (interleaved runs against sleeping at once):
//! with the read-ahead thread and the worker polling, `streams --delivery
//! segments` on the 1.6 GB campus trace took 0.239 s instead of 0.259 s,
//! and in a slow phase of the host `flows` took 0.246 s instead of
//! 0.320 s; the worker no longer woke the read-ahead thread 1,541 times.
//! The price is CPU time on a core that would otherwise idle (about 0.09 s
//! there).

use std::sync::mpsc::{Receiver, RecvError, SendError, SyncSender, TryRecvError, TrySendError};
use std::time::{Duration, Instant};

/// How long [`recv_soon`] and [`send_soon`] poll before they sleep.
pub const SPIN: Duration = Duration::from_micros(200);

/// A poll that took longer than this means the thread was made to wait
/// for its CPU: other work wants it, so polling on would take the CPU from
/// it (the other end of the channel, perhaps) and the poller sleeps.
pub const PREEMPTED: Duration = Duration::from_micros(20);

/// Polls `attempt` with `held` (which it gives back while it must wait),
/// giving the CPU to any other runnable thread between two polls, until it
/// succeeds, [`SPIN`] has passed or the thread was kept off its CPU; then
/// hands what it holds to `block`.
fn poll_then<H, T>(
    mut held: H,
    mut attempt: impl FnMut(H) -> Result<T, H>,
    block: impl FnOnce(H) -> T,
) -> T {
    let start = Instant::now();
    let mut last = start;
    loop {
        held = match attempt(held) {
            Ok(v) => return v,
            Err(h) => h,
        };
        std::thread::yield_now();
        let now = Instant::now();
        if now - last > PREEMPTED || now - start > SPIN {
            return block(held);
        }
        last = now;
    }
}

/// `rx.recv()`, polling the channel for up to [`SPIN`] before sleeping on
/// it (sooner if another thread wants the CPU). Same result as `recv`: the
/// next value, or an error once the channel is empty and every sender is
/// gone.
pub fn recv_soon<T>(rx: &Receiver<T>) -> Result<T, RecvError> {
    poll_then(
        (),
        |()| match rx.try_recv() {
            Ok(v) => Ok(Ok(v)),
            Err(TryRecvError::Disconnected) => Ok(Err(RecvError)),
            Err(TryRecvError::Empty) => Err(()),
        },
        |()| rx.recv(),
    )
}

/// `tx.send(v)`, polling for room for up to [`SPIN`] before sleeping until
/// there is some (sooner if another thread wants the CPU). Same result as
/// `send`: sent, or the value back once the receiver is gone.
pub fn send_soon<T>(tx: &SyncSender<T>, v: T) -> Result<(), SendError<T>> {
    poll_then(
        v,
        |v| match tx.try_send(v) {
            Ok(()) => Ok(Ok(())),
            Err(TrySendError::Disconnected(back)) => Ok(Err(SendError(back))),
            Err(TrySendError::Full(back)) => Err(back),
        },
        |v| tx.send(v),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    #[test]
    fn poll_then_polls_without_blocking_until_it_succeeds() {
        // Success on the fifth poll: `block` is not called, and what the
        // attempts hold passes through untouched. (On a loaded machine a
        // poll may be kept off its CPU for more than `PREEMPTED`; then
        // `block` is called, with what was held, and no more polls follow.)
        let mut polls = 0;
        let got = poll_then(
            String::from("held"),
            |h| {
                polls += 1;
                if polls == 5 {
                    Ok(h + " and done")
                } else {
                    Err(h)
                }
            },
            |h| h + " and blocked",
        );
        if got.ends_with("blocked") {
            assert!(polls < 5, "{polls}");
            assert_eq!(got, "held and blocked");
        } else {
            assert_eq!((polls, got.as_str()), (5, "held and done"));
        }
    }

    #[test]
    fn poll_then_blocks_once_after_polling_in_vain() {
        let start = Instant::now();
        let mut polls = 0;
        let mut blocked = 0;
        let got = poll_then(
            7,
            |h| {
                polls += 1;
                Err::<u32, _>(h)
            },
            |h| {
                blocked += 1;
                h + 1
            },
        );
        assert_eq!((got, blocked), (8, 1));
        assert!(polls >= 1);
        // It gave up after SPIN at most (sooner if it was kept off its CPU),
        // not at once and not forever.
        assert!(start.elapsed() < SPIN * 50, "{:?}", start.elapsed());
    }

    #[test]
    fn recv_soon_waits_polls_and_sleeps_like_recv() {
        // Ready at once.
        let (tx, rx) = sync_channel(1);
        tx.send(1).unwrap();
        assert_eq!(recv_soon(&rx), Ok(1));
        // Sent while polling, and long after the polling stopped (asleep).
        for delay in [Duration::from_micros(50), SPIN * 20] {
            let (tx, rx) = sync_channel(1);
            let sender = std::thread::spawn(move || {
                std::thread::sleep(delay);
                tx.send(2).unwrap();
            });
            assert_eq!(recv_soon(&rx), Ok(2), "sent after {delay:?}");
            sender.join().unwrap();
        }
        // The sender gone: an error, at once or after the polling.
        let (tx, rx) = sync_channel::<u8>(1);
        drop(tx);
        assert_eq!(recv_soon(&rx), Err(RecvError));
        let (tx, rx) = sync_channel::<u8>(1);
        let dropper = std::thread::spawn(move || {
            std::thread::sleep(SPIN * 5);
            drop(tx);
        });
        assert_eq!(recv_soon(&rx), Err(RecvError));
        dropper.join().unwrap();
    }

    #[test]
    fn send_soon_waits_for_room_polling_then_asleep() {
        // Room at once.
        let (tx, rx) = sync_channel(1);
        assert_eq!(send_soon(&tx, 1), Ok(()));
        // Full: room made while polling, and long after the polling stopped
        // (asleep); values keep their order.
        let taker = std::thread::spawn(move || {
            let mut got = Vec::new();
            for delay in [Duration::from_micros(50), SPIN * 20] {
                std::thread::sleep(delay);
                got.push(rx.recv().unwrap());
            }
            got.push(rx.recv().unwrap());
            (got, rx)
        });
        assert_eq!(send_soon(&tx, 2), Ok(()));
        assert_eq!(send_soon(&tx, 3), Ok(()));
        let (got, rx) = taker.join().unwrap();
        assert_eq!(got, [1, 2, 3]);
        // The receiver gone: the value comes back, at once or after polling.
        drop(rx);
        assert_eq!(send_soon(&tx, 7), Err(SendError(7)));
        let (tx, rx) = sync_channel(1);
        tx.send(0).unwrap();
        let dropper = std::thread::spawn(move || {
            std::thread::sleep(SPIN * 5);
            drop(rx);
        });
        assert_eq!(send_soon(&tx, 8), Err(SendError(8)));
        dropper.join().unwrap();
    }
}
