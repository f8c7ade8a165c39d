//! The prompt writer: appends plain text and special-token spellings, recording the byte
//! range of every special token it emits and the image sources in prompt order.

use std::ops::Range;

use deepseek_model::{ImageSource, Message, SpecialToken, SpecialTokens};

use crate::RenderedPrompt;

/// A place in a prompt being written: its length in bytes, special ranges and image sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Mark {
    pub(crate) bytes: usize,
    pub(crate) ranges: usize,
    pub(crate) images: usize,
}

pub(crate) struct Writer<'a> {
    tokens: &'a SpecialTokens,
    prompt: String,
    special_ranges: Vec<Range<usize>>,
    image_sources: Vec<ImageSource>,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(tokens: &'a SpecialTokens) -> Self {
        Self {
            tokens,
            prompt: String::new(),
            special_ranges: Vec::new(),
            image_sources: Vec::new(),
        }
    }

    /// A writer holding `prompt`'s first `bytes` bytes, with their first `ranges` special
    /// ranges and `images` image sources, reserved for about `capacity` bytes in all.
    pub(crate) fn resume(
        tokens: &'a SpecialTokens,
        prompt: &RenderedPrompt,
        mark: Mark,
        capacity: usize,
    ) -> Self {
        let mut text = String::with_capacity(capacity.max(mark.bytes));
        text.push_str(prompt.prompt.get(..mark.bytes).unwrap_or_default());
        let mut special_ranges = Vec::with_capacity(prompt.special_ranges.len() + 64);
        special_ranges
            .extend_from_slice(prompt.special_ranges.get(..mark.ranges).unwrap_or_default());
        Self {
            tokens,
            prompt: text,
            special_ranges,
            image_sources: prompt
                .image_sources
                .get(..mark.images)
                .unwrap_or_default()
                .to_vec(),
        }
    }

    /// How much has been written: bytes, special ranges, image sources.
    pub(crate) fn position(&self) -> Mark {
        Mark {
            bytes: self.prompt.len(),
            ranges: self.special_ranges.len(),
            images: self.image_sources.len(),
        }
    }

    /// Plain text: never a special range, whatever it looks like.
    pub(crate) fn text(&mut self, text: &str) {
        self.prompt.push_str(text);
    }

    /// A template token in the configured spelling, recorded as a special range.
    pub(crate) fn special(&mut self, token: SpecialToken) {
        let spelling = self.tokens.get(token);
        self.mark(spelling);
    }

    fn mark(&mut self, spelling: &str) {
        if spelling.is_empty() {
            return;
        }
        let start = self.prompt.len();
        self.prompt.push_str(spelling);
        self.special_ranges.push(start..self.prompt.len());
    }

    /// Assistant text (content or reasoning): the grounding tokens (Ref, Box, Point, Polygon
    /// and their ends) in it are special ranges, everything else is plain text. Overlaps
    /// resolve like a standard Aho-Corasick scan: the match that ends first wins (the longest
    /// of those ending there), and scanning resumes after it.
    pub(crate) fn assistant_text(&mut self, text: &str) {
        let tokens = self.tokens;
        let patterns: Vec<&str> = GROUNDING
            .iter()
            .map(|&t| tokens.get(t))
            .filter(|p| !p.is_empty())
            .collect();
        let finder = EarliestEnding::new(text, patterns);
        let mut cursor = 0;
        while let Some(found) = finder.next_from(cursor) {
            self.text(text.get(cursor..found.start).unwrap_or_default());
            self.mark(text.get(found.clone()).unwrap_or_default());
            cursor = found.end;
        }
        self.text(text.get(cursor..).unwrap_or_default());
    }

    /// A message's content: its image placeholders become special ranges, everything else is
    /// plain text. All of the message's image sources are listed, in order.
    pub(crate) fn content(&mut self, message: &Message) {
        let content = message.content.as_str();
        let mut cursor = 0;
        for range in &message.image_placeholders {
            if !is_usable(content, cursor, range) {
                continue;
            }
            self.text(content.get(cursor..range.start).unwrap_or_default());
            self.mark(content.get(range.clone()).unwrap_or_default());
            cursor = range.end;
        }
        self.text(content.get(cursor..).unwrap_or_default());
        self.image_sources
            .extend(message.image_sources.iter().cloned());
    }

    pub(crate) fn finish(self) -> RenderedPrompt {
        RenderedPrompt {
            prompt: self.prompt,
            special_ranges: self.special_ranges,
            image_sources: self.image_sources,
        }
    }
}

/// The tokens the model uses for grounding; kept special inside assistant text.
const GROUNDING: [SpecialToken; 8] = [
    SpecialToken::Ref,
    SpecialToken::RefEnd,
    SpecialToken::Box,
    SpecialToken::BoxEnd,
    SpecialToken::Point,
    SpecialToken::PointEnd,
    SpecialToken::Polygon,
    SpecialToken::PolygonEnd,
];

/// Finds, from a cursor, the pattern occurrence that ends first (the longest of those ending
/// at the same place). One pass over the positions where a pattern's first byte is (found
/// with `memchr` for up to three distinct first bytes, the grounding tokens' `<` by
/// default); a scan stops at the first position past the best end so far, since a match
/// starting there cannot end sooner. Patterns are valid UTF-8, so a match never starts
/// inside a character.
struct EarliestEnding<'t> {
    text: &'t str,
    patterns: Vec<&'t str>,
    /// The distinct first bytes of the patterns.
    firsts: Vec<u8>,
}

