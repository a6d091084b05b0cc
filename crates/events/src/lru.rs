//! A size-bounded least-recently-used map (`k8s.io/utils/lru`, groupcache's `lru.Cache`):
//! `get` and `add` make an entry the most recent, `add` evicts the least recent one when
//! the cache holds more than its size.

use std::collections::{BTreeMap, HashMap};

/// LRU cache of `V` by string key.
#[derive(Debug)]
pub struct LruCache<V> {
    max_entries: usize,
    tick: u64,
    entries: HashMap<String, (V, u64)>,
    order: BTreeMap<u64, String>,
}

impl<V> LruCache<V> {
    /// A cache of at most `max_entries` entries (`lru.New`).
    pub fn new(max_entries: usize) -> Self {
        Self {
            max_entries,
            tick: 0,
            entries: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    fn touch(&mut self, key: &str) {
        self.tick += 1;
        let tick = self.tick;
        if let Some((_, t)) = self.entries.get_mut(key) {
            self.order.remove(t);
            *t = tick;
            self.order.insert(tick, key.to_string());
        }
    }

    /// The entry of `key`, now the most recent.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.touch(key);
        self.entries.get_mut(key).map(|(v, _)| v)
    }

    /// Sets `key` to `value`, the most recent entry; evicts the oldest past the size.
    pub fn add(&mut self, key: String, value: V) {
        self.tick += 1;
        if let Some((_, old)) = self.entries.insert(key.clone(), (value, self.tick)) {
            self.order.remove(&old);
        }
        self.order.insert(self.tick, key);
        while self.max_entries > 0 && self.entries.len() > self.max_entries {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recently_used() {
        let mut c = LruCache::new(2);
        c.add("a".into(), 1);
        c.add("b".into(), 2);
        assert_eq!(c.get_mut("a"), Some(&mut 1)); // a is now newer than b
        c.add("c".into(), 3);
        assert_eq!(c.len(), 2);
        assert!(c.get_mut("b").is_none());
        assert_eq!(c.get_mut("a"), Some(&mut 1));
        c.add("a".into(), 10); // update keeps the size
        c.add("d".into(), 4); // c is the oldest now
        assert!(c.get_mut("c").is_none());
        assert_eq!(c.get_mut("a"), Some(&mut 10));
        assert_eq!(c.get_mut("d"), Some(&mut 4));
    }
}
