//! A direct run of the plain pipeline for the common byte-level shape, without Hugging
//! Face's per-byte alignment bookkeeping (which costs most of the time on long prompts).
//!
//! It applies when `tokenizer.json` has no normalizer (or an empty sequence), a
//! pre-tokenizer made of `Split` regexes with `Isolated` behaviour followed by a
//! `ByteLevel` step that neither adds a prefix space nor splits, and no truncation or
//! padding. Then the pipeline is, exactly:
//!
//! 1. cut the text with each regex in turn, every piece on its own (a regex sees only its
//!    piece, so anchors and look-ahead behave as in `tokenizers`), keeping both the matches
//!    and the text between them;
//! 2. spell each piece's bytes in the byte-level alphabet;
//! 3. hand each piece to the tokenizer's own model (`Model::tokenize`, cache included), or,
//!    for a plain byte-level BPE, to the same merges on ids (`fast_bpe.rs`).
//!
//! The regexes are compiled by `tokenizers`' own `SysRegex` (Oniguruma), so matching is the
//! same engine with the same patterns; with exactly the DeepSeek V4 regexes, a hand-written
//! splitter gives the same pieces faster (`v4_pieces.rs`). Any other shape of file uses
//! `tokenizers` itself.
//!
//! **Cutting long texts.** With exactly the DeepSeek V4 regexes, a text may be cut right
//! after a `\n` that is followed by a non-space ASCII character, and the pieces encoded
//! independently (in parallel), with the same result: no regex match can contain both that
//! `\n` and the next character (the only alternatives that take a newline end at the first
//! character that is not `\r`/`\n`/whitespace), the `\n` is always inside some match, and
//! no pattern looks behind. The one look-ahead, `\s+(?!\S)`, never decides a run ending in
//! `\n`, because the earlier alternative `\s*[\r\n]+` already takes it. Worked example:
//! `"a b\nfoo"` cut at 4 gives `"a b\n"` → `a`, ` b`, `\n` and `"foo"` → `foo`, which are
//! the pieces of the whole text.

use std::ops::Range;

use rayon::prelude::*;
use serde_json::Value;
use tokenizers::utils::SysRegex;
use tokenizers::{Model, ModelWrapper, Tokenizer as HfTokenizer};

use crate::byte_level;
use crate::fast_bpe::{FastBpe, PieceEncoder};
use crate::v4_pieces::{PieceSink, V4Pieces};

/// The DeepSeek V4 pre-tokenizer regexes, in order (see "Cutting long texts").
const DEEPSEEK_V4_SPLITS: [&str; 3] = [
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
];

/// Texts are cut into pieces of about this many bytes, when cutting is allowed.
const CHUNK_BYTES: usize = 32 << 10;

pub(crate) struct PlainPipeline {
    splits: Vec<SysRegex>,
    /// Whether the regexes are exactly DeepSeek V4's: then they are run by hand
    /// (`v4_pieces.rs`) once its classes are read, and long texts may be cut (see above).
    deepseek_v4: bool,
}

