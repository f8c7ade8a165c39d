//! `input_image` parts: the image URL forms a V4.1 request may carry (http(s) URLs and base64
//! data URLs of the four supported formats) and the placeholder text V4 uses instead.

use deepseek_model::{ConversionError, ImageDetail, ImageSource, ImageSourceKind};

use super::wire;

/// What V4 renders in place of every image.
pub const UNSUPPORTED_IMAGE: &str = "[Unsupported Image]";
/// What every `input_file` part becomes.
pub const UNSUPPORTED_DOCUMENT: &str = "[Unsupported Document]";

const UNSUPPORTED_FORMAT: &str = "You have uploaded an unsupported image. Please make sure your image is valid and has one of the following formats: webp, png, jpeg, and gif.";
const SUPPORTED_MIME_TYPES: [&str; 5] = ["image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp"];

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

/// The first check on an `input_image` part (V4.1): it must name an image URL; a file id
/// or nothing is refused. The reference runs it over all parts of a content list before
/// looking at any URL.
pub fn check_present(part: &wire::ResponsesInputImage, at: &PartLocation<'_>) -> Result<(), ConversionError> {
    if present(&part.image_url).is_some() {
        return Ok(());
    }
    if present(&part.file_id).is_some() {
        return Err(ConversionError::new(format!(
            "{}: file_id is not supported. Pass the image as a base64 data url instead.",
            at.part_path()
        )));
    }
    Err(ConversionError::new(format!("{}: input_image must have image_url or file_id", at.part_path())))
}

fn present(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

/// The image source of an `input_image` part (V4.1 rules).
pub fn image_source(part: &wire::ResponsesInputImage, at: &PartLocation<'_>) -> Result<ImageSource, ConversionError> {
    check_present(part, at)?;
    let url = present(&part.image_url).unwrap_or_default().to_owned();
    let detail = match part.detail {
        None | Some(wire::ImageDetail::High) => ImageDetail::High,
        Some(wire::ImageDetail::Low) => ImageDetail::Low,
        Some(wire::ImageDetail::Original) => ImageDetail::Original,
        Some(wire::ImageDetail::Auto) => ImageDetail::Auto,
    };
    let kind = classify_url(url).map_err(|m| ConversionError::new(format!("{}: {m}", at.item_path())))?;
    Ok(ImageSource { kind, detail, path: at.item_path() })
}

/// Classify an image URL, or say why it is refused (without the path prefix).
fn classify_url(url: String) -> Result<ImageSourceKind, &'static str> {
    let lower = url.get(..8).unwrap_or(&url).to_ascii_lowercase();
    if lower.starts_with("http:") || lower.starts_with("https:") {
        return Ok(ImageSourceKind::Url(url));
    }
    let Some(rest) = url.strip_prefix("data:") else {
        return Err("Unsupported image_url format");
    };
    let Some(marker) = rest.find(";base64,") else {
        return Err("Unsupported image_url format");
    };
    let (media, payload) = (&rest[..marker], &rest[marker + ";base64,".len()..]);
    let essence = media.split(';').next().unwrap_or_default();
    let essence = essence.trim_matches(|c: char| c.is_ascii_whitespace()).to_ascii_lowercase();
    if !SUPPORTED_MIME_TYPES.contains(&essence.as_str()) {
        return Err(UNSUPPORTED_FORMAT);
    }
    if !is_forgiving_base64(payload) {
        return Err("Invalid base64 data");
    }
    Ok(ImageSourceKind::DataUrl(url))
}

/// WHATWG forgiving-base64 validity: whitespace ignored, up to two trailing `=` when the
/// length is a multiple of four, never a remainder of one.
fn is_forgiving_base64(payload: &str) -> bool {
    let mut data: Vec<u8> = payload.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if matches!(data.len() % 4, 0) {
        for _ in 0..2 {
            if data.last() == Some(&b'=') {
                data.pop();
            }
        }
    }
    data.len() % 4 != 1 && data.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_classification_table() {
        let cases: [(&str, Result<&str, &str>); 12] = [
            ("http://x", Ok("url")),
            ("HTTPS://x", Ok("url")),
            ("ftp://x", Err("Unsupported image_url format")),
            ("data:image/png,%89", Err("Unsupported image_url format")),
            ("data:image/gif;BASE64,AAAA", Err("Unsupported image_url format")),
            ("data:image/png;base64,AAAA", Ok("data")),
            ("data:IMAGE/PNG;base64,AA", Ok("data")),
            ("data:image/png;charset=x;base64,AAA=", Ok("data")),
            ("data:text/plain;base64,aGVsbG8=", Err(UNSUPPORTED_FORMAT)),
            ("data:image/bmp;base64,!!!", Err(UNSUPPORTED_FORMAT)),
            ("data:image/png;base64,A===", Err("Invalid base64 data")),
            ("data:image/webp;base64,A", Err("Invalid base64 data")),
        ];
        for (url, expected) in cases {
            let got = classify_url(url.to_owned()).map(|k| match k {
                ImageSourceKind::Url(_) => "url",
                _ => "data",
            });
            assert_eq!(got, expected, "{url}");
        }
    }
}
