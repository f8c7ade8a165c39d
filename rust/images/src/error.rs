//! The image error: a kind (the reference's variant names, which the Python `ImageError.kind`
//! exposes), whether retrying may help, and the message a 400 response carries.

use std::fmt;

/// Image failures, named as the reference names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageErrorKind {
    UrlTooLong,
    InvalidUrl,
    TooManyImages,
    ImageTooLarge,
    TotalSizeTooLarge,
    /// Ours: the images of a request hold more pixels than the caller's budget.
    TooManyPixels,
    InvalidDataUrl,
    EmptyImage,
    UnsupportedMediaType,
    ImageDimensionsTooLarge,
    Decode,
    Resize,
    Encode,
    TokenBudget,
    /// A connection or transfer failure (retryable).
    Fetch,
    /// The destination rule refused every address of a host (the default rule or the
    /// caller's filter).
    DestinationRejected,
    /// The server answered with a status other than 2xx; retryable for 5xx.
    FetchStatus(u16),
    /// The HTTP client could not be built.
    Client,
}

impl ImageErrorKind {
    /// The kind's name as Python sees it (`ImageError.kind`).
    pub fn name(self) -> &'static str {
        match self {
            Self::UrlTooLong => "UrlTooLong",
            Self::InvalidUrl => "InvalidUrl",
            Self::TooManyImages => "TooManyImages",
            Self::ImageTooLarge => "ImageTooLarge",
            Self::TotalSizeTooLarge => "TotalSizeTooLarge",
            Self::TooManyPixels => "TooManyPixels",
            Self::InvalidDataUrl => "InvalidDataUrl",
            Self::EmptyImage => "EmptyImage",
            Self::UnsupportedMediaType => "UnsupportedMediaType",
            Self::ImageDimensionsTooLarge => "ImageDimensionsTooLarge",
            Self::Decode => "Decode",
            Self::Resize => "Resize",
            Self::Encode => "Encode",
            Self::TokenBudget => "TokenBudget",
            Self::Fetch => "Fetch",
            Self::DestinationRejected => "DestinationRejected",
            Self::FetchStatus(_) => "FetchStatus",
            Self::Client => "Client",
        }
    }

    /// Whether another attempt may succeed: connection failures and 5xx answers.
    pub fn is_retryable(self) -> bool {
        match self {
            Self::Fetch => true,
            Self::FetchStatus(status) => status >= 500,
            _ => false,
        }
    }

    /// The HTTP status a gateway answers with: 400 for everything about the images a
    /// request names (an image host that fails is the request's too, as with the hosted
    /// APIs), 500 for failures of our own.
    pub fn http_status(self) -> u16 {
        match self {
            Self::Resize | Self::Encode | Self::Client => 500,
            _ => 400,
        }
    }
}

/// The text of every refusal of the image itself (as the reference words it).
pub const UNSUPPORTED_IMAGE: &str = "You have uploaded an unsupported image. Please make sure your image is valid and has one of the following formats: webp, png, jpeg, and gif.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageError {
    pub kind: ImageErrorKind,
    pub message: String,
}

impl ImageError {
    pub fn new(kind: ImageErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// An error about the image at `location` (`messages[0].image[1]`), with the generic
    /// unsupported-image text.
    pub fn unsupported(kind: ImageErrorKind, location: &str) -> Self {
        Self::new(kind, format!("{location}: {UNSUPPORTED_IMAGE}"))
    }

    /// A download failure of `url` for the image at `location`.
    pub fn download(kind: ImageErrorKind, location: &str, url: &str) -> Self {
        Self::new(
            kind,
            format!("{location}: Failed to download image from {url}"),
        )
    }

    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ImageError {}

/// How errors name an image: `path.image[k]`, or `image[k]` when the path is empty, where `k`
/// counts the images of that path.
pub fn location(path: &str, index: usize) -> String {
    if path.is_empty() {
        format!("image[{index}]")
    } else {
        format!("{path}.image[{index}]")
    }
}
