//! The memory budget of the reviews in flight: every admission or conversion review is charged
//! what it will hold (the buffer for its body as its bytes arrive, then an estimate of its
//! decoded form) before it holds it, and gives it back once its answer is written. A review
//! that finds no room is answered 429 with a Retry-After and the part of its body it held is
//! dropped; one that could not fit even alone is refused with 413.
//!
//! Only a review that holds nothing yet, or whose whole body is in, waits for room (up to the
//! budget's wait). One whose body is still arriving is refused at once when its next piece
//! does not fit: were it to wait, reviews holding parts of their bodies could each wait for
//! room that only the others' completion would free.
//!
//! Why 429 rather than a denying AdmissionReview: an overload is not a verdict on the object,
//! and the API server's webhook client retries a 429 that carries a Retry-After by itself,
//! within the webhook's `timeoutSeconds`, so a short burst costs the write a second rather than
//! failing it. Only when the overload outlasts the timeout does `failurePolicy: Fail` reject
//! the write, as for an unreachable webhook. A denial would be final at once, would name no
//! rule, and has no equivalent for `/convert`, whose failures break reads.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::response::Response;
use http_body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The budget is counted in units of this many bytes (the semaphore counts `u32` permits).
const UNIT: usize = 1024;

/// Bytes of decoded form per body byte, on top of the body itself: a review's strings are
/// copied into the decoded object, its typed form and the answer.
const COPY_FACTOR: usize = 4;
/// Bytes per JSON object: a map node of a decoded object holds up to eleven entries, and even
/// an object of one entry allocates a whole node.
const OBJECT_BYTES: usize = 1100;
/// Bytes per array element or object member (each `,` and `[`): the decoded value's slot.
const ELEMENT_BYTES: usize = 56;
/// Bytes per string, keys included: an allocation with its header.
const STRING_BYTES: usize = 64;

/// What decoding `body` as a review will hold at most, besides the body itself, estimated in
/// one pass over its structure.
///
/// Calibrated on the whole path of one validation (decode, rules, typed decode, answer)
/// against the peak RSS above the body of a process doing nothing else, for reviews of about
/// 3 MiB (measured, estimated): long strings 10.9 and 11.7 MiB; 57,000 tolerations of three
/// string fields 88.4 and 103 MiB; 1.5 million small integers 73.9 and 93.6 MiB; 383,000
/// one-member objects 389 and 458 MiB; a 2.7 MiB ConversionReview of sample GarageClusters
/// 48.1 and 88.7 MiB. The estimate errs high.
pub fn decode_cost(body: &[u8]) -> usize {
    let mut estimate = CostEstimate::default();
    estimate.feed(body);
    estimate.bytes()
}

/// [`decode_cost`] of a body that arrives in pieces: feeding the pieces in order gives the
/// estimate of their concatenation.
#[derive(Clone, Copy, Debug, Default)]
pub struct CostEstimate {
    len: usize,
    objects: usize,
    elements: usize,
    strings: usize,
    in_string: bool,
    escaped: bool,
}

impl CostEstimate {
    /// Counts the structure of the next piece of the body.
    pub fn feed(&mut self, piece: &[u8]) {
        self.len = self.len.saturating_add(piece.len());
        for &byte in piece {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match byte {
                b'"' => {
                    self.in_string = true;
                    self.strings += 1;
                }
                b'{' => self.objects += 1,
                b',' | b'[' => self.elements += 1,
                _ => {}
            }
        }
    }

    /// The estimate for what was fed so far.
    pub fn bytes(&self) -> usize {
        self.len
            .saturating_mul(COPY_FACTOR)
            .saturating_add(self.objects.saturating_mul(OBJECT_BYTES))
            .saturating_add(self.elements.saturating_mul(ELEMENT_BYTES))
            .saturating_add(self.strings.saturating_mul(STRING_BYTES))
    }
}