impl PlainPipeline {
    /// The direct pipeline for `tokenizer`, or `None` when its shape is not the one above.
    pub(crate) fn recognise(tokenizer: &HfTokenizer) -> Option<Self> {
        if tokenizer.get_truncation().is_some() || tokenizer.get_padding().is_some() {
            return None;
        }
        if let Some(normalizer) = tokenizer.get_normalizer() {
            let json = serde_json::to_value(normalizer).ok()?;
            let empty_sequence = json["type"] == "Sequence"
                && json["normalizers"].as_array().is_some_and(Vec::is_empty);
            if !empty_sequence {
                return None;
            }
        }
        let json = serde_json::to_value(tokenizer.get_pre_tokenizer()?).ok()?;
        let steps = match json["type"].as_str()? {
            "Sequence" => json["pretokenizers"].as_array()?.clone(),
            _ => vec![json],
        };
        let (last, splits) = steps.split_last()?;
        let byte_level = last["type"] == "ByteLevel"
            && last["add_prefix_space"] == Value::Bool(false)
            && last["use_regex"] == Value::Bool(false);
        if !byte_level {
            return None;
        }
        let patterns = splits
            .iter()
            .map(isolated_regex_pattern)
            .collect::<Option<Vec<&str>>>()?;
        let deepseek_v4 = patterns == DEEPSEEK_V4_SPLITS;
        let splits = patterns
            .into_iter()
            .map(|pattern| SysRegex::new(pattern).ok())
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            splits,
            deepseek_v4,
        })
    }

    /// Whether this is the DeepSeek V4 shape: hand-written splitting, long texts cut.
    pub(crate) fn is_deepseek_v4(&self) -> bool {
        self.deepseek_v4
    }

    /// Read the hand-written splitter's classes now, if not yet (no-op for other shapes).
    pub(crate) fn warm_up(&self) {
        if self.deepseek_v4 {
            V4Pieces::shared();
        }
    }

    /// Append the ids of `text` to `ids`, by `bpe` (the same merges on ids) when the model
    /// has one, else by `model`. Long texts are cut and encoded in parallel when allowed.
    pub(crate) fn encode(
        &self,
        model: &ModelWrapper,
        bpe: Option<&FastBpe>,
        text: &str,
        ids: &mut Vec<u32>,
    ) -> tokenizers::Result<()> {
        if !self.cuts(text) {
            ids.reserve(text.len() / 4);
            return self.encode_whole(model, bpe, text, ids);
        }
        let parts = self.encode_parts(model, bpe, text)?;
        ids.reserve(parts.iter().map(Vec::len).sum());
        for part in parts {
            ids.extend_from_slice(&part);
        }
        Ok(())
    }

    /// The ids of `text` as [`Self::encode`] gives them, in consecutive parts: one for a
    /// text encoded in one run, one per cut otherwise (so a caller that copies the ids
    /// anyway, like a prompt gathering its gaps, copies them once).
    pub(crate) fn encode_parts(
        &self,
        model: &ModelWrapper,
        bpe: Option<&FastBpe>,
        text: &str,
    ) -> tokenizers::Result<Vec<Vec<u32>>> {
        let Some(chunks) = self.chunks(text) else {
            let mut ids = Vec::with_capacity(text.len() / 4);
            self.encode_whole(model, bpe, text, &mut ids)?;
            return Ok(vec![ids]);
        };
        chunks
            .par_iter()
            .map(|chunk| self.encode_chunk(model, bpe, chunk))
            .collect()
    }

    /// The pieces `text` is cut into and encoded in parallel ([`Self::encode_chunk`] each,
    /// their ids concatenated), or `None` when it is encoded in one run.
    fn chunks<'t>(&self, text: &'t str) -> Option<Vec<&'t str>> {
        self.cuts(text).then(|| cut(text, CHUNK_BYTES))
    }

    /// The ids of one piece given by [`Self::chunks`].
    fn encode_chunk(
        &self,
        model: &ModelWrapper,
        bpe: Option<&FastBpe>,
        chunk: &str,
    ) -> tokenizers::Result<Vec<u32>> {
        let mut ids = Vec::with_capacity(chunk.len() / 3);
        self.encode_whole(model, bpe, chunk, &mut ids).map(|()| ids)
    }

    /// Whether `text` is cut and its pieces encoded on the rayon pool.
    fn cuts(&self, text: &str) -> bool {
        self.deepseek_v4 && text.len() >= 2 * CHUNK_BYTES && rayon::current_num_threads() > 1
    }

    /// Encode `text` in one run, appending the ids to `ids`.
    fn encode_whole(
        &self,
        model: &ModelWrapper,
        bpe: Option<&FastBpe>,
        text: &str,
        ids: &mut Vec<u32>,
    ) -> tokenizers::Result<()> {
        // The hand-written splitter hands each piece straight to the merges: no list of
        // pieces is built (a list per chunk costs page faults on every core).
        if let (Some(by_hand), Some(bpe)) = (V4Pieces::ready().filter(|_| self.deepseek_v4), bpe) {
            bpe.with_encoder(|encoder| {
                by_hand.each_piece(
                    text,
                    &mut EncodePieces {
                        encoder,
                        text: text.as_bytes(),
                        ids,
                    },
                );
            });
            return Ok(());
        }
        let mut pieces = Vec::with_capacity(text.len() / 4);
        match V4Pieces::ready().filter(|_| self.deepseek_v4) {
            Some(by_hand) => by_hand.pieces(text, &mut pieces),
            None => self.regex_pieces(text, &mut pieces),
        }
        if let Some(bpe) = bpe {
            bpe.with_encoder(|encoder| {
                for piece in pieces {
                    if let Some(bytes) = text.as_bytes().get(piece) {
                        encoder.encode(bytes, ids);
                    }
                }
            });
            return Ok(());
        }
        let mut spelled = String::new();
        for piece in pieces {
            let Some(bytes) = text.as_bytes().get(piece) else {
                continue;
            };
            spelled.clear();
            spelled.extend(bytes.iter().map(|&byte| byte_level::byte_char(byte)));
            ids.extend(model.tokenize(&spelled)?.into_iter().map(|token| token.id));
        }
        Ok(())
    }

    /// The pieces of `text` by running each regex, every piece on its own.
    fn regex_pieces(&self, text: &str, out: &mut Vec<Range<usize>>) {
        #[allow(clippy::single_range_in_vec_init)] // one piece to start with: the whole text
        let mut pieces = vec![0..text.len()];
        for regex in &self.splits {
            let mut next = Vec::with_capacity(pieces.len() * 2);
            for piece in pieces {
                let Some(slice) = text.get(piece.clone()) else {
                    continue;
                };
                let mut previous = 0;
                for (start, end) in regex.find_iter(slice) {
                    if previous != start {
                        next.push(piece.start + previous..piece.start + start);
                    }
                    if start != end {
                        next.push(piece.start + start..piece.start + end);
                    }
                    previous = end;
                }
                if previous != slice.len() {
                    next.push(piece.start + previous..piece.end);
                }
            }
            pieces = next;
        }
        *out = pieces;
    }
}

