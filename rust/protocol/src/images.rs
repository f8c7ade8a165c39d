//! Image rules the three protocols share: the V4 placeholder text, which URLs count as
//! `http` URLs, the external-link length limit, how a base64 data URL is read and checked,
//! and the error texts for refused images. Each protocol keeps its own part shapes, check
//! order and error paths. Nothing is fetched or decoded beyond a base64 validity check.
//! Pinned against the reference by `tests/test_image_urls.py`.

use deepseek_model::ImageSourceKind;

/// What V4 renders in place of every image part.
pub(crate) const UNSUPPORTED_IMAGE_TEXT: &str = "[Unsupported Image]";
/// Refusal of an image given by file id (Chat `file`, Responses `input_image`, Messages `file`).
pub(crate) const FILE_ID_UNSUPPORTED: &str =
    "file_id is not supported. Pass the image as a base64 data url instead.";
pub(crate) const UNSUPPORTED_FORMAT: &str = "Unsupported image_url format";
pub(crate) const UNSUPPORTED_IMAGE: &str = "You have uploaded an unsupported image. Please make sure your image is valid and has one of the following formats: webp, png, jpeg, and gif.";
pub(crate) const INVALID_BASE64: &str = "Invalid base64 data";
/// The longest external image URL accepted, in UTF-8 bytes.
pub(crate) const MAX_LINK_LENGTH: usize = 8192;

/// Image subtypes a data URL may declare (`image/<subtype>`, any case).
const IMAGE_SUBTYPES: [&str; 5] = ["png", "jpeg", "jpg", "gif", "webp"];

/// Classify an image URL (Chat `image_url`, Responses `input_image`), or say why it is
/// refused (without the path prefix). Anything starting with `http` (any case) is a URL;
/// anything else must be a data URL ([`DataUrl`]) whose text holds `base64,` (so
/// `;BASE64,` is refused and `data:image/png,;base64,AA` passes, as in the reference), of an
/// image type, whose body decodes.
pub(crate) fn classify_image_url(url: &str) -> Result<ImageSourceKind, &'static str> {
    if starts_with_http(url) {
        return Ok(ImageSourceKind::Url(url.to_owned()));
    }
    let data = DataUrl::parse(url).ok_or(UNSUPPORTED_FORMAT)?;
    if !url.contains("base64,") {
        return Err(UNSUPPORTED_FORMAT);
    }
    if !data.has_image_mime() {
        return Err(UNSUPPORTED_IMAGE);
    }
    if !data.body_decodes() {
        return Err(INVALID_BASE64);
    }
    Ok(ImageSourceKind::DataUrl(url.to_owned()))
}

/// The refusal of an external URL longer than [`MAX_LINK_LENGTH`] bytes (V4.1, every
/// protocol; `what` names the field as each protocol does), or `None` when it may pass.
pub(crate) fn link_too_long(url: &str, what: &str) -> Option<String> {
    (starts_with_http(url) && url.len() > MAX_LINK_LENGTH).then(|| {
        format!(
            "{what}external link length {} too long, max link length {MAX_LINK_LENGTH}. Consider passing file data directly with base64 data url instead.",
            url.len()
        )
    })
}

/// The reference's loose URL test (Chat, Messages): the URL only has to start with `http`, in
/// any case (`http:/a`, `https:` and even `httpx:a` pass; ` http://a` and `ftp://a` do not).
pub(crate) fn starts_with_http(url: &str) -> bool {
    starts_with_ignore_case(url, "http")
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// A data URL read the way a WHATWG data-URL processor reads it (the `data-url` crate, the
/// one the reference uses): surrounding blanks trimmed, `data:` in any case, the media type
/// parsed and lower-cased, the body percent-decoded and, with a `;base64` marker, read as
/// forgiving base64.
pub(crate) struct DataUrl<'a>(data_url::DataUrl<'a>);

impl<'a> DataUrl<'a> {
    pub(crate) fn parse(url: &'a str) -> Option<Self> {
        data_url::DataUrl::process(url).ok().map(Self)
    }

    pub(crate) fn has_image_mime(&self) -> bool {
        let mime = self.0.mime_type();
        mime.type_ == "image" && IMAGE_SUBTYPES.contains(&mime.subtype.as_str())
    }

    /// Whether the body decodes (base64 when the URL says so; percent-decoding never fails).
    pub(crate) fn body_decodes(&self) -> bool {
        self.0.decode::<_, ()>(|_| Ok(())).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_length_table() {
        let long = |prefix: &str, n: usize| format!("{prefix}{}", "x".repeat(n - prefix.len()));
        let cases = [
            ("at the limit", long("http://a/", 8192), None),
            ("one byte over", long("http://a/", 8193), Some(8193)),
            ("any http prefix counts", long("httpx:", 9000), Some(9000)),
            ("upper case counts", long("HTTPS://", 8193), Some(8193)),
            (
                "bytes, not characters",
                format!("http://{}", "é".repeat(4093)),
                Some(8193),
            ),
            (
                "data URLs are not links",
                long("data:image/png;base64,", 9000),
                None,
            ),
            ("other schemes are not links", long("ftp://", 9000), None),
        ];
        for (name, url, want) in cases {
            let want = want.map(|n| format!("p: external link length {n} too long, max link length 8192. Consider passing file data directly with base64 data url instead."));
            assert_eq!(link_too_long(&url, "p: "), want, "{name}");
        }
    }

    #[test]
    fn http_prefix_table() {
        for (url, ok) in [
            ("http://a", true),
            ("HTTP://x.com/a", true),
            ("https://", true),
            ("http:/a", true),
            ("httpx:a", true),
            ("http", true),
            (" http://a", false),
            ("htt:p", false),
            ("ftp://x", false),
            ("data:image/png;base64,AAAA", false),
            ("", false),
        ] {
            assert_eq!(starts_with_http(url), ok, "{url:?}");
        }
    }
}
