//! Image rules the three protocols share (behavior.md §4.2, §5.2, §6.2): the V4 placeholder
//! text, which URLs count as `http` URLs, how a base64 data URL is read and checked, and the
//! error texts for refused images. Each protocol keeps its own part shapes and error paths;
//! where the reference reads URLs differently per protocol, the difference is a parameter
//! ([`UrlReading`]). Nothing is fetched or decoded beyond a base64 validity check.

use deepseek_model::ImageSourceKind;

/// What V4 renders in place of every image part.
pub(crate) const UNSUPPORTED_IMAGE_TEXT: &str = "[Unsupported Image]";
/// Refusal of an image given by file id (Chat `file`, Responses `input_image`, Messages `file`).
pub(crate) const FILE_ID_UNSUPPORTED: &str =
    "file_id is not supported. Pass the image as a base64 data url instead.";
pub(crate) const UNSUPPORTED_FORMAT: &str = "Unsupported image_url format";
pub(crate) const UNSUPPORTED_IMAGE: &str = "You have uploaded an unsupported image. Please make sure your image is valid and has one of the following formats: webp, png, jpeg, and gif.";
pub(crate) const INVALID_BASE64: &str = "Invalid base64 data";

/// MIME types a data URL may declare (compared ASCII-case-insensitively).
const IMAGE_MIME_TYPES: [&str; 5] = [
    "image/png",
    "image/jpeg",
    "image/jpg",
    "image/gif",
    "image/webp",
];

/// How a protocol reads an image URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UrlReading {
    /// Chat: anything starting with `http` (any case) is a URL; data URLs are read the way a
    /// WHATWG data-URL processor reads them (see [`DataUrl::parse_whatwg`]).
    Whatwg,
    /// Responses: only `http:` / `https:` (any case) are URLs; a data URL is `data:` exactly,
    /// the media type up to the first `;base64,`, and the rest taken literally.
    Literal,
}

/// Classify an image URL, or say why it is refused (without the path prefix). The checks run
/// in the reference's order: URL, data-URL syntax and `;base64`, media type, base64 body.
pub(crate) fn classify_image_url(
    url: &str,
    reading: UrlReading,
) -> Result<ImageSourceKind, &'static str> {
    let is_url = match reading {
        UrlReading::Whatwg => starts_with_http(url),
        UrlReading::Literal => {
            starts_with_ignore_case(url, "http:") || starts_with_ignore_case(url, "https:")
        }
    };
    if is_url {
        return Ok(ImageSourceKind::Url(url.to_owned()));
    }
    let data = match reading {
        UrlReading::Whatwg => DataUrl::parse_whatwg(url),
        UrlReading::Literal => DataUrl::parse_literal(url),
    };
    let data = data.filter(|d| d.base64).ok_or(UNSUPPORTED_FORMAT)?;
    if !data.has_image_mime() {
        return Err(UNSUPPORTED_IMAGE);
    }
    if !is_forgiving_base64(&data.body) {
        return Err(INVALID_BASE64);
    }
    Ok(ImageSourceKind::DataUrl(url.to_owned()))
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

/// `data:<mime>[;params][;base64],<body>`, as one protocol reads it.
pub(crate) struct DataUrl<'a> {
    /// The header up to the `;base64` marker (or all of it).
    mime: &'a str,
    base64: bool,
    /// The body bytes the base64 check sees.
    body: Vec<u8>,
}

impl<'a> DataUrl<'a> {
    /// WHATWG reading: surrounding C0/space characters trimmed, `data:` in any case, the
    /// fragment dropped, the body percent-decoded. Unlike WHATWG, the `;base64` marker is
    /// case-sensitive (the reference rejects `;BASE64`); spaces may precede it.
    pub(crate) fn parse_whatwg(url: &'a str) -> Option<Self> {
        let url = url.trim_matches(|c: char| c <= ' ');
        if !starts_with_ignore_case(url, "data:") {
            return None;
        }
        let rest = url.get("data:".len()..)?;
        let rest = rest.split('#').next().unwrap_or_default();
        let (header, body) = rest.split_once(',')?;
        let body = percent_decode(body);
        Some(match strip_base64_suffix(header) {
            Some(mime) => Self {
                mime,
                base64: true,
                body,
            },
            None => Self {
                mime: header,
                base64: false,
                body,
            },
        })
    }

