//! The last body of recent conversations, for [`crate::resume`]: one entry per conversation,
//! under a key made of who sent it, its protocol and its leading bytes (the fields before
//! `messages` and the first two messages, [`crate::resume::conversation_lead`]), dropped least
//! recently used first beyond a budget in bytes.
//!
//! The key only finds the candidate: resuming compares the bodies themselves, so a collision
//! or two conversations with the same opening cost a cold parse, never a wrong result. The
//! owner is part of the key so that one client's timing never tells whether another sent a
//! body (the result would be the same either way). Keys are hashed with a per-process random
//! seed, so a client cannot aim its bodies at another's entry.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Recent conversations' entries `E`, within a byte budget.
pub struct BodyCache<E> {
    budget: usize,
    seed: RandomState,
    state: Mutex<State<E>>,
}

struct State<E> {
    /// Each key's entry, its last use and its cost in bytes.
    entries: HashMap<u64, (Arc<E>, u64, usize)>,
    /// Keys by last use, oldest first.
    order: BTreeMap<u64, u64>,
    clock: u64,
    bytes: usize,
}

impl<E> BodyCache<E> {
    /// An empty cache holding at most `budget` bytes (0 keeps nothing).
    pub fn new(budget: usize) -> Self {
        Self {
            budget,
            seed: RandomState::new(),
            state: Mutex::new(State {
                entries: HashMap::new(),
                order: BTreeMap::new(),
                clock: 0,
                bytes: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<E>> {
        // Every operation leaves the maps consistent before it can fail: a poisoned lock
        // still holds a valid cache.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key of a conversation: `owner`, `protocol` and the body's `lead`.
    pub fn key(&self, owner: &[u8], protocol: &str, lead: &[u8]) -> u64 {
        self.seed.hash_one((owner, protocol, lead))
    }

    /// The entry under `key`, now the most recently used.
    pub fn get(&self, key: u64) -> Option<Arc<E>> {
        let mut state = self.lock();
        state.clock += 1;
        let now = state.clock;
        let (entry, used, _) = state.entries.get_mut(&key)?;
        let (entry, before) = (Arc::clone(entry), std::mem::replace(used, now));
        state.order.remove(&before);
        state.order.insert(now, key);
        Some(entry)
    }

    /// Keep `entry` under `key` (replacing what was there), costing `cost` bytes, and let go
    /// of the least recently used entries beyond the budget. An entry over half the budget is
    /// not kept (it would empty the cache for one conversation). Returns whether it was, and
    /// the entries it displaced: the caller decides where they are freed (a conversation's
    /// parse is thousands of allocations, not to be freed on a request's way to the engine).
    pub fn put(&self, key: u64, entry: E, cost: usize) -> (bool, Vec<Arc<E>>) {
        let mut state = self.lock();
        let mut displaced: Vec<Arc<E>> = state.remove(key).into_iter().collect();
        if cost > self.budget / 2 {
            return (false, displaced);
        }
        state.clock += 1;
        let now = state.clock;
        state.entries.insert(key, (Arc::new(entry), now, cost));
        state.order.insert(now, key);
        state.bytes += cost;
        while state.bytes > self.budget {
            let Some((_, oldest)) = state.order.pop_first() else {
                break;
            };
            displaced.extend(state.remove(oldest));
        }
        (true, displaced)
    }

    /// The bytes the kept entries cost.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// How many entries are kept.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The byte budget.
    pub fn budget(&self) -> usize {
        self.budget
    }
}

impl<E> State<E> {
    fn remove(&mut self, key: u64) -> Option<Arc<E>> {
        let (entry, used, cost) = self.entries.remove(&key)?;
        self.order.remove(&used);
        self.bytes -= cost;
        Some(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_entries_go_first_beyond_the_budget() {
        let cache = BodyCache::new(100);
        let keys: Vec<u64> = (0..4u8).map(|i| cache.key(b"o", "chat", &[i])).collect();
        for (i, &key) in keys.iter().enumerate().take(3) {
            assert_eq!(cache.put(key, i, 30), (true, vec![]));
        }
        // keys[0] is now the most recent; at 120 bytes the oldest (keys[1]) goes, handed back
        // to be freed by the caller.
        assert_eq!(cache.get(keys[0]).as_deref(), Some(&0));
        assert_eq!(cache.put(keys[3], 3, 30), (true, vec![Arc::new(1)]));
        assert!(cache.get(keys[1]).is_none());
        assert_eq!(cache.get(keys[2]).as_deref(), Some(&2));
        assert_eq!((cache.len(), cache.bytes()), (3, 90));
    }

    #[test]
    fn an_entry_replaces_its_key_and_one_over_half_the_budget_is_not_kept() {
        let cache = BodyCache::new(100);
        let key = cache.key(b"o", "chat", b"lead");
        assert_eq!(cache.put(key, "a", 40), (true, vec![]));
        assert_eq!(cache.put(key, "b", 20), (true, vec![Arc::new("a")]));
        assert_eq!((cache.len(), cache.bytes()), (1, 20));
        // Not kept, and the old entry of its key is gone too (handed back).
        assert_eq!(cache.put(key, "c", 51), (false, vec![Arc::new("b")]));
        assert!(cache.is_empty());
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn keys_differ_by_owner_protocol_and_lead() {
        let cache: BodyCache<()> = BodyCache::new(0);
        let key = cache.key(b"o", "chat", b"lead");
        assert_eq!(key, cache.key(b"o", "chat", b"lead"));
        assert_ne!(key, cache.key(b"p", "chat", b"lead"));
        assert_ne!(key, cache.key(b"o", "messages", b"lead"));
        assert_ne!(key, cache.key(b"o", "chat", b"leaf"));
    }
}
