//! Message text built part by part (Chat and Responses content parts, Messages blocks):
//! parts are joined with a blank line, and each image part becomes the image placeholder
//! whose byte range and source are recorded.

use std::ops::Range;

use deepseek_model::{ImageSource, Message};

/// Text with image placeholders at recorded byte ranges, joined from parts by `"\n\n"`.
#[derive(Debug, Default)]
pub(crate) struct PlaceholderText {
    text: String,
    parts: usize,
    sources: Vec<ImageSource>,
    placeholders: Vec<Range<usize>>,
}

impl PlaceholderText {
    fn separate(&mut self) {
        if self.parts > 0 {
            self.text.push_str("\n\n");
        }
        self.parts += 1;
    }

    /// Append one text part.
    pub(crate) fn push_text(&mut self, text: &str) {
        self.separate();
        self.text.push_str(text);
    }

    /// [`PlaceholderText::push_text`] for a part the caller owns: the first part is kept
    /// as it is rather than copied (a message's whole text, often).
    pub(crate) fn push_owned(&mut self, text: String) {
        if self.parts == 0 {
            self.parts = 1;
            self.text = text;
        } else {
            self.push_text(&text);
        }
    }

    /// Append one image part: `token` in the text, its range and `source` recorded.
    pub(crate) fn push_image(&mut self, source: ImageSource, token: &str) {
        self.separate();
        let start = self.text.len();
        self.text.push_str(token);
        self.placeholders.push(start..self.text.len());
        self.sources.push(source);
    }

    /// The text so far.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The text alone (for messages that carry no images).
    pub(crate) fn into_text(self) -> String {
        self.text
    }

    /// `message` with this text as its content, images and placeholders.
    pub(crate) fn into_message(self, mut message: Message) -> Message {
        message.content = self.text;
        message.image_sources = self.sources;
        message.image_placeholders = self.placeholders;
        message
    }
}
