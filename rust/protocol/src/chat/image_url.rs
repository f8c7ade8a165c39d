//! V4.1 image parts: which `image_url` URLs and `file_data` data URLs become image sources,
//! and the errors for the rest (conformance cases `cc-images-*`;
//! `tests/test_image_urls.py`). Chat reads URLs the WHATWG
//! way (the shared image rules); the `file_data` checks are its own.

use deepseek_model::{ConversionError, ImageDetail, ImageSource};

use crate::images::{classify_image_url, DataUrl};

const UNSUPPORTED_FILE: &str = "You have uploaded an unsupported file. Please make sure your file is valid and has one of the following formats: webp, png, jpeg, and gif.";
const INVALID_FILE_DATA: &str = "file_data is not a valid base64 data url";

/// An `image_url` part: anything starting with `http` (any case) is a URL source; otherwise
/// it must be a base64 data URL of a supported image type. `path` prefixes every error.
pub(crate) fn image_source(
    url: &str,
    detail: ImageDetail,
    path: &str,
) -> Result<ImageSource, ConversionError> {
    let kind =
        classify_image_url(url).map_err(|what| ConversionError::new(format!("{path}: {what}")))?;
    Ok(ImageSource {
        kind,
        detail,
        path: path.to_owned(),
    })
}

/// A `file` part's `file_data` must be a data URL of a supported image type whose body
/// decodes (no `base64` marker needed here); it is then treated as an `image_url` (whose
/// own rules still apply).
pub(crate) fn check_file_data(file_data: &str, path: &str) -> Result<(), ConversionError> {
    let fail = |what: &str| ConversionError::new(format!("{path}: {what}"));
    let data = DataUrl::parse(file_data).ok_or_else(|| fail(INVALID_FILE_DATA))?;
    if !data.has_image_mime() {
        return Err(fail(UNSUPPORTED_FILE));
    }
    if !data.body_decodes() {
        return Err(fail(INVALID_FILE_DATA));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use deepseek_model::ImageSourceKind;

    use crate::images::{INVALID_BASE64, UNSUPPORTED_FORMAT, UNSUPPORTED_IMAGE};

    fn classify(result: Result<ImageSource, ConversionError>) -> Result<&'static str, String> {
        result
            .map(|s| {
                if matches!(s.kind, ImageSourceKind::Url(_)) {
                    "url"
                } else {
                    "data"
                }
            })
            .map_err(|e| e.message)
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
            assert_eq!(
                classify(image_source(url, ImageDetail::High, ".messages[0]")),
                want,
                "{url}"
            );
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
