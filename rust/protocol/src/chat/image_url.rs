//! V4.1 image parts: which `image_url` URLs and `file_data` data URLs become image sources,
//! and the errors for the rest (behavior.md §4.2 "Image parts"). Nothing is fetched or
//! decoded beyond a base64 validity check.
//!
//! Data URLs are read the way a WHATWG data-URL processor reads them: surrounding
//! C0/space characters trimmed, `data:` in any case, the fragment dropped, the body
//! percent-decoded before a forgiving base64 check. Unlike WHATWG, the `;base64` marker is
//! case-sensitive (the reference rejects `;BASE64`).

use deepseek_model::{ConversionError, ImageDetail, ImageSource, ImageSourceKind};

const UNSUPPORTED_FORMAT: &str = "Unsupported image_url format";
const UNSUPPORTED_IMAGE: &str = "You have uploaded an unsupported image. Please make sure your image is valid and has one of the following formats: webp, png, jpeg, and gif.";
const UNSUPPORTED_FILE: &str = "You have uploaded an unsupported file. Please make sure your file is valid and has one of the following formats: webp, png, jpeg, and gif.";
const INVALID_BASE64: &str = "Invalid base64 data";
const INVALID_FILE_DATA: &str = "file_data is not a valid base64 data url";

/// MIME types a data URL may declare (compared ASCII-case-insensitively).
const IMAGE_MIME_TYPES: [&str; 5] = ["image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp"];

/// An `image_url` part: anything starting with `http` (any case) is a URL source; otherwise
/// it must be a base64 data URL of a supported image type. `path` prefixes every error.
pub(crate) fn image_source(url: &str, detail: ImageDetail, path: &str) -> Result<ImageSource, ConversionError> {
    let fail = |what: &str| ConversionError::new(format!("{path}: {what}"));
    let kind = if starts_with_ignore_case(url, "http") {
        ImageSourceKind::Url(url.to_owned())
    } else {
        let data = DataUrl::parse(url).ok_or_else(|| fail(UNSUPPORTED_FORMAT))?;
        if !data.base64 {
            return Err(fail(UNSUPPORTED_FORMAT));
        }
        if !data.has_image_mime() {
            return Err(fail(UNSUPPORTED_IMAGE));
        }
        if !data.body_is_base64() {
            return Err(fail(INVALID_BASE64));
        }
        ImageSourceKind::DataUrl(url.to_owned())
    };
    Ok(ImageSource { kind, detail, path: path.to_owned() })
}

/// A `file` part's `file_data` must be a data URL of a supported image type with a valid
/// base64 body; it is then treated as an `image_url` (whose own rules still apply).
pub(crate) fn check_file_data(file_data: &str, path: &str) -> Result<(), ConversionError> {
    let fail = |what: &str| ConversionError::new(format!("{path}: {what}"));
    let data = DataUrl::parse(file_data).ok_or_else(|| fail(INVALID_FILE_DATA))?;
    if !data.has_image_mime() {
        return Err(fail(UNSUPPORTED_FILE));
    }
    if !data.body_is_base64() {
        return Err(fail(INVALID_FILE_DATA));
    }
    Ok(())
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.as_bytes().get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// `data:<mime>[;params][;base64],<body>[#fragment]`.
struct DataUrl<'a> {
    /// The header up to the `;base64` marker (or all of it).
    mime: &'a str,
    base64: bool,
    body: &'a str,
}

impl<'a> DataUrl<'a> {
    fn parse(url: &'a str) -> Option<Self> {
        let url = url.trim_matches(|c: char| c <= ' ');
        if !starts_with_ignore_case(url, "data:") {
            return None;
        }
        let rest = url.get("data:".len()..)?;
        let rest = rest.split('#').next().unwrap_or_default();
        let (header, body) = rest.split_once(',')?;
        Some(match strip_base64_suffix(header) {
            Some(mime) => Self { mime, base64: true, body },
            None => Self { mime: header, base64: false, body },
        })
    }

    fn has_image_mime(&self) -> bool {
        let essence = self.mime.split(';').next().unwrap_or_default().trim_matches(|c: char| c.is_ascii_whitespace());
        IMAGE_MIME_TYPES.iter().any(|m| m.eq_ignore_ascii_case(essence))
    }

    fn body_is_base64(&self) -> bool {
        is_forgiving_base64(&percent_decode(self.body))
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

/// WHATWG forgiving-base64 validity: ASCII whitespace ignored, padding optional.
#[allow(clippy::manual_is_multiple_of)] // `is_multiple_of` is newer than the workspace MSRV (1.85)
fn is_forgiving_base64(body: &[u8]) -> bool {
    let mut data: Vec<u8> =
        body.iter().copied().filter(|b| !matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')).collect();
    if data.len() % 4 == 0 {
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

    fn classify(result: Result<ImageSource, ConversionError>) -> Result<&'static str, String> {
        result.map(|s| if matches!(s.kind, ImageSourceKind::Url(_)) { "url" } else { "data" }).map_err(|e| e.message)
    }

    #[test]
    fn image_url_classification() {
        let cases: [(&str, Result<&str, &str>); 17] = [
            ("http://x", Ok("url")),
            ("HTTPS:x", Ok("url")),
            ("httpx://a", Ok("url")),
            (" http://x", Err(UNSUPPORTED_FORMAT)),
            ("ftp://x", Err(UNSUPPORTED_FORMAT)),
            ("data:image/png;base64,AAAA", Ok("data")),
            (" DATA:Image/Jpeg;base64,AA", Ok("data")),
            ("data:image/png; base64,AA AA", Ok("data")),
            ("data:image/png;base64,AA%3D%3D", Ok("data")),
            ("data:image/png;base64,AAAA#frag", Ok("data")),
            ("data:image/png;BASE64,AA", Err(UNSUPPORTED_FORMAT)),
            ("data:image/png,AA", Err(UNSUPPORTED_FORMAT)),
            ("data:text/plain;base64,!!!", Err(UNSUPPORTED_IMAGE)),
            ("data:;base64,AA", Err(UNSUPPORTED_IMAGE)),
            ("data:image/png;base64,AAAAA", Err(INVALID_BASE64)),
            ("data:image/png;base64,AA=", Err(INVALID_BASE64)),
            ("data:image/png;base64,AA,AA", Err(INVALID_BASE64)),
        ];
        for (url, want) in cases {
            let want = want.map_err(|m| format!(".messages[0]: {m}"));
            assert_eq!(classify(image_source(url, ImageDetail::High, ".messages[0]")), want, "{url}");
        }
    }

    #[test]
    fn file_data_classification() {
        let cases: [(&str, Result<&str, &str>); 8] = [
            ("data:image/png;base64,AAAA", Ok("data")),
            ("http://x/a.png", Err(INVALID_FILE_DATA)),
            ("data:image/png", Err(INVALID_FILE_DATA)),
            ("data:text/plain,AAAA", Err(UNSUPPORTED_FILE)),
            ("data:,AAAA", Err(UNSUPPORTED_FILE)),
            ("data:image/png;base64,!!!", Err(INVALID_FILE_DATA)),
            ("data:image/png;BASE64,AAAA", Err(UNSUPPORTED_FORMAT)),
            ("data:image/png,AAAA", Err(UNSUPPORTED_FORMAT)),
        ];
        for (data, want) in cases {
            let want = want.map_err(|m| format!(".messages[1]: {m}"));
            let got = check_file_data(data, ".messages[1]")
                .and_then(|()| image_source(data, ImageDetail::High, ".messages[1]"));
            assert_eq!(classify(got), want, "{data}");
        }
    }
}
