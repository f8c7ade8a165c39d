//! A hand-written equivalent of the DeepSeek V4 pre-tokenizer, the three `Split` regexes
//!
//! ```text
//! 1. \p{N}{1,3}
//! 2. [一-龥぀-ゟ゠-ヿ]+
//! 3. [!"#…~][A-Za-z]+ | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ | ?[\p{P}\p{S}]+[\r\n]*
//!    | \s*[\r\n]+ | \s+(?!\S) | \s+
//! ```
//!
//! each applied with `Isolated` behaviour inside every piece of the one before. Regex 3 is
//! leftmost-first: at each position the first alternative that matches wins, and where none
//! does the character joins the unmatched text between matches. Resolved by hand, the
//! alternatives at a position whose character is `c0` (next `c1`) are:
//!
//! 1. `c0` ASCII punctuation, `c1` ASCII letter: up to the end of the ASCII letters.
//! 2. `c0` not CR, LF, letter, punctuation or symbol and `c1` letter or mark: `c0` plus
//!    the letter/mark run; or `c0` a letter or mark: the letter/mark run.
//! 3. `c0` a space and `c1` punctuation/symbol, or `c0` punctuation/symbol: the
//!    punctuation/symbol run, then any CR/LF run.
//! 4. `c0` whitespace and the whitespace run containing a CR or LF: up to and including the
//!    last CR/LF of the run (`\s*` backtracks to it).
//! 5. `c0` whitespace: the run if it ends the piece; else the run minus its last character
//!    if that leaves at least one (the look-ahead must see whitespace).
//! 6. (5 always decides a run of one that does not end the piece) the one character.
//!
//! Example: `"foo  bar.\n\n  x"` gives `foo`, ` `, ` bar`, `.\n\n`, ` `, ` x`.
//!
//! Character classes are not taken from another Unicode table: they are read from the
//! regex engine itself at load time, by matching each class against every code point, so
//! the two agree on every character, assigned or not.

use std::ops::Range;
use std::sync::OnceLock;

use tokenizers::utils::SysRegex;

const LETTER: u8 = 1;
const MARK: u8 = 2;
const NUMBER: u8 = 4;
const PUNCT: u8 = 8;
const SYMBOL: u8 = 16;
const SPACE: u8 = 32;
const KANJI_KANA: u8 = 64;

/// The general categories among the classes (pairwise disjoint).
const CATEGORIES: u8 = LETTER | MARK | NUMBER | PUNCT | SYMBOL;

/// The classes, each as the engine spells it, with the bit it sets.
const CLASSES: [(&str, u8); 7] = [
    ("\\p{L}", LETTER),
    ("\\p{M}", MARK),
    ("\\p{N}", NUMBER),
    ("\\p{P}", PUNCT),
    ("\\p{S}", SYMBOL),
    ("\\s", SPACE),
    ("[一-龥぀-ゟ゠-ヿ]", KANJI_KANA),
];

/// The classes read from the regex engine, once per process.
static SHARED: OnceLock<Option<V4Pieces>> = OnceLock::new();

/// Per code point class bits, probed from the regex engine.
pub(crate) struct V4Pieces {
    classes: Box<[u8]>,
    /// The first 128 entries of `classes`, for the common case.
    ascii: [u8; 128],
    /// The same, with no class for characters that end a regex 3 piece (digits).
    ascii_in_word: [u8; 128],
    /// Whether the ASCII letters and marks are exactly `A`–`Z` and `a`–`z` (true of every
    /// Unicode version): then runs of them are found eight bytes at a time.
    ascii_letters_are_alphabetic: bool,
}

