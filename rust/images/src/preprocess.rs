//! Encoded image bytes in, the engine's WebP out, in bounded memory.
//!
//! Steps: sniff the format from the bytes (PNG, JPEG, GIF, WebP; anything else is refused,
//! whatever a data URL or a server claimed), read the header (size and EXIF orientation)
//! without decoding pixels, refuse a source whose side exceeds the limit (a decompression
//! bomb is refused from its header), decode under an allocation limit derived from that
//! size (GIF and animated WebP: the first frame), apply the EXIF orientation, composite
//! transparency over white, resize into the fitted size keeping the aspect ratio (the rest
//! filled with mid-grey, as the reference's letterbox does), and encode lossless WebP.

use std::io::Cursor;

use image::codecs::webp::WebPEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits, Rgb, RgbImage};

use crate::error::{ImageError, ImageErrorKind};
use crate::geometry::{output_size, PreprocessOptions};

/// The grey that fills the box around a letterboxed image.
pub const FILL: u8 = 127;

/// A preprocessed image: WebP bytes and their size in pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreprocessedImage {
    pub data: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

/// The four formats the model accepts, recognised by their first bytes.
pub fn sniff(data: &[u8]) -> Option<ImageFormat> {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageFormat::Png)
    } else if data.starts_with(&[0xff, 0xd8, 0xff]) {
        Some(ImageFormat::Jpeg)
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        Some(ImageFormat::Gif)
    } else if data.len() >= 12 && data.starts_with(b"RIFF") && &data[8..12] == b"WEBP" {
        Some(ImageFormat::WebP)
    } else {
        None
    }
}

/// What the header says, read without decoding any pixel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub format: ImageFormat,
    /// The size as displayed (EXIF orientation applied).
    pub width: u32,
    pub height: u32,
}

/// Bytes a decoded image of this size may allocate: up to 8 bytes a pixel (16-bit RGBA)
/// plus 1 MiB of decoder state.
pub fn allocation_limit(width: u32, height: u32) -> u64 {
    u64::from(width) * u64::from(height) * 8 + (1 << 20)
}

fn reader(data: &[u8], format: ImageFormat, max_alloc: Option<u64>) -> ImageReader<Cursor<&[u8]>> {
    let mut limits = Limits::no_limits();
    limits.max_alloc = max_alloc;
    let mut reader = ImageReader::with_format(Cursor::new(data), format);
    reader.limits(limits);
    reader
}

/// Sniff and read the header (`location` names the image in errors).
pub fn read_header(data: &[u8], location: &str) -> Result<Header, ImageError> {
    let format = sniff(data)
        .ok_or_else(|| ImageError::unsupported(ImageErrorKind::UnsupportedMediaType, location))?;
    // Reading a header allocates nothing in proportion to the image.
    let mut decoder = reader(data, format, None)
        .into_decoder()
        .map_err(|_| ImageError::unsupported(ImageErrorKind::Decode, location))?;
    let (width, height) = decoder.dimensions();
    if width == 0 || height == 0 {
        return Err(ImageError::unsupported(ImageErrorKind::Decode, location));
    }
    let swapped = matches!(
        decoder.orientation(),
        Ok(image::metadata::Orientation::Rotate90
            | image::metadata::Orientation::Rotate270
            | image::metadata::Orientation::Rotate90FlipH
            | image::metadata::Orientation::Rotate270FlipH)
    );
    let (width, height) = if swapped {
        (height, width)
    } else {
        (width, height)
    };
    Ok(Header {
        format,
        width,
        height,
    })
}

/// Decode (first frame), orient, and flatten onto white as 8-bit RGB.
fn decode(data: &[u8], header: &Header, location: &str) -> Result<RgbImage, ImageError> {
    let failed = || ImageError::unsupported(ImageErrorKind::EmptyImage, location);
    let mut decoder = reader(
        data,
        header.format,
        Some(allocation_limit(header.width, header.height)),
    )
    .into_decoder()
    .map_err(|_| failed())?;
    let orientation = decoder
        .orientation()
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let mut image = DynamicImage::from_decoder(decoder).map_err(|_| failed())?;
    image.apply_orientation(orientation);
    Ok(flatten(image))
}

/// 8-bit RGB, transparency composited over white.
fn flatten(image: DynamicImage) -> RgbImage {
    if !image.color().has_alpha() {
        return image.into_rgb8();
    }
    let rgba = image.into_rgba8();
    let (width, height) = rgba.dimensions();
    let mut out = RgbImage::new(width, height);
    for (dst, src) in out.pixels_mut().zip(rgba.pixels()) {
        let alpha = u32::from(src[3]);
        let over = |c: u8| ((u32::from(c) * alpha + 255 * (255 - alpha) + 127) / 255) as u8;
        *dst = Rgb([over(src[0]), over(src[1]), over(src[2])]);
    }
    out
}

