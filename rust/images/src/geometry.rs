//! How big a V4.1 image is, in tokens and in pixels.
//!
//! The vision tower cuts an image into 14-pixel patches and merges 3 × 3 patches into one
//! token, so the language model sees a grid of 42-pixel cells: `rows × (columns + 1) + 2`
//! tokens (a newline token ends each row; one token opens and one closes the image). An
//! image is fitted to that grid by a fixed-point iteration ([`fit`]):
//!
//! 1. if its area is below 544² pixels, scale it up to that area (each side truncated);
//! 2. round each side up to a multiple of 14;
//! 3. if the grid then needs more than 1,024 tokens, solve for the largest grid within the
//!    token budget that keeps the aspect ratio (one column or one row for extreme ratios)
//!    and scale to it, each side rounded down to a multiple of 14 (the budget drops by one
//!    token each time this step runs);
//! 4. repeat from 1 with the result until a pass changes nothing.
//!
//! Worked example, 1 × 41: step 1 gives 84 × 3483, step 2 84 × 3486 (292,824 px); the next
//! pass scales that up to 84 × 3504 and rounds to 84 × 3514; the next to 84 × 3518 → 84 ×
//! 3528 (296,352 px), which the last pass keeps: 84 rows of 2 columns, 254 tokens.
//!
//! The image token count is that of the preprocessed image, whose size [`output_size`] gives:
//! the source size (scaled down to the low-detail long side first, when asked), fitted,
//! with a side past WebP's 16,383-pixel limit cut to 16,380.
//!
//! Every constant and every rounding step here is the published 0.2.0 wheel's, recovered
//! by probing it and pinned by an exhaustive sweep (`tests/geometry_sweep.rs`).

use deepseek_model::ImageDetail;

use crate::error::{ImageError, ImageErrorKind};

/// Side of a vision patch, in pixels.
pub const PATCH: u64 = 14;
/// Patches merged into one token along each side.
pub const MERGE: u64 = 3;
/// Side of one grid cell (one token), in pixels.
pub const CELL: u64 = PATCH * MERGE;
/// Images smaller than this area are scaled up to it.
pub const MIN_PIXELS: u64 = 544 * 544;
/// The most tokens one image may take.
pub const MAX_TOKENS: u64 = 1024;
/// Passes of the fit before giving up (the wheel's inputs settle within 8).
pub const MAX_PASSES: u32 = 64;
/// WebP cannot store a side longer than this.
pub const WEBP_MAX_SIDE: u64 = 16383;

/// A size fitted to the token grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    pub width: u64,
    pub height: u64,
    pub columns: u64,
    pub rows: u64,
    pub tokens: u64,
}

/// The fit did not settle within [`MAX_PASSES`] passes; `last` is where it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotConverged {
    pub last: Fit,
    pub passes: u32,
}

impl std::fmt::Display for NotConverged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "image resize did not converge after {} iterations",
            self.passes
        )
    }
}

impl std::error::Error for NotConverged {}

fn round_up_to_patch(side: u64) -> u64 {
    side.div_ceil(PATCH).saturating_mul(PATCH)
}

fn grid(width: u64, height: u64) -> Fit {
    let columns = (width / PATCH).div_ceil(MERGE);
    let rows = (height / PATCH).div_ceil(MERGE);
    Fit {
        width,
        height,
        columns,
        rows,
        tokens: rows
            .saturating_mul(columns.saturating_add(1))
            .saturating_add(2),
    }
}