impl V4Pieces {
    /// The classes, read from the regex engine once per process (they depend on the engine
    /// only, not on the tokenizer file); `None` if a class fails to compile.
    pub(crate) fn shared() -> Option<&'static Self> {
        SHARED.get_or_init(Self::probe).as_ref()
    }

    /// The classes if they have been read already; never waits.
    pub(crate) fn ready() -> Option<&'static Self> {
        SHARED.get().and_then(Option::as_ref)
    }

    /// Match the classes against a text of every code point, in ascending order, and record
    /// the code point ranges of the matches. Letters, marks, numbers, punctuation and
    /// symbols are disjoint (general categories), so one pass finds their runs and a
    /// one-character match names each run's class; whitespace and kanji/kana, which overlap
    /// them, take a pass each. The three passes run in parallel.
    fn probe() -> Option<Self> {
        let all: String = (0..=u32::from(char::MAX))
            .filter_map(char::from_u32)
            .collect();
        let categories: Vec<(&str, u8)> = CLASSES
            .iter()
            .copied()
            .filter(|&(_, bit)| bit & CATEGORIES != 0)
            .collect();
        let category_runs = categories
            .iter()
            .map(|(class, _)| format!("{class}+"))
            .collect::<Vec<_>>()
            .join("|");
        let singles = categories
            .iter()
            .map(|&(class, bit)| Some((SysRegex::new(&format!("^{class}$")).ok()?, bit)))
            .collect::<Option<Vec<_>>>()?;
        let mut passes: Vec<(String, Option<u8>)> = vec![(category_runs, None)];
        passes.extend(
            CLASSES
                .iter()
                .filter(|&&(_, bit)| bit & CATEGORIES == 0)
                .map(|&(class, bit)| (format!("{class}+"), Some(bit))),
        );
        let pass = |pattern: &str, bit: Option<u8>| {
            let regex = SysRegex::new(pattern).ok()?;
            let runs = regex
                .find_iter(&all)
                .filter_map(|(start, end)| {
                    let matched = all.get(start..end)?;
                    let first = matched.chars().next()?;
                    let bit = match bit {
                        Some(bit) => bit,
                        None => {
                            let mut one = [0u8; 4];
                            let one = first.encode_utf8(&mut one);
                            singles
                                .iter()
                                .find(|(single, _)| single.find_iter(one).next().is_some())?
                                .1
                        }
                    };
                    Some((
                        bit,
                        u32::from(first),
                        u32::from(matched.chars().next_back()?),
                    ))
                })
                .collect::<Vec<_>>();
            Some(runs)
        };
        // Threads of their own, not rayon's: a caller waiting for this table may hold the
        // only rayon thread (with RAYON_NUM_THREADS=1 that would deadlock).
        let found = std::thread::scope(|scope| {
            let passes: Vec<_> = passes
                .iter()
                .map(|(pattern, bit)| scope.spawn(move || pass(pattern, *bit)))
                .collect();
            passes
                .into_iter()
                .map(|handle| handle.join().ok().flatten())
                .collect::<Option<Vec<_>>>()
        })?;
        let mut classes = vec![0u8; usize::try_from(u32::from(char::MAX)).ok()? + 1];
        for (bit, first, last) in found.into_iter().flatten() {
            // Consecutive in `all`, so every code point in between matched (a run over the
            // surrogate gap only marks code points no string can hold).
            for slot in classes
                .iter_mut()
                .take(last as usize + 1)
                .skip(first as usize)
            {
                *slot |= bit;
            }
        }
        let mut ascii = [0u8; 128];
        let mut ascii_in_word = [0u8; 128];
        for ((slot, in_word), &class) in ascii.iter_mut().zip(&mut ascii_in_word).zip(&classes) {
            *slot = class;
            *in_word = if class & (NUMBER | KANJI_KANA) == 0 {
                class
            } else {
                0
            };
        }
        let ascii_letters_are_alphabetic = (0..128u8).all(|b| {
            (ascii_in_word[usize::from(b)] & (LETTER | MARK) != 0) == b.is_ascii_alphabetic()
        });
        Some(Self {
            classes: classes.into_boxed_slice(),
            ascii,
            ascii_in_word,
            ascii_letters_are_alphabetic,
        })
    }

    /// Class bits of the character starting at byte `at` of `t`, and its length in bytes;
    /// `(0, 0)` at the end of `t`. ASCII is read from the byte, the rest decoded.
    #[inline]
    fn char_at(&self, t: &str, at: usize) -> (u8, usize) {
        match t.as_bytes().get(at) {
            None => (0, 0),
            Some(&byte) if byte.is_ascii() => (self.ascii[usize::from(byte)], 1),
            Some(_) => t
                .get(at..)
                .and_then(|rest| rest.chars().next())
                .map_or((0, 0), |c| {
                    let class = self.classes.get(c as usize).copied().unwrap_or(0);
                    (class, c.len_utf8())
                }),
        }
    }

    /// Like [`Self::char_at`], but a character that starts a number group or a kanji/kana
    /// run ends the regex 3 piece it follows, so it reads as the end of the text.
    #[inline]
    fn word_char_at(&self, t: &str, at: usize) -> (u8, usize) {
        match self.char_at(t, at) {
            (class, _) if class & (NUMBER | KANJI_KANA) != 0 => (0, 0),
            found => found,
        }
    }

    /// Append the pieces of `text` (byte ranges, in order, covering it) to `out`.
    pub(crate) fn pieces(&self, text: &str, out: &mut Vec<Range<usize>>) {
        self.each_piece(text, &mut |piece| out.push(piece));
    }

    /// Hand each piece of `text` (byte ranges, in order, covering it) to `sink`.
    ///
    /// One pass does the three nested splits: a number starts a group of up to three
    /// (regex 1); otherwise a kanji/kana character starts a run of them (regex 2, which
    /// never sees numbers); otherwise the position is inside a regex 3 piece, which ends at
    /// the next number or kanji/kana character ([`Self::word_char_at`] reads those as its
    /// end). Characters where no regex 3 alternative starts gather into one piece until
    /// the next match or the end of their regex 3 piece.
    pub(crate) fn each_piece(&self, text: &str, sink: &mut impl PieceSink) {
        let bytes = text.as_bytes();
        let mut at = 0;
        let mut unmatched: Option<usize> = None;
        while at < text.len() {
            // Most pieces are an ASCII word, maybe after one space: alternative 2 of regex 3
            // (`word_end` would find the same, after reading both characters' classes).
            if self.ascii_letters_are_alphabetic {
                // One test, not one per shape: a letter at `at`, or a space and a letter.
                let first = bytes.get(at).copied().unwrap_or(0);
                let space = usize::from(first == b' ');
                let letter = bytes.get(at + space).is_some_and(u8::is_ascii_alphabetic);
                let letters_from = letter.then_some(at + space + 1);
                if let Some(from) = letters_from {
                    if let Some(from) = unmatched.take() {
                        sink.piece(from..at);
                    }
                    let end = self.word_run_end(text, from, LETTER | MARK);
                    sink.piece(at..end);
                    at = end;
                    continue;
                }
            }
            let (class, len) = self.char_at(text, at);
            if len == 0 {
                break;
            }
            let end = if class & NUMBER != 0 {
                Some(self.number_group_end(text, at))
            } else if class & KANJI_KANA != 0 {
                Some(self.kanji_kana_end(text, at))
            } else {
                self.word_end(text, at, class, len)
            };
            match end {
                Some(end) if end > at => {
                    if let Some(from) = unmatched.take() {
                        sink.piece(from..at);
                    }
                    sink.piece(at..end);
                    at = end;
                }
                _ => {
                    unmatched.get_or_insert(at);
                    at += len;
                }
            }
        }
        if let Some(from) = unmatched {
            sink.piece(from..text.len());
        }
    }

    /// Regex 1: the end of up to three numbers from `at` (a number).
    fn number_group_end(&self, t: &str, at: usize) -> usize {
        let mut end = at;
        for _ in 0..3 {
            match self.char_at(t, end) {
                (class, len) if len > 0 && class & NUMBER != 0 => end += len,
                _ => break,
            }
        }
        end
    }

    /// End of the regex 3 match starting at `at` (a character of class `k0`, `n0` bytes,
    /// inside a regex 3 piece), if an alternative matches there. Always inlined, like
    /// [`Self::word_run_end`]: a call per piece cost ~4% of encoding (bench/cachegrind.sh).
    #[inline(always)]
    fn word_end(&self, t: &str, at: usize, k0: u8, n0: usize) -> Option<usize> {
        let bytes = t.as_bytes();
        let after = at + n0;
        // A letter or mark starts alternative 2 unless it is ASCII punctuation (never a
        // letter), so the common case needs no look at the next character.
        if k0 & (LETTER | MARK) != 0 {
            return Some(self.word_run_end(t, after, LETTER | MARK));
        }
        let b0 = bytes.get(at).copied().unwrap_or(0);
        let (k1, n1) = self.word_char_at(t, after);
        let b1 = if n1 == 0 {
            0
        } else {
            bytes.get(after).copied().unwrap_or(0)
        };
        // 1. ASCII punctuation then ASCII letters.
        if b0.is_ascii_punctuation() && b1.is_ascii_alphabetic() {
            let letters = bytes.get(after..).unwrap_or_default();
            return Some(
                after
                    + letters
                        .iter()
                        .take_while(|b| b.is_ascii_alphabetic())
                        .count(),
            );
        }
        // 2. An optional lead character, then letters and marks.
        let lead = b0 != b'\r' && b0 != b'\n' && k0 & (LETTER | PUNCT | SYMBOL) == 0;
        if lead && k1 & (LETTER | MARK) != 0 {
            return Some(self.word_run_end(t, after + n1, LETTER | MARK));
        }
        // 3. An optional space, punctuation and symbols, then CR/LF.
        let symbols_from = if k0 & (PUNCT | SYMBOL) != 0 {
            Some(at)
        } else if b0 == b' ' && k1 & (PUNCT | SYMBOL) != 0 {
            Some(after)
        } else {
            None
        };
        if let Some(start) = symbols_from {
            let end = self.word_run_end(t, start, PUNCT | SYMBOL);
            let newlines = bytes.get(end..).unwrap_or_default();
            return Some(
                end + newlines
                    .iter()
                    .take_while(|b| matches!(b, b'\r' | b'\n'))
                    .count(),
            );
        }
        if k0 & SPACE == 0 {
            return None;
        }
        // 4–6. Whitespace.
        let end = self.word_run_end(t, at, SPACE);
        let run = bytes.get(at..end).unwrap_or_default();
        if let Some(last_newline) = run.iter().rposition(|b| matches!(b, b'\r' | b'\n')) {
            return Some(at + last_newline + 1);
        }
        if self.word_char_at(t, end).1 == 0 {
            return Some(end);
        }
        let last = t
            .get(at..end)
            .and_then(|run| run.char_indices().next_back())
            .map_or(0, |(i, _)| i);
        Some(if last > 0 { at + last } else { end })
    }

    /// End of the kanji/kana run from `start` (regex 2 never sees a number).
    fn kanji_kana_end(&self, t: &str, start: usize) -> usize {
        let mut end = start;
        loop {
            match self.char_at(t, end) {
                (class, len) if len > 0 && class & (KANJI_KANA | NUMBER) == KANJI_KANA => {
                    end += len
                }
                _ => return end,
            }
        }
    }

    /// End of the run of characters, from `start`, that have any of `bits`, inside a regex
    /// 3 piece (so it stops at the piece's end). Always inlined into the splitter's loop.
    #[inline(always)]
    fn word_run_end(&self, t: &str, start: usize, bits: u8) -> usize {
        let bytes = t.as_bytes();
        let mut end = start;
        if bits == LETTER | MARK && self.ascii_letters_are_alphabetic {
            // Eight bytes at a time while they are all ASCII letters (no branch per byte).
            while let Some(chunk) = bytes.get(end..).and_then(|rest| rest.first_chunk::<8>()) {
                let others = not_ascii_letters(u64::from_le_bytes(*chunk));
                if others != 0 {
                    end += (others.trailing_zeros() / 8) as usize;
                    break;
                }
                end += 8;
            }
        }
        while let Some(&byte) = bytes.get(end) {
            if byte.is_ascii() {
                if self.ascii_in_word[usize::from(byte)] & bits == 0 {
                    return end;
                }
                end += 1;
                continue;
            }
            match self.word_char_at(t, end) {
                (class, len) if len > 0 && class & bits != 0 => end += len,
                _ => return end,
            }
        }
        end
    }
}

