//! Chat `content` (a string or a list of parts) to message text plus image sources (conformance
//! cases `cc-images-*`, `cc-unicode-*`). Parts are joined with a blank line; on V4.1 each image
//! part (an `image_url`, or a `file` part whose `file_data` is an image data URL) becomes one image
//! placeholder whose byte range is recorded; on V4 every image or file part becomes the text
//! `[Unsupported Image]`.

use deepseek_model::{ConversionError, ImageDetail, ModelVersion};

use super::image_url::{check_file_data, image_source};
use super::wire::{ChatCompletionRequestContentBlock as ContentPart, Content, WireImageDetail};
use crate::images::{link_too_long, FILE_ID_UNSUPPORTED, UNSUPPORTED_IMAGE_TEXT};
use crate::placeholder_text::PlaceholderText;

const IMAGE_IN_ASSISTANT: &str = "Image in assistant message is not supported";

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
    ) -> Result<PlaceholderText, ConversionError> {
        let parts = match content {
            Content::Text(text) => {
                let mut out = PlaceholderText::default();
                out.push_owned(text);
                return Ok(out);
            }
            Content::Parts(parts) => parts,
        };
        let path = format!(".messages[{index}]");
        if self.version.is_v41() {
            check_parts(&parts, &path)?;
        }
        let mut out = PlaceholderText::default();
        for part in parts {
            let (url, detail) = match part {
                ContentPart::Text { text } => {
                    out.push_owned(text);
                    continue;
                }
                _ if !self.version.is_v41() => {
                    out.push_text(UNSUPPORTED_IMAGE_TEXT);
                    continue;
                }
                ContentPart::ImageUrl { image_url } => (
                    image_url.url,
                    image_url.detail.map_or(ImageDetail::High, image_detail),
                ),
                // A file part is an image given as `file_data` (checked by `check_parts`).
                ContentPart::File { file_data, .. } => {
                    (file_data.unwrap_or_default(), ImageDetail::High)
                }
            };
            if policy == ImagePolicy::Rejected {
                return Err(ConversionError::new(IMAGE_IN_ASSISTANT));
            }
            out.push_image(image_source(&url, detail, &path)?, self.image_token);
        }
        Ok(out)
    }
}

/// The first pass over a V4.1 part list, in order, before any URL is classified or an
/// assistant's image refused: a `file` part must carry valid image `file_data` (not a file
/// id), and an external `image_url` must fit the link limit (its error names the part).
fn check_parts(parts: &[ContentPart], path: &str) -> Result<(), ConversionError> {
    for (j, part) in parts.iter().enumerate() {
        match part {
            ContentPart::Text { .. } => {}
            ContentPart::ImageUrl { image_url } => {
                if let Some(what) = link_too_long(&image_url.url, "image_url.url ") {
                    return Err(ConversionError::new(format!(
                        "{path}.image_url.url[{j}]: {what}"
                    )));
                }
            }
            ContentPart::File {
                file_id, file_data, ..
            } => match (file_id, file_data) {
                (Some(_), Some(_)) => {
                    return Err(at(path, "file cannot have both file_id and file_data"))
                }
                (Some(_), None) => return Err(at(path, FILE_ID_UNSUPPORTED)),
                (None, None) => return Err(at(path, "file must have a file_id or file_data")),
                (None, Some(file_data)) => check_file_data(file_data, path)?,
            },
        }
    }
    Ok(())
}

fn at(path: &str, what: &str) -> ConversionError {
    ConversionError::new(format!("{path}: {what}"))
}

fn image_detail(detail: WireImageDetail) -> ImageDetail {
    match detail {
        WireImageDetail::Low => ImageDetail::Low,
        WireImageDetail::High => ImageDetail::High,
        WireImageDetail::Original => ImageDetail::Original,
        WireImageDetail::Auto => ImageDetail::Auto,
    }
}
