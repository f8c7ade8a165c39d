//! The prompt writer: appends plain text and special-token spellings, recording the byte
//! range of every special token it emits and the image sources in prompt order.

use std::ops::Range;

use deepseek_model::{ImageSource, Message, SpecialToken, SpecialTokens};

use crate::RenderedPrompt;

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
        let mut finder = EarliestEnding::new(text, patterns);
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
/// at the same place). Each pattern's next occurrence is cached and searched again only once
/// the cursor has passed its start, so a whole scan costs one pass per pattern.
struct EarliestEnding<'t> {
    text: &'t str,
    /// (pattern, its next occurrence at or after the last search start; `None` if none left)
    next: Vec<(&'t str, Option<usize>)>,
    searched_from: Vec<usize>,
}

impl<'t> EarliestEnding<'t> {
    fn new(text: &'t str, patterns: Vec<&'t str>) -> Self {
        let count = patterns.len();
        Self {
            text,
            next: patterns.into_iter().map(|p| (p, Some(0))).collect(),
            searched_from: vec![usize::MAX; count],
        }
    }

    fn next_from(&mut self, from: usize) -> Option<Range<usize>> {
        let mut best: Option<Range<usize>> = None;
        for ((pattern, next), searched) in self.next.iter_mut().zip(self.searched_from.iter_mut()) {
            let Some(start) = *next else { continue };
            if start < from || *searched == usize::MAX {
                *next = self
                    .text
                    .get(from..)
                    .and_then(|rest| rest.find(*pattern))
                    .map(|i| from + i);
                *searched = from;
            }
            let Some(start) = *next else { continue };
            let candidate = start..start + pattern.len();
            let better = match &best {
                None => true,
                Some(b) => {
                    candidate.end < b.end || (candidate.end == b.end && candidate.start < b.start)
                }
            };
            if better {
                best = Some(candidate);
            }
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