/// Why a review was not given room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// It needs more than the whole budget.
    TooLarge {
        /// Bytes it needs.
        needed: usize,
        /// The whole budget.
        total: usize,
    },
    /// No room came free within the wait.
    Busy {
        /// Bytes it needs.
        needed: usize,
        /// How long it waited.
        waited: Duration,
    },
}

impl Refusal {
    /// The refusal as said to the client.
    pub fn message(self) -> String {
        const MIB: f64 = 1024.0 * 1024.0;
        match self {
            Refusal::TooLarge { needed, total } => format!(
                "the review would need about {:.1} MiB to decode, more than the webhook's whole \
                 review memory budget of {:.1} MiB; make the object smaller",
                needed as f64 / MIB,
                total as f64 / MIB
            ),
            Refusal::Busy { needed, waited } => format!(
                "the webhook is reviewing as much as its memory budget allows; {:.1} MiB did not \
                 come free within {} ms; retry",
                needed as f64 / MIB,
                waited.as_millis()
            ),
        }
    }
}

/// The shared budget of one server.
#[derive(Debug)]
pub struct Budget {
    units: u32,
    wait: Duration,
    permits: Arc<Semaphore>,
    in_use: AtomicUsize,
    peak: AtomicUsize,
}

fn units(bytes: usize) -> usize {
    bytes.div_ceil(UNIT)
}

impl Budget {
    /// A budget of `total` bytes (rounded down to whole KiB); a review waits up to `wait` for
    /// room.
    pub fn new(total: usize, wait: Duration) -> Arc<Self> {
        let units = u32::try_from(total / UNIT).unwrap_or(u32::MAX);
        Arc::new(Budget {
            units,
            wait,
            permits: Arc::new(Semaphore::new(units as usize)),
            in_use: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        })
    }

    /// The whole budget in bytes.
    pub fn total(&self) -> usize {
        self.units as usize * UNIT
    }

    /// Bytes charged to the reviews in flight now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Acquire) * UNIT
    }

    /// The most bytes ever charged at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire) * UNIT
    }

    /// The permit count of `units` more, or why they can never be had.
    fn count(&self, units: usize) -> Result<u32, Refusal> {
        let too_large = Refusal::TooLarge {
            needed: units.saturating_mul(UNIT),
            total: self.total(),
        };
        match u32::try_from(units) {
            Ok(count) if count <= self.units => Ok(count),
            _ => Err(too_large),
        }
    }

    /// Counts `units` as taken.
    fn taken(&self, units: usize) {
        let now = self.in_use.fetch_add(units, Ordering::AcqRel) + units;
        self.peak.fetch_max(now, Ordering::AcqRel);
    }

    /// Takes `units` more, waiting up to the budget's wait.
    async fn take(&self, units: usize) -> Result<OwnedSemaphorePermit, Refusal> {
        let count = self.count(units)?;
        let acquired =
            tokio::time::timeout(self.wait, self.permits.clone().acquire_many_owned(count)).await;
        match acquired {
            Ok(Ok(permit)) => {
                self.taken(units);
                Ok(permit)
            }
            // The semaphore is never closed; a closed one cannot give room either.
            Ok(Err(_)) | Err(_) => Err(Refusal::Busy {
                needed: units * UNIT,
                waited: self.wait,
            }),
        }
    }

    /// Takes `units` more if they are free now. Permits promised to a waiting review are not
    /// free, so this never jumps the queue.
    fn try_take(&self, units: usize) -> Result<OwnedSemaphorePermit, Refusal> {
        let count = self.count(units)?;
        let permit = self
            .permits
            .clone()
            .try_acquire_many_owned(count)
            .map_err(|_| Refusal::Busy {
                needed: units * UNIT,
                waited: Duration::ZERO,
            })?;
        self.taken(units);
        Ok(permit)
    }

    /// Charges `bytes` to a new review.
    pub async fn charge(self: &Arc<Self>, bytes: usize) -> Result<Charge, Refusal> {
        let mut charge = self.empty_charge();
        charge.grow_to(bytes).await?;
        Ok(charge)
    }

    /// A charge of nothing yet, for a review whose body has not begun to arrive.
    pub fn empty_charge(self: &Arc<Self>) -> Charge {
        Charge {
            budget: self.clone(),
            permit: None,
            units: 0,
        }
    }
}

