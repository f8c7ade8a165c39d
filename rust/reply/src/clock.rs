//! The one clock of the way back: Chat's `created` and Responses' `created_at` and
//! `completed_at` are Unix seconds read here (a Messages reply reports no time). The replay
//! tests mask these fields; nothing else in a reply depends on the clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
