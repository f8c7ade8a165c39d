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

use rayon::prelude::*;
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

    /// Start reading the classes on the rayon pool, so loading a tokenizer does not wait
    /// for it; until it is done, callers split with the regexes themselves (same pieces).
    pub(crate) fn probe_in_background() {
        if SHARED.get().is_none() {
            rayon::spawn(|| {
                Self::shared();
            });
        }
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
        let found = passes
            .par_iter()
            .map(|(pattern, bit)| {
                let regex = SysRegex::new(pattern).ok()?;
                let runs = regex
                    .find_iter(&all)
                    .filter_map(|(start, end)| {
                        let matched = all.get(start..end)?;
                        let first = matched.chars().next()?;
                        let bit = match bit {
                            Some(bit) => *bit,
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
            })
            .collect::<Option<Vec<_>>>()?;
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
        Some(Self {
            classes: classes.into_boxed_slice(),
        })
    }

    fn class(&self, c: char) -> u8 {
        self.classes.get(c as usize).copied().unwrap_or(0)
    }

    /// Append the pieces of `text` (byte ranges, in order, covering it) to `out`.
    pub(crate) fn pieces(&self, text: &str, out: &mut Vec<Range<usize>>) {
        self.each_piece(text, &mut |piece| out.push(piece));
    }

    /// Call `emit` with each piece of `text` (byte ranges, in order, covering it).
    pub(crate) fn each_piece(&self, text: &str, emit: &mut impl FnMut(Range<usize>)) {
        isolated(
            text,
            0..text.len(),
            |t, from| self.number_group(t, from),
            &mut |digits| {
                isolated(
                    text,
                    digits,
                    |t, from| self.kanji_kana_run(t, from),
                    &mut |rest| {
                        isolated(text, rest, |t, from| self.word(t, from), &mut *emit);
                    },
                );
            },
        );
    }

    /// Regex 1: up to three numbers.
    fn number_group(&self, t: &str, from: usize) -> Option<(usize, usize)> {
        let (start, _) = chars_from(t, from).find(|&(_, c)| self.class(c) & NUMBER != 0)?;
        let end = chars_from(t, start)
            .take(3)
            .take_while(|&(_, c)| self.class(c) & NUMBER != 0)
            .last()
            .map_or(start, |(at, c)| at + c.len_utf8());
        Some((start, end))
    }

    /// Regex 2: a run of kanji and kana.
    fn kanji_kana_run(&self, t: &str, from: usize) -> Option<(usize, usize)> {
        let (start, _) = chars_from(t, from).find(|&(_, c)| self.class(c) & KANJI_KANA != 0)?;
        Some((start, self.run_end(t, start, KANJI_KANA)))
    }

    /// Regex 3: the first position where an alternative matches, and its match.
    fn word(&self, t: &str, from: usize) -> Option<(usize, usize)> {
        chars_from(t, from).find_map(|(at, c0)| self.word_at(t, at, c0).map(|end| (at, end)))
    }

    /// End of the regex 3 match starting at `at` (whose character is `c0`), if any.
    fn word_at(&self, t: &str, at: usize, c0: char) -> Option<usize> {
        let after = at + c0.len_utf8();
        let c1 = t.get(after..).and_then(|rest| rest.chars().next());
        let k0 = self.class(c0);
        let k1 = c1.map_or(0, |c| self.class(c));
        // 1. ASCII punctuation then ASCII letters.
        if c0.is_ascii_punctuation() && c1.is_some_and(|c| c.is_ascii_alphabetic()) {
            let letters = t.get(after..).unwrap_or_default();
            let len = letters.bytes().take_while(u8::is_ascii_alphabetic).count();
            return Some(after + len);
        }
        // 2. An optional lead character, then letters and marks.
        let lead = c0 != '\r' && c0 != '\n' && k0 & (LETTER | PUNCT | SYMBOL) == 0;
        if lead && k1 & (LETTER | MARK) != 0 {
            return Some(self.run_end(t, after, LETTER | MARK));
        }
        if k0 & (LETTER | MARK) != 0 {
            return Some(self.run_end(t, at, LETTER | MARK));
        }
        // 3. An optional space, punctuation and symbols, then CR/LF.
        let symbols_from = if c0 == ' ' && k1 & (PUNCT | SYMBOL) != 0 {
            Some(after)
        } else if k0 & (PUNCT | SYMBOL) != 0 {
            Some(at)
        } else {
            None
        };
        if let Some(start) = symbols_from {
            let end = self.run_end(t, start, PUNCT | SYMBOL);
            let newlines = t
                .get(end..)
                .unwrap_or_default()
                .bytes()
                .take_while(|b| matches!(b, b'\r' | b'\n'));
            return Some(end + newlines.count());
        }
        if k0 & SPACE == 0 {
            return None;
        }
        // 4–6. Whitespace.
        let end = self.run_end(t, at, SPACE);
        let run = t.get(at..end).unwrap_or_default();
        if let Some(last_newline) = run.rfind(['\r', '\n']) {
            return Some(at + last_newline + 1);
        }
        if end == t.len() {
            return Some(end);
        }
        let last = run.char_indices().next_back().map_or(0, |(i, _)| i);
        Some(if last > 0 { at + last } else { end })
    }

    /// End of the run of characters, from `start`, that have any of `bits`.
    fn run_end(&self, t: &str, start: usize, bits: u8) -> usize {
        chars_from(t, start)
            .find(|&(_, c)| self.class(c) & bits == 0)
            .map_or(t.len(), |(at, _)| at)
    }
}

/// `(byte offset, char)` of `t` from byte `from` on.
fn chars_from(t: &str, from: usize) -> impl Iterator<Item = (usize, char)> + '_ {
    t.get(from..)
        .unwrap_or_default()
        .char_indices()
        .map(move |(i, c)| (from + i, c))
}

/// Split `range` of `text` like a `Split` with `Isolated` behaviour: matches of `next`
/// (which sees only the piece, and returns the first match at or after a byte offset) and
/// the unmatched text between them, in order.
fn isolated(
    text: &str,
    range: Range<usize>,
    next: impl Fn(&str, usize) -> Option<(usize, usize)>,
    emit: &mut impl FnMut(Range<usize>),
) {
    let Some(piece) = text.get(range.clone()) else {
        return;
    };
    let mut previous = 0;
    let mut from = 0;
    while let Some((start, end)) = next(piece, from) {
        if end <= start {
            break;
        }
        if previous != start {
            emit(range.start + previous..range.start + start);
        }
        emit(range.start + start..range.start + end);
        previous = end;
        from = end;
    }
    if previous != piece.len() {
        emit(range.start + previous..range.end);
    }
}
