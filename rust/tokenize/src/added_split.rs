//! Finding added tokens in raw text the way Hugging Face's `AddedVocabulary` does, for the
//! full-vocabulary [`crate::Tokenizer::encode`] without going through `tokenizers`.
//!
//! Two passes, as `AddedVocabulary::extract_and_normalize`: first the tokens flagged
//! `normalized: false` are found in the whole text, then the `normalized: true` ones in
//! each stretch of text between those matches (the file's normalizer must do nothing).
//! Each pass is leftmost-longest, like its Aho-Corasick automaton: at the first position
//! where any token starts, the longest token starting there wins; the search resumes
//! after it. Example with tokens `<a>` and `<a>b`: `x<a>bc` → `x`, `<a>b`, `c`.
//!
//! Applies only when no added token has `lstrip`, `rstrip` or `single_word` set and
//! `encode_special_tokens` is off; otherwise `tokenizers` itself is used.

use std::ops::Range;

/// A byte trie of one pass's tokens.
pub(crate) struct TokenTrie {
    /// Node 0 is the root; each node's children sorted by byte.
    children: Vec<Vec<(u8, u32)>>,
    /// The id of the token ending at each node, if any.
    ids: Vec<Option<u32>>,
    /// Whether a token starts with each byte (a fast pre-check).
    first: [bool; 256],
    /// The bytes tokens start with, when there are at most three (DeepSeek's all start
    /// with `<` or `｜`'s first byte): then the text is scanned for them by `memchr`.
    few_firsts: Option<Vec<u8>>,
}

impl TokenTrie {
    pub(crate) fn new<'a>(tokens: impl IntoIterator<Item = (&'a str, u32)>) -> Self {
        let mut trie = Self {
            children: vec![Vec::new()],
            ids: vec![None],
            first: [false; 256],
            few_firsts: None,
        };
        for (token, id) in tokens {
            let Some(&first) = token.as_bytes().first() else {
                continue;
            };
            trie.first[usize::from(first)] = true;
            let mut node = 0usize;
            for &byte in token.as_bytes() {
                let Some(children) = trie.children.get(node) else {
                    break;
                };
                node = match children.binary_search_by_key(&byte, |&(b, _)| b) {
                    Ok(at) => children.get(at).map_or(0, |&(_, next)| next as usize),
                    Err(at) => {
                        let next = trie.ids.len();
                        trie.children.push(Vec::new());
                        trie.ids.push(None);
                        if let Some(children) = trie.children.get_mut(node) {
                            children.insert(at, (byte, next as u32));
                        }
                        next
                    }
                };
            }
            if let Some(slot) = trie.ids.get_mut(node) {
                *slot = Some(id);
            }
        }
        let firsts: Vec<u8> = (0..=u8::MAX)
            .filter(|&byte| trie.first[usize::from(byte)])
            .collect();
        trie.few_firsts = (firsts.len() <= 3).then_some(firsts);
        trie
    }

    /// Offset in `rest` of the first byte a token starts with.
    fn next_start(&self, rest: &[u8]) -> Option<usize> {
        match self.few_firsts.as_deref() {
            Some([]) => None,
            Some(&[a]) => memchr::memchr(a, rest),
            Some(&[a, b]) => memchr::memchr2(a, b, rest),
            Some(&[a, b, c]) => memchr::memchr3(a, b, c, rest),
            _ => rest.iter().position(|&b| self.first[usize::from(b)]),
        }
    }

    /// The longest token starting at `at`: its end and id.
    fn longest_at(&self, bytes: &[u8], at: usize) -> Option<(usize, u32)> {
        let mut node = 0usize;
        let mut best = None;
        for (offset, &byte) in bytes.get(at..)?.iter().enumerate() {
            let children = self.children.get(node)?;
            let Ok(found) = children.binary_search_by_key(&byte, |&(b, _)| b) else {
                break;
            };
            node = children.get(found)?.1 as usize;
            if let Some(&Some(id)) = self.ids.get(node) {
                best = Some((at + offset + 1, id));
            }
        }
        best
    }

    /// Append the matches in `range` of `text` to `out`, in order, each as its byte range
    /// and id; the text between them is left out.
    pub(crate) fn find(
        &self,
        text: &[u8],
        range: Range<usize>,
        out: &mut Vec<(Range<usize>, u32)>,
    ) {
        let mut at = range.start;
        let end = range.end.min(text.len());
        while at < end {
            let Some(offset) = text.get(at..end).and_then(|rest| self.next_start(rest)) else {
                return;
            };
            at += offset;
            let window = text.get(..end).unwrap_or_default();
            match self.longest_at(window, at) {
                Some((stop, id)) => {
                    out.push((at..stop, id));
                    at = stop;
                }
                None => at += 1,
            }
        }
    }
}

/// The two passes over the added vocabulary.
pub(crate) struct AddedSplit {
    pub(crate) raw: TokenTrie,
    pub(crate) normalized: TokenTrie,
}

impl AddedSplit {
    /// The added-token matches of `text`, in order, as byte ranges with their ids.
    pub(crate) fn matches(&self, text: &str) -> Vec<(Range<usize>, u32)> {
        let bytes = text.as_bytes();
        let mut first = Vec::new();
        self.raw.find(bytes, 0..bytes.len(), &mut first);
        let mut all = Vec::with_capacity(first.len());
        let mut cursor = 0;
        for (range, id) in first {
            self.normalized.find(bytes, cursor..range.start, &mut all);
            cursor = range.end;
            all.push((range, id));
        }
        self.normalized.find(bytes, cursor..bytes.len(), &mut all);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::{AddedSplit, TokenTrie};

    type Matches = &'static [(std::ops::Range<usize>, u32)];

    #[test]
    fn leftmost_longest_in_two_passes() {
        let split = AddedSplit {
            raw: TokenTrie::new([("<a>", 1), ("<a>b", 2), ("zz", 3)]),
            normalized: TokenTrie::new([("b<", 4), ("<q", 5)]),
        };
        let cases: [(&str, Matches); 5] = [
            ("x<a>bc", &[(1..5, 2)]),
            ("<a><a>", &[(0..3, 1), (3..6, 1)]),
            ("zzz", &[(0..2, 3)]),
            // The raw pass runs first: `b<` would start earlier but `<a>` wins.
            ("b<a>", &[(1..4, 1)]),
            ("b<q<a", &[(0..2, 4)]),
        ];
        for (text, want) in cases {
            assert_eq!(split.matches(text), want, "{text:?}");
        }
    }
}