/// Where the image goes inside a `box_w` × `box_h` box: its size keeping the aspect ratio
/// (at least one pixel each way) and its top-left corner, centred.
pub fn letterbox(width: u32, height: u32, box_w: u32, box_h: u32) -> (u32, u32, u32, u32) {
    let scale = f64::min(
        f64::from(box_w) / f64::from(width),
        f64::from(box_h) / f64::from(height),
    );
    let w = ((f64::from(width) * scale).round() as u32).clamp(1, box_w);
    let h = ((f64::from(height) * scale).round() as u32).clamp(1, box_h);
    (w, h, (box_w - w) / 2, (box_h - h) / 2)
}

/// Catmull-Rom (bicubic) resampling with fast_image_resize's SIMD convolution; the `image`
/// crate's scalar resize should it refuse (it never has for 8-bit RGB).
fn resize(image: &RgbImage, w: u32, h: u32) -> RgbImage {
    use fast_image_resize::{
        images::Image, FilterType as Fir, PixelType, ResizeAlg, ResizeOptions, Resizer,
    };
    let fast = || -> Option<RgbImage> {
        let src = fast_image_resize::images::ImageRef::new(
            image.width(),
            image.height(),
            image.as_raw(),
            PixelType::U8x3,
        )
        .ok()?;
        let mut dst = Image::new(w, h, PixelType::U8x3);
        let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(Fir::CatmullRom));
        Resizer::new().resize(&src, &mut dst, &options).ok()?;
        RgbImage::from_raw(w, h, dst.into_vec())
    };
    fast().unwrap_or_else(|| image::imageops::resize(image, w, h, FilterType::CatmullRom))
}

fn resize_into_box(image: &RgbImage, box_w: u32, box_h: u32) -> RgbImage {
    let (w, h, x, y) = letterbox(image.width(), image.height(), box_w, box_h);
    let scaled = if (w, h) == image.dimensions() {
        image.clone()
    } else {
        resize(image, w, h)
    };
    if (w, h) == (box_w, box_h) {
        return scaled;
    }
    let mut canvas = RgbImage::from_pixel(box_w, box_h, Rgb([FILL; 3]));
    image::imageops::replace(&mut canvas, &scaled, i64::from(x), i64::from(y));
    canvas
}

fn encode_webp(image: &RgbImage, location: &str) -> Result<Vec<u8>, ImageError> {
    let mut out = Vec::new();
    WebPEncoder::new_lossless(&mut out)
        .encode(
            image.as_raw(),
            image.width(),
            image.height(),
            image::ExtendedColorType::Rgb8,
        )
        .map_err(|_| ImageError::unsupported(ImageErrorKind::Encode, location))?;
    Ok(out)
}

/// Preprocess encoded image bytes (`location` names the image in errors, as
/// `messages[0].image[1]`).
pub fn preprocess_at(
    data: &[u8],
    options: &PreprocessOptions,
    location: &str,
) -> Result<PreprocessedImage, ImageError> {
    if data.is_empty() {
        return Err(ImageError::unsupported(
            ImageErrorKind::EmptyImage,
            location,
        ));
    }
    let header = read_header(data, location)?;
    let (width, height) = output_size(header.width, header.height, options, location)?;
    let image = decode(data, &header, location)?;
    let boxed = resize_into_box(&image, width, height);
    drop(image);
    Ok(PreprocessedImage {
        data: encode_webp(&boxed, location)?,
        width,
        height,
    })
}

/// Preprocess one image on its own (errors name it `image[0]`, as the reference's do),
/// within the process's decoding budget ([`crate::budget`]).
pub fn preprocess(
    data: &[u8],
    options: &PreprocessOptions,
) -> Result<PreprocessedImage, ImageError> {
    let need = read_header(data, "image[0]")
        .map_or(0, |header| allocation_limit(header.width, header.height));
    let _taken = crate::budget::DECODING.take(need);
    preprocess_at(data, options, "image[0]")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn letterbox_table() {
        for (name, src, boxed, want) in [
            (
                "same aspect fills the box",
                (900, 100),
                (1638, 182),
                (1638, 182, 0, 0),
            ),
            (
                "wide image, bars above and below",
                (600, 300),
                (770, 392),
                (770, 385, 0, 3),
            ),
            (
                "tall image, bars left and right",
                (300, 600),
                (392, 770),
                (385, 770, 3, 0),
            ),
            (
                "a sliver keeps one pixel",
                (2048, 1),
                (16380, 28),
                (16380, 8, 0, 10),
            ),
        ] {
            assert_eq!(letterbox(src.0, src.1, boxed.0, boxed.1), want, "{name}");
        }
    }

    #[test]
    fn sniff_table() {
        for (bytes, want) in [
            (&b"\x89PNG\r\n\x1a\nxxxx"[..], Some(ImageFormat::Png)),
            (&b"\xff\xd8\xff\xe0"[..], Some(ImageFormat::Jpeg)),
            (&b"GIF89a"[..], Some(ImageFormat::Gif)),
            (&b"GIF87a"[..], Some(ImageFormat::Gif)),
            (&b"RIFF\0\0\0\0WEBP"[..], Some(ImageFormat::WebP)),
            (&b"RIFF\0\0\0\0WEBX"[..], None),
            (&b"BM\0\0"[..], None),
            (&b"II*\0"[..], None),
            (&b""[..], None),
        ] {
            assert_eq!(sniff(bytes), want, "{bytes:?}");
        }
    }
}