    /// Literal reading: `data:` exactly, the first `;base64,` ends the header, and the body
    /// is the rest as written. Without the marker there is no data URL to read.
    fn parse_literal(url: &'a str) -> Option<Self> {
        let (mime, body) = url.strip_prefix("data:")?.split_once(";base64,")?;
        Some(Self {
            mime,
            base64: true,
            body: body.as_bytes().to_vec(),
        })
    }

    pub(crate) fn has_image_mime(&self) -> bool {
        let essence = self
            .mime
            .split(';')
            .next()
            .unwrap_or_default()
            .trim_matches(|c: char| c.is_ascii_whitespace());
        IMAGE_MIME_TYPES
            .iter()
            .any(|m| m.eq_ignore_ascii_case(essence))
    }

    pub(crate) fn body_is_base64(&self) -> bool {
        is_forgiving_base64(&self.body)
    }
}

/// Strip a trailing `;base64` (spaces allowed after the `;`), returning what precedes it.
fn strip_base64_suffix(header: &str) -> Option<&str> {
    let without = header.strip_suffix("base64")?;
    without.trim_end_matches(' ').strip_suffix(';')
}

/// `%XX` escapes decoded; anything else (including a malformed escape) kept as is.
fn percent_decode(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let escaped = (b == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(decoded) => {
                out.push(decoded);
                i += 3;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// WHATWG forgiving-base64 validity: ASCII whitespace ignored, up to two trailing `=` when
/// the length is a multiple of four, never a remainder of one.
#[allow(clippy::manual_is_multiple_of)] // `is_multiple_of` is newer than the workspace MSRV (1.85)
fn is_forgiving_base64(body: &[u8]) -> bool {
    let mut data: Vec<u8> = body
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    if data.len() % 4 == 0 {
        for _ in 0..2 {
            if data.last() == Some(&b'=') {
                data.pop();
            }
        }
    }
    data.len() % 4 != 1
        && data
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(result: Result<ImageSourceKind, &'static str>) -> Result<&'static str, &'static str> {
        result.map(|k| {
            if matches!(k, ImageSourceKind::Url(_)) {
                "url"
            } else {
                "data"
            }
        })
    }

    #[test]
    fn literal_reading_table() {
        let cases: [(&str, Result<&str, &str>); 15] = [
            ("http://x", Ok("url")),
            ("HTTPS://x", Ok("url")),
            ("httpx://a", Err(UNSUPPORTED_FORMAT)),
            ("ftp://x", Err(UNSUPPORTED_FORMAT)),
            ("DATA:image/png;base64,AAAA", Err(UNSUPPORTED_FORMAT)),
            ("data:image/png,%89", Err(UNSUPPORTED_FORMAT)),
            ("data:image/gif;BASE64,AAAA", Err(UNSUPPORTED_FORMAT)),
            ("data:image/png;base64,AAAA", Ok("data")),
            ("data:IMAGE/PNG;base64,AA", Ok("data")),
            ("data:image/png;charset=x;base64,AAA=", Ok("data")),
            ("data:text/plain;base64,aGVsbG8=", Err(UNSUPPORTED_IMAGE)),
            ("data:image/bmp;base64,!!!", Err(UNSUPPORTED_IMAGE)),
            ("data:image/png;base64,A===", Err(INVALID_BASE64)),
            ("data:image/webp;base64,A", Err(INVALID_BASE64)),
            ("data:image/png;base64,AA%3D%3D", Err(INVALID_BASE64)),
        ];
        for (url, want) in cases {
            assert_eq!(
                kind(classify_image_url(url, UrlReading::Literal)),
                want,
                "{url}"
            );
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
