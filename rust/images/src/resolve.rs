//! One resolve call: the per-request limits and the order in which failures are reported.
//!
//! The reference reports the first failure of these passes, in this order:
//! 1. the image count of the request (this call's sources plus the quota's) above 600;
//! 2. per source, in order: an external URL that does not start with `http` (any case) or
//!    is longer than 8,192 bytes (no location prefix), the download or the data URL, a body
//!    above 32 MiB, an empty body, then the request's bytes so far above 64 MiB;
//! 3. per source, in order: the preprocessing ([`crate::preprocess`]).
//!
//! Ours, before step 3 when the caller sets a pixel budget: the pixels of the request's
//! images (read from their headers; an image too large a side or unreadable is left to
//! step 3) above the budget. Preprocessing then takes what its decoders may allocate out of
//! the process's decoding budget ([`crate::budget`]).
//!
//! Only a call that succeeds adds its images and source bytes to the quota. The caller
//! downloads the URLs (this crate does no I/O): [`urls_to_fetch`] says which, [`resolve`]
//! takes the results.

use deepseek_model::{ImageSource, ImageSourceKind};
use rayon::prelude::*;

use crate::error::{location, ImageError, ImageErrorKind};
use crate::geometry::PreprocessOptions;
use crate::preprocess::{allocation_limit, preprocess_at, read_header, PreprocessedImage};
use crate::source::data_url_bytes;

pub const MAX_IMAGES: u64 = 600;
pub const MAX_IMAGE_BYTES: u64 = 32 << 20;
pub const MAX_TOTAL_BYTES: u64 = 64 << 20;
pub const MAX_LINK_LENGTH: usize = 8192;
const MIB: u64 = 1 << 20;

/// The images and source bytes recorded by the completed resolve calls of one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quota {
    pub images: u64,
    pub bytes: u64,
}

/// What the caller's download of one URL gave.
pub type Download = Result<Vec<u8>, ImageError>;

/// Each source's location as errors name it: `path.image[k]`, `k` counting that path's
/// images.
pub fn locations(sources: &[ImageSource]) -> Vec<String> {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    sources
        .iter()
        .map(|s| {
            let k = match seen.iter_mut().find(|(p, _)| *p == s.path) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    seen.push((&s.path, 0));
                    0
                }
            };
            location(&s.path, k)
        })
        .collect()
}

fn check_count(sources: usize, quota: &Quota) -> Result<(), ImageError> {
    let total = quota.images + sources as u64;
    if total > MAX_IMAGES {
        return Err(ImageError::new(
            ImageErrorKind::TooManyImages,
            format!("Too many images: max {MAX_IMAGES} images per request, got {total}"),
        ));
    }
    Ok(())
}

/// Refuse an external URL before any download: not `http…`, or too long.
pub fn check_url(url: &str) -> Result<(), ImageError> {
    let http = url
        .as_bytes()
        .get(..4)
        .is_some_and(|head| head.eq_ignore_ascii_case(b"http"));
    if !http {
        return Err(ImageError::new(
            ImageErrorKind::InvalidUrl,
            format!("invalid url: {url:?}"),
        ));
    }
    if url.len() > MAX_LINK_LENGTH {
        return Err(ImageError::new(
            ImageErrorKind::UrlTooLong,
            format!(
                "external link length {} too long, max link length {MAX_LINK_LENGTH}",
                url.len()
            ),
        ));
    }
    Ok(())
}

/// The refusal of a body above the per-image limit `max_bytes`.
pub fn too_large(location: &str, max_bytes: u64) -> ImageError {
    ImageError::new(
        ImageErrorKind::ImageTooLarge,
        format!(
            "{location}: image file size exceeds limit {} MB",
            max_bytes / MIB
        ),
    )
}

/// The bytes of a local (non-URL) source, or why they are refused.
fn local_bytes(source: &ImageSource, location: &str) -> Option<Result<Vec<u8>, ImageError>> {
    match &source.kind {
        ImageSourceKind::Url(_) => None,
        ImageSourceKind::DataUrl(url) => Some(data_url_bytes(url, location)),
        ImageSourceKind::Bytes(bytes) => Some(Ok(bytes.clone())),
    }
}

/// Which sources the caller must download: the URL sources that come before the first
/// failure this crate can see without the network (so nothing is downloaded for a request
/// that fails anyway). Fails when the count is over the limit.
pub fn urls_to_fetch(sources: &[ImageSource], quota: &Quota) -> Result<Vec<usize>, ImageError> {
    check_count(sources.len(), quota)?;
    let mut wanted = Vec::new();
    for (i, (source, at)) in sources.iter().zip(locations(sources)).enumerate() {
        match &source.kind {
            ImageSourceKind::Url(url) => {
                if check_url(url).is_err() {
                    break;
                }
                wanted.push(i);
            }
            _ => match local_bytes(source, &at) {
                Some(Ok(bytes)) if !bytes.is_empty() && bytes.len() as u64 <= MAX_IMAGE_BYTES => {}
                _ => break,
            },
        }
    }
    Ok(wanted)
}

