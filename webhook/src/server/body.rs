//! Reading a review's body within the size limit, the memory budget and a deadline.
//!
//! The body is charged to the budget ([`super::budget`]) as its bytes arrive, never by the
//! length it declares: a caller that declares 3 MiB and sends a byte holds one small block,
//! not 3 MiB. And it must arrive by [`Limits::body_deadline`] (2 s plus its length at 1 MiB/s
//! by default), or the request is answered 408 and what it held is given back, so a caller
//! that sends most of a body and stops holds its charge for seconds, not for the 30 s request
//! timeout.
//!
//! While it arrives, a body is copied into blocks of [`BLOCK`] bytes, each charged before it
//! is allocated: what a partial body occupies never exceeds its charge, and blocks of one size
//! are reused by the allocator as they come and go. Once the whole body is in, it is charged
//! what decoding it will take ([`super::budget::decode_cost`]), which covers copying it into
//! the one buffer of its exact length it is decoded from (a body of one block is that buffer
//! already). Buffers of the declared length allocated as bodies begin, or buffers doubled as
//! they grow, spread far more heap than is charged: with 48 clients sending 2.9 MiB reviews at
//! once (`tests/review_budget.rs`) the binary then peaked at up to 159 MiB, over its 128 MiB
//! limit, against 95 to 106 MiB with blocks and 88 to 95 MiB for bodies charged their declared
//! length before being read.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use futures::{Stream, StreamExt};
use tokio::time::Instant;

use super::budget::{Budget, Charge, CostEstimate, Refusal};
use super::limits::Limits;

/// The size of the blocks a body is read into, and so the most a caller holds for the first
/// byte of a body: a typical review (10-50 KiB) takes one or two.
pub const BLOCK: usize = 32 * 1024;

/// The capacity of the next block of a body of which `received` bytes are in: a whole
/// [`BLOCK`], or what is left of the declared length when less, so that an honest length ends
/// in blocks of exactly that many bytes (and a body of one block needs no copy).
pub fn next_block(received: usize, declared: Option<usize>) -> usize {
    match declared {
        Some(declared) if declared > received => (declared - received).min(BLOCK),
        _ => BLOCK,
    }
}

/// Why a body was not read.
#[derive(Debug)]
pub enum BodyError {
    /// Longer than the size limit.
    TooLong {
        /// The limit in bytes.
        limit: usize,
    },
    /// The connection failed while the body arrived.
    Unreadable(String),
    /// The budget had no room (for the next block, what was read is dropped and the rest
    /// read and thrown away, so that the refusal reaches the client; or for decoding it).
    Refused(Refusal),
    /// The body had not arrived by its deadline.
    TimedOut {
        /// The time it had.
        allowed: std::time::Duration,
    },
}

/// A body as it arrives: full blocks, the block being filled, and its estimated decode cost.
#[derive(Default)]
struct Blocks {
    full: Vec<Vec<u8>>,
    current: Vec<u8>,
    len: usize,
    cost: CostEstimate,
}

/// Reads `body` (which declares `declared` bytes, if anything) within the size limit, the
/// deadline and `budget`, and charges it what decoding it will take. Returns the body in one
/// buffer and its charge, which must be held until the answer is written.
pub async fn receive(
    body: Body,
    declared: Option<usize>,
    limits: &Limits,
    budget: &Arc<Budget>,
) -> Result<(Bytes, Charge), BodyError> {
    let allowed = limits.body_deadline(declared);
    let deadline = Instant::now() + allowed;
    let limit = limits.max_body_bytes;
    let mut frames = body.into_data_stream();
    let mut charge = budget.empty_charge();
    let mut blocks = Blocks::default();
    let filled = tokio::time::timeout_at(
        deadline,
        fill(&mut frames, &mut blocks, &mut charge, limit, declared),
    )
    .await;
    match filled {
        Ok(Ok(())) => {}
        Ok(Err(BodyError::Refused(refusal))) => {
            // Give the room back before reading the rest, which is only thrown away.
            drop(blocks);
            drop(charge);
            let _ = tokio::time::timeout_at(deadline, discard(&mut frames, limit)).await;
            return Err(BodyError::Refused(refusal));
        }
        Ok(Err(error)) => return Err(error),
        Err(_) => return Err(BodyError::TimedOut { allowed }),
    }
    // The blocks stay charged while they are copied out, and the decode cost (at least four
    // times the body) covers the copy; the whole body is in, so waiting for room is safe.
    let needed = charge.bytes().saturating_add(blocks.cost.bytes());
    charge.grow_to(needed).await.map_err(BodyError::Refused)?;
    Ok((blocks.join(), charge))
}