/// The hand-written splitter's pieces straight into the merges, inlined into its loop.
struct EncodePieces<'e, 'a, 'b> {
    encoder: &'e mut PieceEncoder<'a>,
    text: &'b [u8],
    ids: &'b mut Vec<u32>,
}

impl PieceSink for EncodePieces<'_, '_, '_> {
    #[inline(always)]
    fn piece(&mut self, piece: Range<usize>) {
        if let Some(bytes) = self.text.get(piece) {
            self.encoder.encode(bytes, self.ids);
        }
    }
}

/// The pattern of a `Split` step with a regex, `Isolated` behaviour and no inversion.
fn isolated_regex_pattern(step: &Value) -> Option<&str> {
    if step["type"] != "Split"
        || step["behavior"] != "Isolated"
        || step["invert"] != Value::Bool(false)
    {
        return None;
    }
    step["pattern"]["Regex"].as_str()
}

/// Cut `text` into pieces of at least `size` bytes, each cut right after a `\n` that is
/// followed by a non-space ASCII character (the last piece takes whatever remains).
pub(crate) fn cut(text: &str, size: usize) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut pieces = Vec::with_capacity(text.len() / size.max(1) + 1);
    let mut start = 0;
    let mut search = size;
    while search < bytes.len() {
        let found = bytes
            .get(search..)
            .unwrap_or_default()
            .windows(2)
            .position(|pair| pair[0] == b'\n' && pair[1].is_ascii_graphic());
        let Some(offset) = found else { break };
        let at = search + offset + 1;
        // `at` follows an ASCII byte, so it is a character boundary.
        if let Some(piece) = text.get(start..at) {
            pieces.push(piece);
            start = at;
        }
        search = at + size;
    }
    pieces.push(text.get(start..).unwrap_or_default());
    pieces
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{cut, PlainPipeline, DEEPSEEK_V4_SPLITS};
    use crate::v4_pieces::V4Pieces;
    use tokenizers::utils::SysRegex;

    /// The hand-written splitter and the regex engine cut generated texts identically.
    #[test]
    fn hand_written_pieces_equal_regex_pieces() {
        let regexes = PlainPipeline {
            splits: DEEPSEEK_V4_SPLITS
                .iter()
                .map(|p| SysRegex::new(p).unwrap())
                .collect(),
            deepseek_v4: false,
        };
        let by_hand = V4Pieces::shared().unwrap();
        let pool: Vec<char> = "aZéßΩжاאก中ひカ한𠀀07٣７²Ⅻ \n\r\t\u{b}\u{c}\u{a0}\u{3000}\u{2028}\u{85}.,!?-_'\"(){}[]<>/\\|｜▁$€+=^`~😀\u{301}\u{200d}\u{0}\u{7f}\u{feff}\u{e000}\u{378}\u{10ffff}"
            .chars()
            .collect();
        let mut state: u64 = 1;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            usize::try_from(state >> 33).unwrap()
        };
        for round in 0..20_000 {
            let len = next() % 24;
            let text: String = if round % 4 == 3 {
                // Any code point at all, to cover every class boundary.
                (0..len)
                    .filter_map(|_| char::from_u32(u32::try_from(next() % 0x11_0000).unwrap()))
                    .collect()
            } else {
                (0..len).map(|_| pool[next() % pool.len()]).collect()
            };
            let (mut want, mut got) = (Vec::new(), Vec::new());
            regexes.regex_pieces(&text, &mut want);
            by_hand.pieces(&text, &mut got);
            assert_eq!(got, want, "round {round}: {text:?}");
        }
    }

    #[test]
    fn cuts_only_after_a_newline_before_visible_ascii() {
        let cases: [(&str, &str, usize, &[&str]); 5] = [
            ("no newline", "abcdefgh", 2, &["abcdefgh"]),
            ("simple", "ab\ncd\nef", 2, &["ab\n", "cd\n", "ef"]),
            ("blank lines are not cut", "a\n\n\nb", 1, &["a\n\n\n", "b"]),
            ("space after newline", "a\n b\nc", 1, &["a\n b\n", "c"]),
            ("non-ascii after newline", "a\n中\nx", 1, &["a\n中\n", "x"]),
        ];
        for (name, text, size, want) in cases {
            assert_eq!(cut(text, size), want, "{name}");
        }
    }
}
