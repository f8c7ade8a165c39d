//! BPE on runs of kanji and kana from whole characters, when the merge table allows it.
//!
//! A run of the DeepSeek V4 pre-tokenizer's kanji/kana class (`[一-龥぀-ゟ゠-ヿ]`, every
//! character three bytes in UTF-8) merges each character's bytes before it merges
//! characters, in the usual vocabulary: BPE on the run gives the same ids as BPE on the
//! sequence of each character's own ids (its bytes merged alone), which costs one lookup
//! per character instead of about six. That holds exactly when two facts about the merge
//! table hold, and [`CharMerge::build`] checks both for every merge before it is used:
//!
//! 1. **No merge mixes a piece of a character with its neighbour.** Every merge whose two
//!    sides can sit in such a run either stays inside one character or joins two sides
//!    that are both whole characters. Then every token of a run is a part of one character
//!    or a sequence of whole characters, and each character's own merges happen in the
//!    same order as when it is merged alone (only its own pairs touch it).
//! 2. **A merge of whole characters ranks after its characters' own merges.** For every
//!    such merge of rank `r`, each of its characters was completed (merged alone) by
//!    merges of rank below `r`. Then when BPE on the run takes a merge of rank `r` of whole
//!    characters, every character it could pair with instead is complete, and the pair it
//!    takes is the one BPE on the completed characters takes (same rank, leftmost), by
//!    induction on the merges of whole characters.
//!
//! A character its own merges leave as several tokens can only merge inside itself (by
//! 1), so its tokens are final in both. Example (ranks): `一` is `e4 b8 80`; if `e4 b8`
//! merges at 10 and then `[e4b8] 80` at 20, and `一丁` merges at 5000, the run `一丁` starts
//! as the ids of `一` and `丁` and merges once.

use std::collections::HashMap;

/// The code points of the class, in two ranges (all three bytes long in UTF-8).
const RANGES: [(u32, u32); 2] = [(0x3040, 0x30FF), (0x4E00, 0x9FA5)];

/// No single id for this character (it is not in the class, or stays several tokens).
const NO_ID: u32 = u32::MAX;

pub(crate) struct CharMerge {
    /// Id of each character of the class, by code point from `RANGES[0].0`, when its bytes
    /// merge alone into one token; [`NO_ID`] otherwise.
    ids: Box<[u32]>,
}

/// What the merge table must answer for [`CharMerge::build`].
pub(crate) trait MergeTable {
    /// `(rank, merged id)` of the pair, if it merges.
    fn merge(&self, left: u32, right: u32) -> Option<(u32, u32)>;
    /// The id of each byte's one-byte token.
    fn byte_id(&self, byte: u8) -> u32;
}

impl CharMerge {
    /// Check the facts above on every merge (`merges`: `(left, right, rank)`, with the raw
    /// bytes of every token in `bytes`) and keep the characters they hold for (see the
    /// module documentation); `None` when no character is left.
    pub(crate) fn build(
        table: &impl MergeTable,
        merges: impl Iterator<Item = (u32, u32, u32)>,
        bytes: &HashMap<u32, Vec<u8>>,
    ) -> Option<Self> {
        let first = RANGES[0].0;
        let last = RANGES[1].1;
        let mut ids = vec![NO_ID; usize::try_from(last - first + 1).ok()?];
        // Each character that merges alone into one token: its bytes, and the highest
        // rank its own merges use.
        let mut single: Vec<([u8; 3], u32, u32)> = Vec::new();
        for &(low, high) in &RANGES {
            for code in low..=high {
                let c = char::from_u32(code)?;
                let mut utf8 = [0u8; 4];
                let encoded = c.encode_utf8(&mut utf8).as_bytes();
                let (merged, highest) = merge_alone(table, encoded);
                if let ([id], Some(slot)) =
                    (merged.as_slice(), ids.get_mut((code - first) as usize))
                {
                    *slot = *id;
                    single.push((*encoded.first_chunk::<3>()?, code, highest));
                }
            }
        }
        let completed_by: HashMap<u32, u32> = single
            .iter()
            .map(|&(_, code, highest)| (code, highest))
            .collect();
        let mut unsafe_chars: Vec<u32> = Vec::new();
        for (left, right, rank) in merges {
            let (Some(left), Some(right)) = (bytes.get(&left), bytes.get(&right)) else {
                continue;
            };
            for offset in 0..3 {
                let Some(touched) = touched_chars(left, right, offset) else {
                    continue;
                };
                let joined = left.len() + right.len();
                if !(1..joined).any(|at| (offset + at) % 3 == 0) {
                    continue; // inside one character
                }
                let aligned =
                    |start: usize, len: usize| start.is_multiple_of(3) && len.is_multiple_of(3);
                let within =
                    |start: usize, len: usize| (1..len).all(|at| !(start + at).is_multiple_of(3));
                if aligned(offset, left.len()) && aligned(offset + left.len(), right.len()) {
                    // Whole characters (fact 2): it can only apply if they merge alone
                    // into one token each; it must rank after their own merges.
                    let Some(codes) = touched.iter().map(decode).collect::<Option<Vec<u32>>>()
                    else {
                        continue;
                    };
                    let late = codes
                        .iter()
                        .any(|code| completed_by.get(code).is_some_and(|&done| done >= rank));
                    if late {
                        unsafe_chars.extend(codes);
                    }
                    continue;
                }
                let first_order = (within(offset, left.len()) || aligned(offset, left.len()))
                    && (within(offset + left.len(), right.len())
                        || aligned(offset + left.len(), right.len()));
                if !first_order {
                    // A side that already mixes a part of a character with its neighbour:
                    // only a first-order merge can make one, and those are excluded below.
                    continue;
                }
                // A part of a character is a token only while that character is not
                // complete, so only characters completed at or after this rank let it
                // apply (fact 1): those are left out.
                for pattern in &touched {
                    unsafe_chars.extend(single.iter().filter_map(|&(utf8, code, done)| {
                        let matches = utf8
                            .iter()
                            .zip(pattern)
                            .all(|(b, p)| p.is_none_or(|p| p == *b));
                        (matches && done >= rank).then_some(code)
                    }));
                }
            }
        }
        for code in unsafe_chars {
            if let Some(slot) = ids.get_mut((code - first) as usize) {
                *slot = NO_ID;
            }
        }
        ids.iter().any(|&id| id != NO_ID).then(|| Self {
            ids: ids.into_boxed_slice(),
        })
    }

