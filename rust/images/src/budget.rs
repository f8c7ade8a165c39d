//! The process-wide memory budget for decoding: every decode first takes the bytes its image
//! may allocate ([`crate::preprocess::allocation_limit`], from the header) out of one shared
//! budget, and waits while the budget is spent. So however many requests decode at once, the
//! decoders' memory stays within [`DECODE_MEMORY`]; a need larger than the whole budget takes
//! all of it (it runs alone rather than never).
//!
//! A resolve call takes what all its images need before preprocessing them in parallel, in the
//! calling thread: waiting never holds a thread of the shared parallel pool.

use std::sync::{Condvar, Mutex, PoisonError};

/// Bytes that decoders may hold at once, process-wide: two images at the largest size accepted
/// (8,192 pixels a side, 8 bytes a pixel).
pub const DECODE_MEMORY: u64 = 1 << 30;

/// A budget of bytes shared by threads.
#[derive(Debug)]
pub struct Budget {
    total: u64,
    free: Mutex<u64>,
    freed: Condvar,
}

/// Bytes taken from a [`Budget`], given back when dropped.
#[derive(Debug)]
pub struct Taken<'a> {
    budget: &'a Budget,
    bytes: u64,
}

impl Budget {
    pub const fn new(total: u64) -> Self {
        Self {
            total,
            free: Mutex::new(total),
            freed: Condvar::new(),
        }
    }

    /// Take `bytes` (at most the whole budget), waiting until they are free.
    pub fn take(&self, bytes: u64) -> Taken<'_> {
        let bytes = bytes.min(self.total);
        // A poisoned lock means a panic while holding it, which the crate's lints rule out;
        // the count itself is whole, so keep using it.
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        while *free < bytes {
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *free -= bytes;
        Taken {
            budget: self,
            bytes,
        }
    }

    /// Bytes not taken now.
    pub fn free(&self) -> u64 {
        *self.free.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        let mut free = self
            .budget
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *free += self.bytes;
        self.budget.freed.notify_all();
    }
}

/// The budget every decode of this process shares.
pub static DECODING: Budget = Budget::new(DECODE_MEMORY);

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn holders_never_exceed_the_budget() {
        let budget = Budget::new(100);
        let held = AtomicU64::new(0);
        let most = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for need in [30, 60, 90, 40, 100, 10, 250] {
                let (budget, held, most) = (&budget, &held, &most);
                scope.spawn(move || {
                    for _ in 0..50 {
                        let taken = budget.take(need);
                        let now = held.fetch_add(taken.bytes, Ordering::SeqCst) + taken.bytes;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        held.fetch_sub(taken.bytes, Ordering::SeqCst);
                    }
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= 100);
        assert_eq!(budget.free(), 100);
    }
}