/// Copies `frames` into `blocks`, charging each block before it is allocated.
async fn fill<S, E>(
    frames: &mut S,
    blocks: &mut Blocks,
    charge: &mut Charge,
    limit: usize,
    declared: Option<usize>,
) -> Result<(), BodyError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    // What the blocks allocated so far hold; `charge.bytes()` rounds it up to the budget's
    // unit.
    let mut allocated = 0usize;
    while let Some(frame) = frames.next().await {
        let frame = frame.map_err(|e| BodyError::Unreadable(e.to_string()))?;
        if blocks.len.saturating_add(frame.len()) > limit {
            return Err(BodyError::TooLong { limit });
        }
        blocks.cost.feed(&frame);
        let mut rest = &frame[..];
        while !rest.is_empty() {
            if blocks.current.len() == blocks.current.capacity() {
                let size = next_block(blocks.len, declared);
                // A review that holds nothing yet may wait for room, as any new review does;
                // one that holds part of its body may not (see the budget's module comment).
                let charged = if allocated == 0 {
                    charge.grow_to(size).await
                } else {
                    charge.try_grow_to(allocated + size)
                };
                charged.map_err(BodyError::Refused)?;
                allocated += size;
                let full = std::mem::replace(&mut blocks.current, Vec::with_capacity(size));
                if !full.is_empty() {
                    blocks.full.push(full);
                }
            }
            let room = blocks.current.capacity() - blocks.current.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            blocks.current.extend_from_slice(now);
            blocks.len += now.len();
            rest = later;
        }
    }
    Ok(())
}

impl Blocks {
    /// The body in one buffer of its length, each block freed once copied.
    fn join(mut self) -> Bytes {
        if self.full.is_empty() {
            return Bytes::from(self.current);
        }
        let mut body = Vec::with_capacity(self.len);
        for block in self.full.drain(..) {
            body.extend_from_slice(&block);
        }
        body.extend_from_slice(&self.current);
        Bytes::from(body)
    }
}