    /// How many characters of the class merge from their id.
    pub(crate) fn characters(&self) -> usize {
        self.ids.iter().filter(|&&id| id != NO_ID).count()
    }

    /// The ids of the characters of `piece` if it is a run of the class made only of
    /// characters kept by [`Self::build`]; `false` otherwise (the caller merges bytes).
    pub(crate) fn char_ids(&self, piece: &[u8], out: &mut Vec<u32>) -> bool {
        out.clear();
        // Every character of the class is three bytes, `1110xxxx 10xxxxxx 10xxxxxx`: a
        // piece of anything else fails the length, the patterns or the ranges.
        let (chars, []) = piece.as_chunks::<3>() else {
            return false;
        };
        for &[lead, second, third] in chars {
            if lead & 0xF0 != 0xE0 || second & 0xC0 != 0x80 || third & 0xC0 != 0x80 {
                return false;
            }
            let code = u32::from(lead & 0x0F) << 12
                | u32::from(second & 0x3F) << 6
                | u32::from(third & 0x3F);
            let in_class = RANGES
                .iter()
                .any(|&(low, high)| (low..=high).contains(&code));
            let id = if in_class {
                self.ids
                    .get((code - RANGES[0].0) as usize)
                    .copied()
                    .unwrap_or(NO_ID)
            } else {
                NO_ID
            };
            if id == NO_ID {
                return false;
            }
            out.push(id);
        }
        true
    }
}

/// BPE on `bytes` alone (lowest rank first, leftmost on a tie): the ids and the highest
/// rank used (0 when none).
fn merge_alone(table: &impl MergeTable, bytes: &[u8]) -> (Vec<u32>, u32) {
    let mut symbols: Vec<u32> = bytes.iter().map(|&byte| table.byte_id(byte)).collect();
    let mut highest = 0;
    loop {
        let best = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(at, pair)| Some((table.merge(pair[0], pair[1])?, at)))
            .min_by_key(|&((rank, _), at)| (rank, at));
        let Some(((rank, merged), at)) = best else {
            return (symbols, highest);
        };
        highest = highest.max(rank);
        symbols.splice(at..at + 2, [merged]);
    }
}

/// The characters `left` then `right` touch if they sit in a run of the class with
/// their first byte at position `offset` (0–2) of a character, each as its three bytes
/// (`None` for a byte outside them); `None` when they cannot sit in such a run.
fn touched_chars(left: &[u8], right: &[u8], offset: usize) -> Option<Vec<[Option<u8>; 3]>> {
    let mut chars: Vec<[Option<u8>; 3]> = Vec::new();
    for (at, &byte) in left.iter().chain(right).enumerate() {
        let position = (offset + at) % 3;
        let fits = if position == 0 {
            (0xE3..=0xE9).contains(&byte)
        } else {
            (0x80..=0xBF).contains(&byte)
        };
        if !fits {
            return None;
        }
        if at == 0 || position == 0 {
            chars.push([None; 3]);
        }
        *chars.last_mut()?.get_mut(position)? = Some(byte);
    }
    // A character whose bytes are all known must be in the class.
    for pattern in &chars {
        if pattern.iter().all(Option::is_some) && decode(pattern).is_none() {
            return None;
        }
    }
    Some(chars)
}

