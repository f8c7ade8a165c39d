//! `input_image` parts: where an image must be given and where its errors point (its URL is
//! read with the shared image rules, as Chat reads it), and the `input_file` text.

use deepseek_model::{ConversionError, ImageDetail, ImageSource};

use super::wire;
use crate::images::{classify_image_url, link_too_long, FILE_ID_UNSUPPORTED};

/// What every `input_file` part becomes.
pub const UNSUPPORTED_DOCUMENT: &str = "[Unsupported Document]";

/// Where an image part sits, for error messages: the item index and the part's location
/// inside it (`content[j]` or `output[j]`).
pub struct PartLocation<'a> {
    pub item: usize,
    pub container: &'a str,
    pub part: usize,
}

impl PartLocation<'_> {
    fn item_path(&self) -> String {
        format!("input[{}]", self.item)
    }

    fn part_path(&self) -> String {
        format!("input[{}].{}[{}]", self.item, self.container, self.part)
    }
}

/// The first check on an `input_image` part (V4.1): it must name an image URL no longer
/// than the link limit; a file id or nothing is refused. The reference runs it over all parts of a content list before
/// looking at any URL.
pub fn check_present(
    part: &wire::ResponsesInputImage,
    at: &PartLocation<'_>,
) -> Result<(), ConversionError> {
    if let Some(url) = present(&part.image_url) {
        return match link_too_long(url, "image_url ") {
            Some(what) => Err(ConversionError::new(format!("{}: {what}", at.part_path()))),
            None => Ok(()),
        };
    }
    if present(&part.file_id).is_some() {
        return Err(ConversionError::new(format!(
            "{}: {FILE_ID_UNSUPPORTED}",
            at.part_path()
        )));
    }
    Err(ConversionError::new(format!(
        "{}: input_image must have image_url or file_id",
        at.part_path()
    )))
}

fn present(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

/// The image source of an `input_image` part (V4.1 rules).
pub fn image_source(
    part: &wire::ResponsesInputImage,
    at: &PartLocation<'_>,
) -> Result<ImageSource, ConversionError> {
    check_present(part, at)?;
    let url = present(&part.image_url).unwrap_or_default();
    let detail = match part.detail {
        None | Some(wire::ImageDetail::High) => ImageDetail::High,
        Some(wire::ImageDetail::Low) => ImageDetail::Low,
        Some(wire::ImageDetail::Original) => ImageDetail::Original,
        Some(wire::ImageDetail::Auto) => ImageDetail::Auto,
    };
    let kind = classify_image_url(url)
        .map_err(|m| ConversionError::new(format!("{}: {m}", at.item_path())))?;
    Ok(ImageSource {
        kind,
        detail,
        path: at.item_path(),
    })
}
