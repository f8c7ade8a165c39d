//! Renders a canonical conversation into the exact prompt text DeepSeek V4 / V4.1 were
//! trained on, with the special ranges (byte offsets of every template token the renderer
//! emitted). It refuses to tokenize and never fails: it renders whatever the conversation
//! holds.

use std::ops::Range;

use deepseek_model::{Conversation, ImageSource, ModelVersion, SpecialTokens};

/// A rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RenderedPrompt {
    pub prompt: String,
    /// Ascending, disjoint byte ranges of `prompt`, each one special-token spelling.
    pub special_ranges: Vec<Range<usize>>,
    /// The sources whose placeholders appear, in prompt order.
    pub image_sources: Vec<ImageSource>,
}

/// Render `conversation` for `version` with the given special-token spellings.
pub fn render(conversation: &Conversation, version: ModelVersion, special_tokens: &SpecialTokens) -> RenderedPrompt {
    let _ = (conversation, version, special_tokens);
    RenderedPrompt::default()
}
