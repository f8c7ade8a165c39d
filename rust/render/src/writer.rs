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
        Self { tokens, prompt: String::new(), special_ranges: Vec::new(), image_sources: Vec::new() }
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
        let patterns: Vec<&str> = GROUNDING.iter().map(|&t| tokens.get(t)).filter(|p| !p.is_empty()).collect();
        let mut cursor = 0;
        while let Some(found) = earliest_ending(text, cursor, &patterns) {
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
        self.image_sources.extend(message.image_sources.iter().cloned());
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

/// The occurrence (at or after `from`) of any pattern that ends first; among those ending at
/// the same place, the longest.
fn earliest_ending(text: &str, from: usize, patterns: &[&str]) -> Option<Range<usize>> {
    let rest = text.get(from..)?;
    let mut best: Option<Range<usize>> = None;
    for pattern in patterns {
        // The first occurrence of a pattern is also its earliest-ending one.
        let Some(start) = rest.find(pattern) else { continue };
        let candidate = from + start..from + start + pattern.len();
        let better = match &best {
            None => true,
            Some(b) => candidate.end < b.end || (candidate.end == b.end && candidate.start < b.start),
        };
        if better {
            best = Some(candidate);
        }
    }
    best
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
