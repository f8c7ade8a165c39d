//! DeepSeek V4.1 images: everything between an image source and what the engine receives.
//!
//! This crate owns the image token count of a V4.1 image ([`geometry::fit`]: the fixed-point
//! fit onto the 42-pixel grid and its 1,024-token budget), the preprocessed geometry
//! ([`geometry::output_size`]: low-detail scaling, the dimension limit, the WebP side limit),
//! bounded decoding and preprocessing ([`preprocess`]: PNG, JPEG, WebP and the first GIF frame,
//! EXIF orientation, alpha over white, letterboxed resize, WebP out), the per-request quota
//! and the order in which a resolve call reports its first failure ([`resolve`]), the
//! process-wide memory budget of decoding ([`budget`]), and the rules that say which network
//! destinations a fetcher may connect to ([`address`]).
//!
//! It refuses to do network I/O: fetching is the caller's (the Python package pins a
//! connection to an address this crate accepted). Every rule here was recovered from the
//! published `deepseek-recipe` 0.2.0 wheel and is pinned by tables recorded from it
//! (`tests/reference_tables/image_geometry.json.gz`, read by `tests/geometry_sweep.rs`).

pub mod address;
pub mod budget;
pub mod error;
pub mod geometry;
pub mod preprocess;
pub mod resolve;
pub mod source;

pub use error::{ImageError, ImageErrorKind};
pub use geometry::{fit, image_tokens, Fit, NotConverged, PreprocessOptions};
pub use preprocess::{preprocess, PreprocessedImage};