/// What takes the pieces of [`V4Pieces::each_piece`], one by one in order. A closure
/// does; a sink whose `piece` is marked `#[inline(always)]` is inlined into the splitter's
/// loop at each place a piece is found (a closure is called, saving and restoring registers
/// on every piece).
pub(crate) trait PieceSink {
    fn piece(&mut self, piece: Range<usize>);
}

impl<F: FnMut(Range<usize>)> PieceSink for F {
    #[inline]
    fn piece(&mut self, piece: Range<usize>) {
        self(piece);
    }
}

/// The high bit of each byte of `word` (little-endian) that is not an ASCII letter.
fn not_ascii_letters(word: u64) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Fold case, keep seven bits: no byte can carry into the next below.
    let folded = (word | 0x2020_2020_2020_2020) & !HIGH;
    let from_a = folded + 0x1f1f_1f1f_1f1f_1f1f; // high bit: folded >= b'a'
    let past_z = folded + 0x0505_0505_0505_0505; // high bit: folded > b'z'
    let letters = from_a & !past_z & !word & HIGH; // and the byte itself is ASCII
    !letters & HIGH
}

#[cfg(test)]
mod tests {
    use super::not_ascii_letters;

    #[test]
    fn eight_bytes_at_a_time_finds_the_first_non_letter_of_every_byte_value() {
        for byte in 0..=u8::MAX {
            for at in 0..8 {
                let mut word = *b"abcdWXYZ";
                word[at] = byte;
                let found = not_ascii_letters(u64::from_le_bytes(word));
                let want = if byte.is_ascii_alphabetic() {
                    0
                } else {
                    0x80u64 << (8 * at)
                };
                assert_eq!(found, want, "byte {byte:#x} at {at}");
            }
        }
    }
}
