//! Memoized prompt gaps. An agent conversation is re-encoded on every turn with a prompt
//! that only grew; caching each gap's ids by its exact text makes a re-encode cost only the
//! new gaps. Keys are the gap texts themselves (no hash-only keys, so no collision can
//! return another text's ids).
//!
//! Bounded by a byte budget (text plus ids) in two generations: entries are added to the
//! current one; when it exceeds half the budget it becomes the previous one and the old
//! previous is dropped. A hit in the previous generation moves the entry back to current.
//! Small gaps are not cached: encoding them costs less than the bookkeeping; nor are huge
//! ones (see [`MAX_CACHED_GAP`]).

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

use hashbrown::HashTable;

/// Gaps shorter than this many bytes are encoded every time.
pub(crate) const MIN_CACHED_GAP: usize = 256;

/// Gaps longer than this are encoded every time too: hashing and copying one costs
/// milliseconds on the request's one-threaded path (a 1M-token message's gap is 4 MB),
/// and a prompt that is re-sent with it is served by the prefix cache anyway.
pub(crate) const MAX_CACHED_GAP: usize = 1 << 20;

/// Gap texts hashed by foldhash, not the standard SipHash (a fresh conversation's gaps are
/// a megabyte or more: SipHash took ~4% of bench (a)'s request). Its seed is random per
/// process, so texts cannot be made to collide without knowing it.
pub(crate) struct GapCache {
    budget: usize,
    hasher: foldhash::fast::RandomState,
    generations: Mutex<Generations>,
}

/// A gap text's hash, computed once per gap: the look in each generation, the insert and
/// any later growth of a table use it instead of hashing the text again.
#[derive(Clone, Copy)]
pub(crate) struct GapHash(u64);

struct Entry {
    hash: u64,
    text: Box<str>,
    ids: Arc<[u32]>,
}

#[derive(Default)]
struct Generations {
    current: HashTable<Entry>,
    current_bytes: usize,
    previous: HashTable<Entry>,
}

fn cost(text: &str, ids: &[u32]) -> usize {
    text.len()
        .saturating_add(ids.len().saturating_mul(std::mem::size_of::<u32>()))
}

impl GapCache {
    /// A cache holding at most about `budget` bytes of gap text and ids.
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            budget,
            hasher: foldhash::fast::RandomState::default(),
            generations: Mutex::new(Generations::default()),
        }
    }

    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    fn lock(&self) -> MutexGuard<'_, Generations> {
        // A panic elsewhere while holding the lock leaves the tables consistent (each
        // operation is a single insert or remove), so a poisoned lock is still usable.
        self.generations
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `text`'s hash, for [`GapCache::get`] and [`GapCache::insert`].
    pub(crate) fn hash(&self, text: &str) -> GapHash {
        GapHash(self.hasher.hash_one(text))
    }

    pub(crate) fn get(&self, hash: GapHash, text: &str) -> Option<Arc<[u32]>> {
        let GapHash(hash) = hash;
        let is_text = |entry: &Entry| entry.hash == hash && *entry.text == *text;
        let mut generations = self.lock();
        if let Some(entry) = generations.current.find(hash, is_text) {
            return Some(Arc::clone(&entry.ids));
        }
        let (entry, _) = generations
            .previous
            .find_entry(hash, is_text)
            .ok()?
            .remove();
        let ids = Arc::clone(&entry.ids);
        generations.insert(entry, self.budget);
        Some(ids)
    }

    pub(crate) fn insert(&self, hash: GapHash, text: &str, ids: Arc<[u32]>) {
        if cost(text, &ids) > self.budget / 2 {
            return;
        }
        let entry = Entry {
            hash: hash.0,
            text: text.into(),
            ids,
        };
        self.lock().insert(entry, self.budget);
    }

    /// Number of cached gaps (both generations).
    pub(crate) fn len(&self) -> usize {
        let generations = self.lock();
        generations.current.len() + generations.previous.len()
    }
}

impl Generations {
    fn insert(&mut self, entry: Entry, budget: usize) {
        let added = cost(&entry.text, &entry.ids);
        if self.current_bytes.saturating_add(added) > budget / 2 {
            self.previous = std::mem::take(&mut self.current);
            self.current_bytes = 0;
        }
        let is_text = |kept: &Entry| kept.hash == entry.hash && kept.text == entry.text;
        if self.current.find(entry.hash, is_text).is_none() {
            self.current_bytes = self.current_bytes.saturating_add(added);
            self.current
                .insert_unique(entry.hash, entry, |kept| kept.hash);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::GapCache;

    fn ids(n: u32) -> std::sync::Arc<[u32]> {
        (0..n).collect::<Vec<u32>>().into()
    }

    fn get(cache: &GapCache, text: &str) -> Option<std::sync::Arc<[u32]>> {
        cache.get(cache.hash(text), text)
    }

    #[test]
    fn hits_return_the_stored_ids() {
        let cache = GapCache::new(1 << 20);
        cache.insert(cache.hash("alpha"), "alpha", ids(3));
        assert_eq!(
            cache.get(cache.hash("alpha"), "alpha").as_deref(),
            Some(&[0, 1, 2][..])
        );
        assert_eq!(cache.get(cache.hash("beta"), "beta"), None);
    }

    #[test]
    fn generations_bound_the_size_and_keep_recent_entries() {
        // Budget 200: a generation holds up to 100 bytes; each entry costs 10 + 4 * 5 = 30.
        let cache = GapCache::new(200);
        let texts: Vec<String> = (0..20).map(|i| format!("text-{i:05}")).collect();
        for text in &texts {
            cache.insert(cache.hash(text), text, ids(5));
            assert!(get(&cache, text).is_some(), "just inserted {text}");
            assert!(cache.len() <= 6, "{} entries", cache.len());
        }
        assert!(
            get(&cache, &texts[0]).is_none(),
            "oldest entries are dropped"
        );
        assert!(get(&cache, &texts[19]).is_some());
    }

    #[test]
    fn entries_larger_than_a_generation_are_not_kept() {
        let cache = GapCache::new(64);
        cache.insert(cache.hash("big"), "big", ids(100));
        assert_eq!(cache.len(), 0);
    }
}