/// What one review holds of the budget; given back when dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    permit: Option<OwnedSemaphorePermit>,
    units: usize,
}

impl Charge {
    /// Bytes charged.
    pub fn bytes(&self) -> usize {
        self.units * UNIT
    }

    /// Raises the charge to `bytes` in all, waiting up to the budget's wait for room; on
    /// refusal the charge stays as it was.
    pub async fn grow_to(&mut self, bytes: usize) -> Result<(), Refusal> {
        let Some(more) = self.more(bytes)? else {
            return Ok(());
        };
        let permit = self.budget.take(more).await?;
        self.add(more, permit);
        Ok(())
    }

    /// Raises the charge to `bytes` in all if the room is free now, without waiting; on
    /// refusal the charge stays as it was.
    pub fn try_grow_to(&mut self, bytes: usize) -> Result<(), Refusal> {
        let Some(more) = self.more(bytes)? else {
            return Ok(());
        };
        let permit = self.budget.try_take(more)?;
        self.add(more, permit);
        Ok(())
    }

    /// The units to add for `bytes` in all (`None` when already charged that much), or
    /// [`Refusal::TooLarge`] when the whole would exceed the budget.
    fn more(&self, bytes: usize) -> Result<Option<usize>, Refusal> {
        let wanted = units(bytes);
        if wanted <= self.units {
            return Ok(None);
        }
        if wanted > self.budget.units as usize {
            return Err(Refusal::TooLarge {
                needed: wanted * UNIT,
                total: self.budget.total(),
            });
        }
        Ok(Some(wanted - self.units))
    }

    fn add(&mut self, units: usize, more: OwnedSemaphorePermit) {
        match self.permit.as_mut() {
            Some(permit) => permit.merge(more),
            None => self.permit = Some(more),
        }
        self.units += units;
    }

    /// `response` with its body holding this charge until the body is written out.
    pub fn hold_until_sent(self, response: Response) -> Response {
        response.map(|body| {
            Body::new(Charged {
                inner: body,
                _charge: self,
            })
        })
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        // Counted down before the permits go back, so the count never exceeds what is held.
        self.budget.in_use.fetch_sub(self.units, Ordering::AcqRel);
        self.permit.take();
    }
}

/// A response body that keeps its review's charge until hyper has taken the last frame.
struct Charged {
    inner: Body,
    _charge: Charge,
}

impl HttpBody for Charged {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1024 * 1024;

    #[test]
    fn the_estimate_follows_the_structure_not_the_bytes_inside_strings() {
        let plain = format!("{{\"a\":\"{}\"}}", "x".repeat(MIB));
        let cost = decode_cost(plain.as_bytes());
        assert!((4 * MIB..5 * MIB).contains(&cost), "{cost}");
        // Braces and commas inside a string are text, escaped quotes included.
        let braces = format!("{{\"a\":\"\\\"{}\"}}", "{,[".repeat(MIB / 3));
        assert!(decode_cost(braces.as_bytes()) < 5 * MIB);
        // A megabyte of one-member objects costs two orders of magnitude more.
        let tiny = format!("[{}{{}}]", "{\"a\":1},".repeat(MIB / 8));
        let cost = decode_cost(tiny.as_bytes());
        assert!((100 * MIB..200 * MIB).contains(&cost), "{cost}");
    }

    #[test]
    fn the_estimate_of_pieces_is_the_estimate_of_the_whole() {
        let body = br#"{"a":"x\"{,[","b":[1,2,{"c":"\\"}],"d":{"e":"]"}}"#;
        let whole = decode_cost(body);
        for split in 0..=body.len() {
            for step in [1, 3, 7] {
                let mut estimate = CostEstimate::default();
                estimate.feed(&body[..split]);
                for piece in body[split..].chunks(step) {
                    estimate.feed(piece);
                }
                assert_eq!(estimate.bytes(), whole, "split at {split}, then by {step}");
            }
        }
    }

