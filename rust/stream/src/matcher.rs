//! Incremental exact-string matching (Knuth–Morris–Pratt), one byte at a time.
//!
//! A [`Pattern`] is built once, with its failure table, when the parser is created. Its state
//! is a plain `usize` (the length of the longest pattern prefix that is a suffix of the bytes
//! fed so far), so the parser keeps one integer per marker and never rebuilds a table when
//! its stage changes: switching stage only zeroes integers.

/// One marker spelling plus its KMP failure table.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    bytes: Box<[u8]>,
    /// `fail[i]`: length of the longest proper border of `bytes[..=i]`.
    fail: Box<[usize]>,
}

impl Pattern {
    pub(crate) fn new(text: &str) -> Self {
        Self::from_bytes(text.as_bytes())
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> Self {
        let bytes: Box<[u8]> = bytes.into();
        let mut fail = vec![0usize; bytes.len()];
        let mut k = 0usize;
        for i in 1..bytes.len() {
            while k > 0 && bytes.get(k) != bytes.get(i) {
                k = fail.get(k - 1).copied().unwrap_or(0);
            }
            if bytes.get(k) == bytes.get(i) {
                k += 1;
            }
            if let Some(slot) = fail.get_mut(i) {
                *slot = k;
            }
        }
        Self {
            bytes,
            fail: fail.into_boxed_slice(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The pattern's bytes from `from` on (empty past its end).
    pub(crate) fn tail(&self, from: usize) -> &[u8] {
        self.bytes.get(from..).unwrap_or_default()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Whether `state` is a complete match (never, for an empty pattern).
    pub(crate) fn is_complete(&self, state: usize) -> bool {
        !self.bytes.is_empty() && state == self.bytes.len()
    }

    /// The state after feeding `byte` in `state`, and the number of failure-link steps taken
    /// (for the parser's work counter); see [`Pattern::is_complete`].
    pub(crate) fn step(&self, mut state: usize, byte: u8) -> (usize, u64) {
        let len = self.bytes.len();
        if len == 0 {
            return (0, 0);
        }
        if state >= len {
            state = self.fail.get(len - 1).copied().unwrap_or(0);
        }
        let mut work = 0u64;
        while state > 0 && self.bytes.get(state) != Some(&byte) {
            state = self.fail.get(state - 1).copied().unwrap_or(0);
            work += 1;
        }
        if self.bytes.get(state) == Some(&byte) {
            state += 1;
        }
        (state, work)
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    fn match_ends(pattern: &str, text: &str) -> Vec<usize> {
        let p = Pattern::new(pattern);
        let mut state = 0;
        let mut ends = Vec::new();
        for (i, &b) in text.as_bytes().iter().enumerate() {
            state = p.step(state, b).0;
            if p.is_complete(state) {
                ends.push(i + 1);
            }
        }
        ends
    }

    #[test]
    fn finds_overlapping_and_self_similar_matches() {
        let table: &[(&str, &str, &str, &[usize])] = &[
            ("plain", "</think>", "a</think>b</think>", &[9, 18]),
            ("self-overlap", "aa", "aaaa", &[2, 3, 4]),
            ("border fallback", "abab", "abababx", &[4, 6]),
            ("newline tag", "\n```", "\n\n```", &[5]),
            ("empty never matches", "", "abc", &[]),
            ("multibyte", "｜DSML｜", "<｜DSM<｜DSML｜", &[18]),
        ];
        for (name, pattern, text, expected) in table {
            assert_eq!(match_ends(pattern, text), *expected, "{name}");
        }
    }
}