/// The largest grid within `budget` tokens for this aspect ratio, as a size in pixels.
fn solve(width: u64, height: u64, budget: u64) -> (u64, u64) {
    let ratio = height as f64 / width as f64;
    let spare = budget.saturating_sub(2);
    let columns = ((spare as f64 / ratio + 0.25).sqrt() - 0.5).max(0.0);
    let rows = columns * ratio;
    if columns < 1.0 {
        // Taller than the budget allows even one column: one column, every row it can pay.
        return (CELL, spare / 2 * CELL);
    }
    if rows < 1.0 {
        // Wider than one row allows: one row, every column it can pay.
        return (spare.saturating_sub(1) * CELL, CELL);
    }
    let (columns, rows) = (columns.floor() as u64, rows.floor() as u64);
    let beta = f64::min(
        (columns * CELL) as f64 / width as f64,
        (rows * CELL) as f64 / height as f64,
    );
    let side = |s: u64| (s as f64 * beta / PATCH as f64).floor() as u64 * PATCH;
    (side(width), side(height))
}

/// Fit a `width` × `height` image to the token grid (see the module docs).
pub fn fit(width: u32, height: u32) -> Result<Fit, NotConverged> {
    fit_within(width, height, MAX_PASSES)
}

pub(crate) fn fit_within(width: u32, height: u32, max_passes: u32) -> Result<Fit, NotConverged> {
    let (mut width, mut height) = (u64::from(width), u64::from(height));
    let mut budget = MAX_TOKENS;
    let mut last = grid(round_up_to_patch(width), round_up_to_patch(height));
    for _ in 0..max_passes {
        let before = (width, height);
        let area = width * height;
        if area > 0 && area < MIN_PIXELS {
            let scale = (MIN_PIXELS as f64 / area as f64).sqrt();
            width = (width as f64 * scale) as u64;
            height = (height as f64 * scale) as u64;
        }
        let mut fitted = grid(round_up_to_patch(width), round_up_to_patch(height));
        if fitted.tokens > MAX_TOKENS {
            let (w, h) = solve(width, height, budget);
            fitted = grid(w, h);
            budget = budget.saturating_sub(1);
        }
        last = fitted;
        if (fitted.width, fitted.height) == before {
            return Ok(fitted);
        }
        (width, height) = (fitted.width, fitted.height);
    }
    Err(NotConverged {
        last,
        passes: max_passes,
    })
}

/// The image token count of a `width` × `height` (preprocessed) image.
pub fn image_tokens(width: u32, height: u32) -> Result<u64, NotConverged> {
    fit(width, height).map(|f| f.tokens)
}

/// Options of one preprocessing operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreprocessOptions {
    pub detail: ImageDetail,
    /// The longest source side accepted, before any resizing.
    pub max_dimension_px: u32,
    /// At low detail, the source is first scaled so that its long side is at most this.
    pub low_detail_max_dimension_px: u32,
}

impl PreprocessOptions {
    /// What the resolver uses for a source of this detail.
    pub fn for_resolver(detail: ImageDetail) -> Self {
        Self {
            detail,
            max_dimension_px: 8192,
            low_detail_max_dimension_px: 512,
        }
    }

    /// Refuse a source whose width or height exceeds [`Self::max_dimension_px`].
    pub fn check_dimensions(
        &self,
        width: u32,
        height: u32,
        location: &str,
    ) -> Result<(), ImageError> {
        if width.max(height) > self.max_dimension_px {
            return Err(ImageError::unsupported(
                ImageErrorKind::ImageDimensionsTooLarge,
                location,
            ));
        }
        Ok(())
    }

    /// The size the fit starts from: the source size, scaled (sides rounded, at least 1) so
    /// that the long side is the low-detail limit when the detail is low and it is longer.
    pub fn effective_size(&self, width: u32, height: u32) -> (u32, u32) {
        let long = width.max(height);
        let limit = self.low_detail_max_dimension_px;
        if self.detail != ImageDetail::Low || long <= limit {
            return (width, height);
        }
        let scale = f64::from(limit) / f64::from(long);
        let side = |s: u32| ((f64::from(s) * scale).round() as u32).max(1);
        (side(width), side(height))
    }
}