/// Reads and discards up to `limit` bytes of `frames`, one frame at a time, so that a refusal
/// sent before the body was read reaches the client instead of a reset connection.
async fn discard<S, E>(frames: &mut S, limit: usize)
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    let mut seen = 0usize;
    while let Some(Ok(frame)) = frames.next().await {
        seen = seen.saturating_add(frame.len());
        if seen > limit {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::budget::decode_cost;
    use super::*;

    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;

    #[test]
    fn blocks_are_whole_or_what_is_left_of_the_declared_length() {
        for (case, received, declared, block) in [
            ("first of a large body", 0, Some(3 * MIB), BLOCK),
            ("a small body", 0, Some(2 * KIB), 2 * KIB),
            ("no length", 0, None, BLOCK),
            ("no length, later", 5 * BLOCK, None, BLOCK),
            ("the rest of a body", 3 * BLOCK, Some(3 * BLOCK + 100), 100),
            ("past the declared length", 2 * KIB, Some(2 * KIB), BLOCK),
        ] {
            assert_eq!(next_block(received, declared), block, "{case}");
        }
    }

    /// A body whose frames `sender` feeds.
    fn channel_body() -> (tokio::sync::mpsc::Sender<Result<Bytes, String>>, Body) {
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, String>>(4);
        let stream = futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|item| (item, receiver))
        });
        (sender, Body::from_stream(stream))
    }

    #[tokio::test]
    async fn a_body_is_charged_as_it_arrives_and_given_back_at_its_deadline() {
        let budget = Budget::new(10 * MIB, Duration::from_secs(1));
        let limits = Limits {
            body_timeout_base: Duration::from_millis(500),
            min_body_bytes_per_second: 1 << 40,
            ..Limits::default()
        };
        let (sender, body) = channel_body();
        let reading = tokio::spawn({
            let budget = budget.clone();
            async move { receive(body, Some(3 * MIB), &limits, &budget).await }
        });
        sender.send(Ok(Bytes::from_static(b"{"))).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(budget.in_use(), BLOCK, "one byte is charged one block");
        sender
            .send(Ok(Bytes::from(vec![b' '; 100 * KIB])))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(
            budget.in_use(),
            4 * BLOCK,
            "100 KiB and a byte fill four blocks"
        );
        // The rest never comes: cut off at the deadline, the charge given back.
        let error = reading.await.unwrap().unwrap_err();
        assert!(
            matches!(error, BodyError::TimedOut { allowed } if allowed == limits.body_deadline(Some(3 * MIB))),
            "{error:?}"
        );
        assert_eq!(budget.in_use(), 0);
        drop(sender);
    }

    #[tokio::test]
    async fn a_block_without_room_is_refused_at_once_and_the_body_given_back() {
        // The wait is long; a review holding part of its body must not use it.
        let budget = Budget::new(MIB, Duration::from_secs(60));
        let held = budget.charge(MIB - 2 * BLOCK).await.unwrap();
        let limits = Limits::default();
        let (sender, body) = channel_body();
        for _ in 0..3 {
            sender
                .send(Ok(Bytes::from(vec![b' '; BLOCK])))
                .await
                .unwrap();
        }
        drop(sender);
        let error = tokio::time::timeout(
            Duration::from_secs(5),
            receive(body, Some(3 * MIB), &limits, &budget),
        )
        .await
        .expect("a review holding part of its body waited for room")
        .unwrap_err();
        assert!(
            matches!(error, BodyError::Refused(Refusal::Busy { .. })),
            "{error:?}"
        );
        assert_eq!(budget.in_use(), MIB - 2 * BLOCK);
        drop(held);
        assert_eq!(budget.in_use(), 0);
    }

    #[tokio::test]
    async fn a_whole_body_ends_in_one_buffer_charged_its_decoding() {
        let budget = Budget::new(10 * MIB, Duration::from_secs(1));
        let limits = Limits::default();
        for pieces in [
            vec![b"{\"a\": [1, 2]}".to_vec()],
            vec![vec![b'a'; 10], vec![b'b'; 40 * KIB], vec![b'c'; 300 * KIB]],
        ] {
            let whole = pieces.concat();
            let (sender, body) = channel_body();
            let feeding = tokio::spawn(async move {
                for piece in pieces {
                    sender.send(Ok(Bytes::from(piece))).await.unwrap();
                }
            });
            let (bytes, charge) = receive(body, Some(whole.len()), &limits, &budget)
                .await
                .unwrap();
            feeding.await.unwrap();
            assert_eq!(&bytes[..], &whole[..]);
            // The body's blocks, exactly its length, and what decoding it will take.
            let blocks = whole.len().div_ceil(KIB) * KIB;
            let expected = (blocks + decode_cost(&whole)).div_ceil(KIB) * KIB;
            assert_eq!(charge.bytes(), expected);
            drop(charge);
            assert_eq!(budget.in_use(), 0);
        }
    }

    #[tokio::test]
    async fn a_body_without_a_length_is_read_in_whole_blocks() {
        let budget = Budget::new(10 * MIB, Duration::from_secs(1));
        let limits = Limits::default();
        let (sender, body) = channel_body();
        sender
            .send(Ok(Bytes::from(vec![b'x'; BLOCK + 1])))
            .await
            .unwrap();
        drop(sender);
        let (bytes, charge) = receive(body, None, &limits, &budget).await.unwrap();
        assert_eq!(bytes.len(), BLOCK + 1);
        assert_eq!(
            charge.bytes(),
            2 * BLOCK + decode_cost(&bytes).div_ceil(KIB) * KIB
        );
    }

    #[tokio::test]
    async fn a_body_past_the_limit_is_refused() {
        let budget = Budget::new(10 * MIB, Duration::from_secs(1));
        let limits = Limits {
            max_body_bytes: 100 * KIB,
            ..Limits::default()
        };
        let body = Body::from(vec![b' '; 100 * KIB + 1]);
        let error = receive(body, None, &limits, &budget).await.unwrap_err();
        assert!(
            matches!(error, BodyError::TooLong { limit } if limit == 100 * KIB),
            "{error:?}"
        );
        assert_eq!(budget.in_use(), 0);
    }

    #[tokio::test]
    async fn a_body_that_can_never_be_decoded_in_the_budget_is_too_large() {
        let budget = Budget::new(MIB, Duration::from_secs(1));
        let limits = Limits::default();
        let body = Body::from(vec![b' '; 300 * KIB]);
        let error = receive(body, Some(300 * KIB), &limits, &budget)
            .await
            .unwrap_err();
        assert!(
            matches!(error, BodyError::Refused(Refusal::TooLarge { .. })),
            "{error:?}"
        );
        assert_eq!(budget.in_use(), 0);
    }
}
