//! V4.1 `image_url` parts: which URLs become image sources, and the errors for the rest
//! (behavior.md §4.2 "Image parts"). Nothing is fetched or decoded beyond a base64 check.

use deepseek_model::{ConversionError, ImageDetail, ImageSource, ImageSourceKind};

const UNSUPPORTED_FORMAT: &str = "Unsupported image_url format";
const UNSUPPORTED_IMAGE: &str = "You have uploaded an unsupported image. Please make sure your image is valid and has one of the following formats: webp, png, jpeg, and gif.";
const INVALID_BASE64: &str = "Invalid base64 data";

/// MIME types a data URL may declare (compared ASCII-case-insensitively).
const IMAGE_MIME_TYPES: [&str; 5] = ["image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp"];

/// Classify `url`: anything starting with `http` (any case) is a URL source; otherwise it
/// must be a base64 data URL of a supported image type. `path` prefixes every error.
pub(crate) fn image_source(url: &str, detail: ImageDetail, path: &str) -> Result<ImageSource, ConversionError> {
    let fail = |what: &str| ConversionError::new(format!("{path}: {what}"));
    let kind = if starts_with_ignore_case(url, "http") {
        ImageSourceKind::Url(url.to_owned())
    } else {
        let (mime, body) = split_base64_data_url(url).ok_or_else(|| fail(UNSUPPORTED_FORMAT))?;
        if !is_supported_mime(mime) {
            return Err(fail(UNSUPPORTED_IMAGE));
        }
        if !is_forgiving_base64(body) {
            return Err(fail(INVALID_BASE64));
        }
        ImageSourceKind::DataUrl(url.to_owned())
    };
    Ok(ImageSource { kind, detail, path: path.to_owned() })
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.as_bytes().get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// `data:<mime>[;params];base64,<body>` → (`<mime>[;params]`, `<body>`), with the leading and
/// trailing C0/space characters a URL parser strips. `None` when it is not a base64 data URL.
fn split_base64_data_url(url: &str) -> Option<(&str, &str)> {
    let url = url.trim_matches(|c: char| c <= ' ');
    if !starts_with_ignore_case(url, "data:") {
        return None;
    }
    let rest = url.get("data:".len()..)?;
    let (header, body) = rest.split_once(',')?;
    let mime = strip_base64_suffix(header)?;
    Some((mime, body))
}

/// Strip a trailing `;base64` (spaces allowed after the `;`), returning what precedes it.
fn strip_base64_suffix(header: &str) -> Option<&str> {
    let without = header.strip_suffix("base64")?;
    let without = without.trim_end_matches(' ');
    without.strip_suffix(';')
}

fn is_supported_mime(mime: &str) -> bool {
    let essence = mime.split(';').next().unwrap_or_default().trim_matches(|c: char| c.is_ascii_whitespace());
    IMAGE_MIME_TYPES.iter().any(|m| m.eq_ignore_ascii_case(essence))
}

/// WHATWG forgiving-base64 validity: ASCII whitespace ignored, padding optional.
fn is_forgiving_base64(body: &str) -> bool {
    let mut data: Vec<u8> = body.bytes().filter(|b| !matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')).collect();
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

    #[test]
    fn classification() {
        let cases: [(&str, Result<&str, &str>); 14] = [
            ("http://x", Ok("url")),
            ("HTTPS:x", Ok("url")),
            ("httpx://a", Ok("url")),
            (" http://x", Err(UNSUPPORTED_FORMAT)),
            ("ftp://x", Err(UNSUPPORTED_FORMAT)),
            ("data:image/png;base64,AAAA", Ok("data")),
            (" DATA:Image/Jpeg;base64,AA", Ok("data")),
            ("data:image/png; base64,AA AA", Ok("data")),
            ("data:image/png;BASE64,AA", Err(UNSUPPORTED_FORMAT)),
            ("data:image/png,AA", Err(UNSUPPORTED_FORMAT)),
            ("data:text/plain;base64,!!!", Err(UNSUPPORTED_IMAGE)),
            ("data:;base64,AA", Err(UNSUPPORTED_IMAGE)),
            ("data:image/png;base64,AAAAA", Err(INVALID_BASE64)),
            ("data:image/png;base64,AA=", Err(INVALID_BASE64)),
        ];
        for (url, want) in cases {
            let got = image_source(url, ImageDetail::High, ".messages[0]");
            match (got, want) {
                (Ok(s), Ok(kind)) => assert_eq!(matches!(s.kind, ImageSourceKind::Url(_)), kind == "url", "{url}"),
                (Err(e), Err(msg)) => assert_eq!(e.message, format!(".messages[0]: {msg}"), "{url}"),
                (got, want) => panic!("{url}: got {got:?}, want {want:?}"),
            }
        }
    }
}