/// The size of the preprocessed image for a `width` × `height` source (already oriented).
pub fn output_size(
    width: u32,
    height: u32,
    options: &PreprocessOptions,
    location: &str,
) -> Result<(u32, u32), ImageError> {
    options.check_dimensions(width, height, location)?;
    let (w, h) = options.effective_size(width, height);
    let fitted =
        fit(w, h).map_err(|_| ImageError::unsupported(ImageErrorKind::TokenBudget, location))?;
    let (mut w, mut h) = (fitted.width, fitted.height);
    let cut = WEBP_MAX_SIDE / PATCH * PATCH;
    if w > WEBP_MAX_SIDE {
        w = cut;
        while w * h < MIN_PIXELS {
            h += PATCH;
        }
    }
    if h > WEBP_MAX_SIDE {
        h = cut;
        while w * h < MIN_PIXELS {
            w += PATCH;
        }
    }
    // Both sides are now at most 16,380.
    Ok((w as u32, h as u32))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn token_table() {
        // Samples from the reference's own description, each with its reason.
        let cases = [
            ("tiny images are scaled up to 546 x 546", 1, 1, 184),
            ("a 546 square needs no scaling", 546, 546, 184),
            ("one pixel more adds a row and a column", 547, 547, 212),
            ("1000 square", 1000, 1000, 602),
            ("the preprocessed 1000 x 800", 1008, 812, 502),
            (
                "squares past 1261 are capped by the budget",
                2048,
                2048,
                994,
            ),
            ("the fixed point of 1 x 41", 1, 41, 254),
            ("one row for very wide images", 100_000, 1, 1024),
            ("one column for very tall images", 1, 100_000, 1024),
            ("an empty image is its two frame tokens", 0, 0, 2),
            ("no width: one column of nothing per row", 0, 43, 4),
            ("no height: no rows", 100_000, 0, 2),
            (
                "a tall image with no width takes one column",
                0,
                u32::MAX,
                1024,
            ),
            ("the largest square", u32::MAX, u32::MAX, 994),
        ];
        for (name, w, h, tokens) in cases {
            assert_eq!(image_tokens(w, h), Ok(tokens), "{name}");
        }
    }

    #[test]
    fn worked_example_of_the_module_docs() {
        let f = fit(1, 41).unwrap();
        assert_eq!(
            (f.width, f.height, f.columns, f.rows, f.tokens),
            (84, 3528, 2, 84, 254)
        );
    }

    #[test]
    fn a_fit_that_cannot_settle_reports_where_it_stopped() {
        // 1 x 41 needs four passes (see the module docs).
        let err = fit_within(1, 41, 3).unwrap_err();
        assert_eq!(err.passes, 3);
        assert_eq!((err.last.width, err.last.height), (84, 3528));
        assert_eq!(
            err.to_string(),
            "image resize did not converge after 3 iterations"
        );
        assert!(fit_within(1, 41, 4).is_ok());
    }

    #[test]
    fn output_size_table() {
        let high = PreprocessOptions {
            detail: ImageDetail::High,
            max_dimension_px: 2048,
            low_detail_max_dimension_px: 512,
        };
        let low = PreprocessOptions {
            detail: ImageDetail::Low,
            ..high
        };
        let cases = [
            ("small images grow", high, 50, 40, Ok((616, 490))),
            ("at high detail", high, 1000, 800, Ok((1008, 812))),
            ("at low detail", low, 1000, 800, Ok((616, 490))),
            (
                "a side past WebP's limit is cut",
                high,
                2048,
                1,
                Ok((16380, 28)),
            ),
            ("the other way round", high, 1, 2048, Ok((42, 16380))),
            ("at the limit", high, 2048, 2048, Ok((1302, 1302))),
        ];
        for (name, options, w, h, want) in cases {
            assert_eq!(
                output_size(w, h, &options, "image[0]").map_err(|e| e.kind),
                want,
                "{name}"
            );
        }
        let err = output_size(2049, 1, &high, "image[0]").unwrap_err();
        assert_eq!(err.kind, ImageErrorKind::ImageDimensionsTooLarge);
    }
}