impl<'t> EarliestEnding<'t> {
    fn new(text: &'t str, patterns: Vec<&'t str>) -> Self {
        let mut firsts: Vec<u8> = patterns
            .iter()
            .filter_map(|pattern| pattern.as_bytes().first().copied())
            .collect();
        firsts.sort_unstable();
        firsts.dedup();
        Self {
            text,
            patterns,
            firsts,
        }
    }

    /// The first position at or after `from` holding a pattern's first byte.
    fn candidate(&self, from: usize) -> Option<usize> {
        let rest = self.text.as_bytes().get(from..)?;
        let found = match *self.firsts.as_slice() {
            [] => None,
            [one] => memchr::memchr(one, rest),
            [one, two] => memchr::memchr2(one, two, rest),
            [one, two, three] => memchr::memchr3(one, two, three, rest),
            _ => rest.iter().position(|byte| self.firsts.contains(byte)),
        };
        found.map(|at| from + at)
    }

    fn next_from(&self, from: usize) -> Option<Range<usize>> {
        let bytes = self.text.as_bytes();
        let mut best: Option<Range<usize>> = None;
        let mut at = from;
        while let Some(start) = self.candidate(at) {
            if best.as_ref().is_some_and(|best| start >= best.end) {
                break;
            }
            let rest = bytes.get(start..).unwrap_or_default();
            for pattern in &self.patterns {
                if !rest.starts_with(pattern.as_bytes()) {
                    continue;
                }
                let end = start + pattern.len();
                // Positions only grow, so an equal end here is a later start: not better.
                if best.as_ref().is_none_or(|best| end < best.end) {
                    best = Some(start..end);
                }
            }
            at = start + 1;
        }
        best
    }
}

/// A placeholder range is used only if it is non-empty, in order, inside the content and on
/// character boundaries; anything else is ignored rather than trusted.
fn is_usable(content: &str, cursor: usize, range: &Range<usize>) -> bool {
    range.start >= cursor
        && range.start < range.end
        && range.end <= content.len()
        && content.is_char_boundary(range.start)
        && content.is_char_boundary(range.end)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn marked(writer: Writer<'_>) -> Vec<String> {
        let rendered = writer.finish();
        rendered
            .special_ranges
            .iter()
            .map(|r| rendered.prompt[r.clone()].to_owned())
            .collect()
    }

    #[test]
    fn unusable_placeholders_are_ignored() {
        let tokens = SpecialTokens::default();
        let mut message = Message::user("a<｜image｜>b<｜image｜>");
        // The placeholders are bytes 1..14 and 15..28. Used: the second; ignored: one before
        // it (out of order), one out of bounds, one inside a character, an empty one.
        message.image_placeholders = vec![15..28, 1..14, 30..40, 28..31, 2..3, 28..28];
        let mut w = Writer::new(&tokens);
        w.content(&message);
        let rendered = w.finish();
        assert_eq!(rendered.prompt, "a<｜image｜>b<｜image｜>");
        assert_eq!(rendered.special_ranges, vec![15..28]);
    }

    type Overrides = &'static [(SpecialToken, &'static str)];

    /// (name, text, overridden grounding spellings, expected special pieces)
    const GROUNDING_CASES: &[(&str, &str, Overrides, &[&str])] = &[
        (
            "defaults",
            "a <｜box｜>b<｜/box｜> <｜User｜>",
            &[],
            &["<｜box｜>", "<｜/box｜>"],
        ),
        (
            "shorter ending first wins",
            "abc ab abcd",
            &[(SpecialToken::Ref, "ab"), (SpecialToken::Box, "abc")],
            &["ab", "ab", "ab"],
        ),
        (
            "earliest end beats earlier start",
            "abc",
            &[(SpecialToken::Ref, "b"), (SpecialToken::Box, "abc")],
            &["b"],
        ),
        (
            "overlap resumes after match",
            "abcd",
            &[(SpecialToken::Ref, "bcd"), (SpecialToken::Box, "abc")],
            &["abc"],
        ),
        (
            "many matches",
            "[B][B]x[B]",
            &[(SpecialToken::Box, "[B]")],
            &["[B]", "[B]", "[B]"],
        ),
        (
            "more than three first bytes",
            "aw bx cy dz <｜/ref｜>",
            &[
                (SpecialToken::Ref, "w"),
                (SpecialToken::Box, "x"),
                (SpecialToken::Point, "y"),
                (SpecialToken::Polygon, "z"),
            ],
            &["w", "x", "y", "z", "<｜/ref｜>"],
        ),
        (
            "a later start that ends first",
            "xxabcdefg",
            &[(SpecialToken::Ref, "abcdefg"), (SpecialToken::Box, "cde")],
            &["cde"],
        ),
    ];

    #[test]
    fn grounding_tokens_in_assistant_text() {
        for (name, text, overrides, expected) in GROUNDING_CASES {
            let mut tokens = SpecialTokens::default();
            for (token, spelling) in *overrides {
                tokens.set(*token, (*spelling).to_owned());
            }
            let mut w = Writer::new(&tokens);
            w.assistant_text(text);
            assert_eq!(marked(w), *expected, "{name}");
        }
    }
}
