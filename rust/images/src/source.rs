//! The bytes of a data-URL source, read by the same WHATWG processor conversion uses.

use crate::error::{ImageError, ImageErrorKind};

/// Subtypes a data URL may declare for an image (`image/<subtype>`).
const IMAGE_SUBTYPES: [&str; 5] = ["png", "jpeg", "jpg", "gif", "webp"];

/// Decode a data URL's body. A URL that is not a data URL, or whose body does not decode,
/// is `InvalidDataUrl`; one that declares no image type is `UnsupportedMediaType` (the bytes
/// still decide which image format it is: PNG bytes declared `image/jpeg` pass). The body may
/// be base64 or percent-encoded.
pub fn data_url_bytes(url: &str, location: &str) -> Result<Vec<u8>, ImageError> {
    let invalid = || ImageError::unsupported(ImageErrorKind::InvalidDataUrl, location);
    let parsed = data_url::DataUrl::process(url).map_err(|_| invalid())?;
    let mime = parsed.mime_type();
    let (body, _) = parsed.decode_to_vec().map_err(|_| invalid())?;
    let is_image = mime.type_ == "image" && IMAGE_SUBTYPES.contains(&mime.subtype.as_str());
    if !is_image {
        return Err(ImageError::unsupported(
            ImageErrorKind::UnsupportedMediaType,
            location,
        ));
    }
    Ok(body)
}