/// Resolve `sources`: `downloads[i]` is the download of source `i` when it is a URL the
/// caller fetched (`None` otherwise). Preprocesses in parallel; updates `quota` only on
/// success. `max_pixels`: the call's pixel budget (`None`: none, as the reference).
pub fn resolve(
    sources: &[ImageSource],
    mut downloads: Vec<Option<Download>>,
    quota: &mut Quota,
    max_pixels: Option<u64>,
) -> Result<Vec<PreprocessedImage>, ImageError> {
    check_count(sources.len(), quota)?;
    let at = locations(sources);
    let mut bodies = Vec::with_capacity(sources.len());
    let mut total = quota.bytes;
    for (i, source) in sources.iter().enumerate() {
        let loaded = match &source.kind {
            ImageSourceKind::Url(url) => {
                check_url(url)?;
                downloads
                    .get_mut(i)
                    .and_then(Option::take)
                    .unwrap_or_else(|| {
                        Err(ImageError::download(ImageErrorKind::Fetch, &at[i], url))
                    })
            }
            _ => local_bytes(source, &at[i]).unwrap_or_else(|| Ok(Vec::new())),
        };
        let bytes = loaded?;
        if bytes.len() as u64 > MAX_IMAGE_BYTES {
            return Err(too_large(&at[i], MAX_IMAGE_BYTES));
        }
        if bytes.is_empty() {
            return Err(ImageError::unsupported(ImageErrorKind::EmptyImage, &at[i]));
        }
        total += bytes.len() as u64;
        if total > MAX_TOTAL_BYTES {
            return Err(ImageError::new(
                ImageErrorKind::TotalSizeTooLarge,
                format!(
                    "Total image size exceeds the limit: max {} MB per request, got {} MB",
                    MAX_TOTAL_BYTES / MIB,
                    total / MIB
                ),
            ));
        }
        bodies.push(bytes);
    }
    // What decoding will cost, from the headers, of the images preprocessing will decode.
    let sizes: Vec<(u64, u64)> = bodies
        .iter()
        .zip(sources)
        .zip(&at)
        .filter_map(|((bytes, source), at)| {
            let header = read_header(bytes, at).ok()?;
            let limit = PreprocessOptions::for_resolver(source.detail).max_dimension_px;
            (header.width.max(header.height) <= limit).then(|| {
                (
                    u64::from(header.width) * u64::from(header.height),
                    allocation_limit(header.width, header.height),
                )
            })
        })
        .collect();
    let pixels: u64 = sizes.iter().map(|(pixels, _)| pixels).sum();
    if let Some(max) = max_pixels.filter(|&max| pixels > max) {
        return Err(ImageError::new(
            ImageErrorKind::TooManyPixels,
            format!(
                "Total image pixels exceed the limit: max {max} pixels per request, got {pixels}"
            ),
        ));
    }
    let _decoding = crate::budget::DECODING.take(sizes.iter().map(|(_, bytes)| bytes).sum());
    let results: Vec<Result<PreprocessedImage, ImageError>> = bodies
        .par_iter()
        .zip(sources.par_iter())
        .zip(at.par_iter())
        .map(|((bytes, source), at)| {
            preprocess_at(bytes, &PreprocessOptions::for_resolver(source.detail), at)
        })
        .collect();
    let images = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    quota.images += sources.len() as u64;
    quota.bytes = total;
    Ok(images)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use deepseek_model::ImageDetail;

    fn png(width: u32, height: u32) -> ImageSource {
        let mut data = Vec::new();
        image::RgbImage::new(width, height)
            .write_to(
                &mut std::io::Cursor::new(&mut data),
                image::ImageFormat::Png,
            )
            .unwrap();
        ImageSource {
            kind: ImageSourceKind::Bytes(data),
            detail: ImageDetail::High,
            path: "m".to_owned(),
        }
    }

    fn run(sources: &[ImageSource], max_pixels: Option<u64>) -> Result<usize, ImageError> {
        let downloads = sources.iter().map(|_| None).collect();
        resolve(sources, downloads, &mut Quota::default(), max_pixels).map(|images| images.len())
    }

    #[test]
    fn the_pixel_budget_counts_the_request_before_decoding() {
        let sources = [png(100, 100), png(200, 50), png(50, 50)];
        assert_eq!(run(&sources, None).unwrap(), 3);
        assert_eq!(run(&sources, Some(22_500)).unwrap(), 3);
        let error = run(&sources, Some(22_499)).unwrap_err();
        assert_eq!(error.kind, ImageErrorKind::TooManyPixels);
        assert_eq!(
            error.message,
            "Total image pixels exceed the limit: max 22499 pixels per request, got 22500"
        );
        // An image too large a side is refused as the reference refuses it, budget or not.
        let huge = [png(100, 100), png(8193, 1)];
        for budget in [None, Some(10)] {
            assert_eq!(
                run(&huge, budget).unwrap_err().kind,
                if budget.is_some() {
                    ImageErrorKind::TooManyPixels
                } else {
                    ImageErrorKind::ImageDimensionsTooLarge
                }
            );
        }
        assert_eq!(
            run(&huge, Some(10_000)).unwrap_err().kind,
            ImageErrorKind::ImageDimensionsTooLarge
        );
        assert_eq!(crate::budget::DECODING.free(), crate::budget::DECODE_MEMORY);
    }
}