    #[tokio::test]
    async fn charges_never_exceed_the_budget_and_come_back_when_dropped() {
        let budget = Budget::new(10 * MIB, Duration::from_millis(50));
        assert_eq!(budget.total(), 10 * MIB);
        let mut a = budget.charge(4 * MIB).await.unwrap();
        let b = budget.charge(4 * MIB).await.unwrap();
        assert_eq!(budget.in_use(), 8 * MIB);
        // No room: refused after the wait, and the charge held stays as it was.
        let refused = a.grow_to(7 * MIB).await.unwrap_err();
        assert!(matches!(refused, Refusal::Busy { .. }), "{refused:?}");
        assert_eq!(a.bytes(), 4 * MIB);
        assert!(matches!(
            budget.charge(3 * MIB).await.unwrap_err(),
            Refusal::Busy { .. }
        ));
        // More than the whole budget is refused at once.
        let started = std::time::Instant::now();
        let too_large = a.grow_to(11 * MIB).await.unwrap_err();
        assert!(matches!(too_large, Refusal::TooLarge { .. }));
        assert!(started.elapsed() < Duration::from_millis(50));
        assert!(too_large.message().contains("make the object smaller"));
        drop(b);
        a.grow_to(6 * MIB).await.unwrap();
        assert_eq!(budget.in_use(), 6 * MIB);
        drop(a);
        assert_eq!(budget.in_use(), 0);
        assert_eq!(budget.peak(), 8 * MIB);
    }

    #[tokio::test]
    async fn a_waiting_charge_gets_room_when_another_is_dropped() {
        let budget = Budget::new(4 * MIB, Duration::from_secs(5));
        let held = budget.charge(3 * MIB).await.unwrap();
        let waiting = tokio::spawn({
            let budget = budget.clone();
            async move { budget.charge(2 * MIB).await.map(|c| c.bytes()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(held);
        assert_eq!(waiting.await.unwrap().unwrap(), 2 * MIB);
        assert!(budget.peak() <= budget.total());
    }

    #[tokio::test]
    async fn growing_without_waiting_is_refused_at_once_and_never_jumps_the_queue() {
        // A wait long enough that any waiting would time the test out.
        let budget = Budget::new(4 * MIB, Duration::from_secs(600));
        let mut held = budget.charge(2 * MIB).await.unwrap();
        held.try_grow_to(3 * MIB).unwrap();
        assert_eq!(budget.in_use(), 3 * MIB);
        let mut other = budget.empty_charge();
        let refused = other.try_grow_to(2 * MIB).unwrap_err();
        assert_eq!(
            refused,
            Refusal::Busy {
                needed: 2 * MIB,
                waited: Duration::ZERO
            }
        );
        assert!(matches!(
            other.try_grow_to(5 * MIB),
            Err(Refusal::TooLarge { .. })
        ));
        assert_eq!(other.bytes(), 0);
        // A review waiting for 2 MiB is promised the free 1 MiB: a review that does not wait
        // cannot take it from under it.
        let waiting = tokio::spawn({
            let budget = budget.clone();
            async move { budget.charge(2 * MIB).await.map(|c| c.bytes()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(other.try_grow_to(MIB).is_err(), "jumped the queue");
        drop(held);
        assert_eq!(waiting.await.unwrap().unwrap(), 2 * MIB);
        assert_eq!(budget.in_use(), 0);
    }

    #[tokio::test]
    async fn a_response_keeps_its_charge_until_its_body_is_read() {
        let budget = Budget::new(4 * MIB, Duration::from_millis(10));
        let charge = budget.charge(MIB).await.unwrap();
        let response = charge.hold_until_sent(Response::new(Body::from("answer")));
        assert_eq!(budget.in_use(), MIB);
        assert_eq!(response.body().size_hint().exact(), Some(6));
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"answer");
        assert_eq!(budget.in_use(), 0);
    }
}
