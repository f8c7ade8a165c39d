//! Chat `content` (a string or a list of parts) to message text plus image sources
//! (behavior.md §4.2, §7.7). Parts are joined with a blank line; on V4.1 each image part
//! becomes one image placeholder whose byte range is recorded, on V4 every image or file
//! part becomes the text `[Unsupported Image]`.

use std::ops::Range;

use deepseek_model::{ConversionError, ImageDetail, ImageSource, ModelVersion};

use super::image_url::image_source;
use super::wire::{ChatCompletionRequestContentBlock as ContentPart, Content, WireImageDetail};

const PART_SEPARATOR: &str = "\n\n";
const UNSUPPORTED_IMAGE_TEXT: &str = "[Unsupported Image]";

/// Converted content of one message.
#[derive(Debug, Default)]
pub(crate) struct MessageText {
    pub text: String,
    pub image_sources: Vec<ImageSource>,
    pub image_placeholders: Vec<Range<usize>>,
}

/// Who may carry images: system, user and tool messages may; assistant messages may not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImagePolicy {
    Allowed,
    Rejected,
}

/// Conversion context shared by every message of one request.
pub(crate) struct ContentContext<'a> {
    pub version: ModelVersion,
    pub image_token: &'a str,
}

impl ContentContext<'_> {
    /// Convert the content of message `index`.
    pub(crate) fn convert(
        &self,
        content: Content,
        index: usize,
        policy: ImagePolicy,
    ) -> Result<MessageText, ConversionError> {
        let parts = match content {
            Content::Text(text) => return Ok(MessageText { text, ..MessageText::default() }),
            Content::Parts(parts) => parts,
        };
        let path = format!(".messages[{index}]");
        let mut out = MessageText::default();
        for (n, part) in parts.into_iter().enumerate() {
            if n > 0 {
                out.text.push_str(PART_SEPARATOR);
            }
            match part {
                ContentPart::Text { text } => out.text.push_str(&text),
                _ if !self.version.is_v41() => out.text.push_str(UNSUPPORTED_IMAGE_TEXT),
                ContentPart::File {} => {
                    return Err(ConversionError::new(format!("{path}: file must have a file_id or file_data")));
                }
                ContentPart::ImageUrl { .. } if policy == ImagePolicy::Rejected => {
                    return Err(ConversionError::new("Image in assistant message is not supported"));
                }
                ContentPart::ImageUrl { image_url } => {
                    let detail = image_url.detail.map_or(ImageDetail::High, image_detail);
                    out.image_sources.push(image_source(&image_url.url, detail, &path)?);
                    let start = out.text.len();
                    out.text.push_str(self.image_token);
                    out.image_placeholders.push(start..out.text.len());
                }
            }
        }
        Ok(out)
    }
}

fn image_detail(detail: WireImageDetail) -> ImageDetail {
    match detail {
        WireImageDetail::Low => ImageDetail::Low,
        WireImageDetail::High => ImageDetail::High,
        WireImageDetail::Original => ImageDetail::Original,
        WireImageDetail::Auto => ImageDetail::Auto,
    }
}