/// The code point of a fully known character of the class.
fn decode(pattern: &[Option<u8>; 3]) -> Option<u32> {
    let bytes = [pattern[0]?, pattern[1]?, pattern[2]?];
    let code = u32::from(std::str::from_utf8(&bytes).ok()?.chars().next()?);
    RANGES
        .iter()
        .any(|&(low, high)| (low..=high).contains(&code))
        .then_some(code)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{CharMerge, MergeTable};
    use std::collections::HashMap;

    /// A toy table: byte ids are the bytes themselves, merged ids from 1000 on.
    struct Toy {
        merges: HashMap<(u32, u32), (u32, u32)>,
        bytes: HashMap<u32, Vec<u8>>,
    }

    impl Toy {
        fn new(rules: &[(&[u8], &[u8], u32)]) -> Self {
            let mut toy = Toy {
                merges: HashMap::new(),
                bytes: (0..=255u8).map(|b| (u32::from(b), vec![b])).collect(),
            };
            for &(left, right, rank) in rules {
                let id = |bytes: &[u8], toy: &mut Toy| {
                    if let Some((&id, _)) = toy.bytes.iter().find(|(_, b)| b.as_slice() == bytes) {
                        return id;
                    }
                    let id = 1000 + toy.bytes.len() as u32;
                    toy.bytes.insert(id, bytes.to_vec());
                    id
                };
                let (l, r) = (id(left, &mut toy), id(right, &mut toy));
                let merged = id(&[left, right].concat(), &mut toy);
                toy.merges.insert((l, r), (rank, merged));
            }
            toy
        }

        fn rules(&self) -> Vec<(u32, u32, u32)> {
            self.merges
                .iter()
                .map(|(&(l, r), &(rank, _))| (l, r, rank))
                .collect()
        }
    }

    impl MergeTable for Toy {
        fn merge(&self, left: u32, right: u32) -> Option<(u32, u32)> {
            self.merges.get(&(left, right)).copied()
        }
        fn byte_id(&self, byte: u8) -> u32 {
            u32::from(byte)
        }
    }

    const YI: &[u8] = "一".as_bytes(); // e4 b8 80
    const DING: &[u8] = "丁".as_bytes(); // e4 b8 81

    fn kept(toy: &Toy, text: &str) -> bool {
        CharMerge::build(toy, toy.rules().into_iter(), &toy.bytes)
            .is_some_and(|merge| merge.char_ids(text.as_bytes(), &mut Vec::new()))
    }

    /// `一` completes at rank 20, `丁` at 21.
    const CHARACTERS: [(&[u8], &[u8], u32); 3] = [
        (b"\xe4", b"\xb8", 10),
        (b"\xe4\xb8", b"\x80", 20),
        (b"\xe4\xb8", b"\x81", 21),
    ];

    /// Reading characters straight from the bytes agrees with decoding them: every
    /// three-byte character, and pieces that are not whole three-byte characters.
    #[test]
    fn character_ids_read_from_bytes_agree_with_decoding() {
        use super::RANGES;
        let first = RANGES[0].0;
        let merge = CharMerge {
            ids: (first..=RANGES[1].1).map(|code| code + 7).collect(),
        };
        let mut ids = Vec::new();
        for c in (0x800..=0xFFFF).filter_map(char::from_u32) {
            let code = u32::from(c);
            let want = RANGES
                .iter()
                .any(|&(low, high)| (low..=high).contains(&code))
                .then_some(vec![code + 7, code + 7]);
            let piece = [c, c].iter().collect::<String>();
            let found = merge
                .char_ids(piece.as_bytes(), &mut ids)
                .then(|| ids.clone());
            assert_eq!(found, want, "{code:#x}");
        }
        let yi = "一".as_bytes();
        for piece in [
            &yi[..1],
            &yi[..2],
            &[yi, b"a"].concat(),
            "😀".as_bytes(),
            b"abc",
            &[0xE4, 0x38, 0x80],
        ] {
            assert!(!merge.char_ids(piece, &mut ids), "{piece:x?}");
        }
    }

    #[test]
    fn characters_first_then_words_merge_from_characters() {
        let toy = Toy::new(&[CHARACTERS.as_slice(), &[(YI, DING, 5000)]].concat());
        let merge = CharMerge::build(&toy, toy.rules().into_iter(), &toy.bytes).unwrap();
        let mut ids = Vec::new();
        assert!(merge.char_ids("一丁一".as_bytes(), &mut ids));
        assert_eq!(ids.len(), 3);
        assert!(
            !merge.char_ids("一a".as_bytes(), &mut ids),
            "not a run of the class"
        );
        assert_eq!(merge.characters(), 2);
    }

    #[test]
    fn a_merge_across_a_character_edge_excludes_characters_not_complete_by_its_rank() {
        // `80 e4`: the last byte of `一` with the first of the next character.
        let early = Toy::new(&[CHARACTERS.as_slice(), &[(b"\x80", b"\xe4", 15)]].concat());
        assert!(
            !kept(&early, "一"),
            "`一` completes at 20, after the merge at 15"
        );
        assert!(
            !kept(&early, "丁"),
            "`丁` starts with e4 and completes at 21"
        );
        let late = Toy::new(&[CHARACTERS.as_slice(), &[(b"\x80", b"\xe4", 30)]].concat());
        assert!(kept(&late, "一丁"), "both are complete before rank 30");
    }

    #[test]
    fn a_word_ranked_before_its_characters_excludes_them() {
        let toy = Toy::new(&[CHARACTERS.as_slice(), &[(YI, DING, 15)]].concat());
        assert!(!kept(&toy, "一") && !kept(&toy, "丁"));
    }
}
