//! Messages image blocks to image sources (conformance cases `msg-images-*`;
//! `tests/test_image_urls.py`): base64 data is checked
//! as strict standard base64 and kept as a data URL; `url` sources must start with `http`;
//! `file` sources are refused. Image bytes are never fetched or decoded beyond that check.

use deepseek_model::{ConversionError, ImageDetail, ImageSource, ImageSourceKind};

use super::wire::MessagesImageSource;
use crate::images::{link_too_long, starts_with_http, FILE_ID_UNSUPPORTED};

/// The image source for `source`; `error_path` prefixes errors, `path` is recorded.
pub(crate) fn image_source(
    source: &MessagesImageSource,
    error_path: &str,
    path: String,
) -> Result<ImageSource, ConversionError> {
    let kind = match source {
        MessagesImageSource::Base64 { media_type, data } => {
            let Some(data) = messages_base64(data) else {
                return Err(ConversionError::new(format!(
                    "{error_path}: base64 decode error"
                )));
            };
            ImageSourceKind::DataUrl(format!("data:{};base64,{data}", media_type.as_str()))
        }
        MessagesImageSource::Url { url } => {
            if !starts_with_http(url) {
                // Quoted the way Rust's `Debug` quotes a string, as in the reference.
                return Err(ConversionError::new(format!(
                    "{error_path}: invalid url: {url:?}"
                )));
            }
            if let Some(what) = link_too_long(url, "") {
                return Err(ConversionError::new(format!("{error_path}: {what}")));
            }
            ImageSourceKind::Url(url.clone())
        }
        MessagesImageSource::File { .. } => {
            return Err(ConversionError::new(format!(
                "{error_path}: {FILE_ID_UNSUPPORTED}"
            )))
        }
    };
    Ok(ImageSource {
        kind,
        detail: ImageDetail::High,
        path,
    })
}

fn sextet(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// The reference's Messages base64 check, and the data it keeps: without trailing `=`,
/// strict standard base64 (padded to a multiple of four), kept as given; with any number of
/// trailing `=`, those are dropped, the rest must be unpadded standard base64, and it is
/// kept padded anew (`AA=` and `H/g7BA=` pass as `AA==` and `H/g7BA==`, `AAAA====` as
/// `AAAA`, `=` as ``; `AA` and `AB=` do not pass). Never whitespace, and never stray bits
/// in the last character.
fn messages_base64(data: &str) -> Option<String> {
    let bytes = data.as_bytes();
    let body = data.trim_end_matches('=');
    if body.len() == data.len() {
        return is_strict_base64(bytes).then(|| data.to_owned());
    }
    let full = body.len() / 4 * 4;
    let tail = body.get(full..)?;
    if tail.len() == 1 || body.contains('=') {
        return None;
    }
    let mut padded = body.to_owned();
    if !tail.is_empty() {
        padded.extend(std::iter::repeat_n('=', 4 - tail.len()));
    }
    is_strict_base64(padded.as_bytes()).then_some(padded)
}

/// Standard alphabet, padding required, no whitespace, and no stray bits in the last group.
fn is_strict_base64(data: &[u8]) -> bool {
    let chunks = data.chunks_exact(4);
    if !chunks.remainder().is_empty() {
        return false;
    }
    let groups = chunks.len();
    for (g, group) in chunks.enumerate() {
        let last = g + 1 == groups;
        let pad = group.iter().rev().take_while(|b| **b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return false;
        }
        let mut values = [0u8; 4];
        for (k, byte) in group.iter().take(4 - pad).enumerate() {
            match sextet(*byte) {
                Some(v) => values[k] = v,
                None => return false,
            }
        }
        // The unused low bits of the last significant character must be zero.
        if pad == 1 && values[2] & 0b11 != 0 {
            return false;
        }
        if pad == 2 && values[1] & 0b1111 != 0 {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_base64_table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("", Some("")),
            ("AAAA", Some("AAAA")),
            ("AAA", None),
            ("AA", None),
            ("AA=", Some("AA==")),
            ("AAA=", Some("AAA=")),
            ("AA==", Some("AA==")),
            ("A=", None),
            ("A==", None),
            ("AB=", None),
            ("AAB=", None),
            ("AAAA=", Some("AAAA")),
            ("AAAA====", Some("AAAA")),
            ("=", Some("")),
            ("=====", Some("")),
            ("H/g7BA=", Some("H/g7BA==")),
            ("RoU==", Some("RoU=")),
            ("AAAAA=", None),
            ("A=A", None),
            ("AA=A", None),
            ("AA==AA==", None),
            (" AAAA", None),
            ("AA-_", None),
        ];
        for (input, want) in cases {
            assert_eq!(messages_base64(input).as_deref(), *want, "{input:?}");
        }
    }

    #[test]
    fn strict_base64_table() {
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("AAAA", true),
            ("AA==", true),
            ("AAA=", true),
            ("AAA", false),
            ("AB==", false),
            ("AAB=", false),
            ("A===", false),
            ("AA AA", false),
            ("A-_A", false),
            ("AA==AAAA", false),
            ("iVBORw0KGgo=", true),
        ];
        for (input, ok) in cases {
            assert_eq!(is_strict_base64(input.as_bytes()), *ok, "{input:?}");
        }
    }
}
