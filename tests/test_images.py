"""V4.1 images through the public API: token counts and geometry against the table recorded
from the wheel (``scripts/record/image_geometry.py``; the full sweep, 35 million sizes, runs in
``rust/images/tests/geometry_sweep.rs``), preprocessing of real files, and the resolver's
quota and error order (expected values observed on the wheel)."""

from __future__ import annotations

import base64
import functools
import io
import struct
import zlib
from typing import Any

import pytest
from PIL import Image

import deepseek_recipe as dr
from tests.reference import load_table


@functools.cache
def table() -> dict[str, Any]:
    loaded: dict[str, Any] = load_table("image_geometry")
    return loaded


UNSUPPORTED = (
    "You have uploaded an unsupported image. Please make sure your image is valid and has one of the "
    "following formats: webp, png, jpeg, and gif."
)


def tokens(width: int, height: int) -> int:
    return dr.MultiModalData([dr.ImageInfo(b"", width, height)]).image_token_adjustment() + 1


def encode(image: Image.Image, fmt: str, **options: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def decoded(info: dr.ImageInfo) -> Image.Image:
    image = Image.open(io.BytesIO(info.data))
    assert image.format == "WEBP"
    image.load()
    assert image.size == (info.width, info.height)
    return image.convert("RGB")


HIGH = dr.PreprocessOptions("high", 8192, 512)


def preprocess(data: bytes, options: dr.PreprocessOptions = HIGH) -> dr.ImageInfo:
    return dr.OpenCvImagePreprocessor().preprocess(data, options)


def failure(call: Any) -> dr.ImageError:
    with pytest.raises(dr.ImageError) as info:
        call()
    return info.value


# -- the recorded table through the public API ----------------------------------------------


def test_written_out_token_counts_match_the_wheel() -> None:
    rows = table()["tokens"]["explicit"]
    assert len(rows) > 100_000
    bad = [(w, h, want, tokens(w, h)) for w, h, want in rows if tokens(w, h) != want]
    assert bad == []


def test_token_adjustment_sums_over_images() -> None:
    infos = [dr.ImageInfo(b"", 1, 1), dr.ImageInfo(b"", 1000, 1000), dr.ImageInfo(b"", 1, 41)]
    assert dr.MultiModalData(infos).image_token_adjustment() == (184 - 1) + (602 - 1) + (254 - 1)
    assert dr.MultiModalData().image_token_adjustment() == 0
    assert dr.MultiModalData().is_empty() and not dr.MultiModalData(infos).is_empty()


def solid_png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = (b"\x00" + b"\xc8\x1e\x1e" * width) * height
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def test_recorded_geometry_through_the_preprocessor() -> None:
    """Every refusal in the table, and a spread of sizes (the Rust sweep checks every row)."""
    rows = table()["geometry"]
    sized = [r for r in rows if not isinstance(r[5], str) and max(r[0], r[1]) <= 600]
    refused = [r for r in rows if isinstance(r[5], str)]
    assert len(refused) > 1000
    for w, h, detail, maximum, low, *want in refused[::7] + sized[:: max(1, len(sized) // 150)]:
        options = dr.PreprocessOptions(detail, maximum, low)
        try:
            info = preprocess(solid_png(w, h), options)
            got: list[Any] = [info.width, info.height]
        except dr.ImageError as error:
            got = [error.kind]
        assert got == want, (w, h, detail, maximum, low)


# -- preprocessing real files -------------------------------------------------------------


def halves(width: int, height: int, mode: str = "RGB") -> Image.Image:
    """Left half red, right half blue."""
    image = Image.new(mode, (width, height), (255, 0, 0, 255)[: len(mode)])
    image.paste((0, 0, 255, 255)[: len(mode)], (width // 2, 0, width, height))
    return image


@pytest.mark.parametrize(
    "fmt, options",
    [("PNG", {}), ("JPEG", {"quality": 95}), ("WEBP", {"lossless": True}), ("WEBP", {"quality": 90}), ("GIF", {})],
    ids=["png", "jpeg", "webp-lossless", "webp-lossy", "gif"],
)
def test_each_format_preprocesses_to_webp_of_the_fitted_size(fmt: str, options: dict[str, Any]) -> None:
    info = preprocess(encode(halves(600, 300), fmt, **options))
    assert (info.width, info.height) == (770, 392)
    image = decoded(info)
    # Letterboxed: mid-grey bars above and below, the picture in the middle, colours kept.
    assert image.getpixel((385, 0)) == (127, 127, 127)
    left, right = image.getpixel((100, 196)), image.getpixel((670, 196))
    assert isinstance(left, tuple) and isinstance(right, tuple)
    assert left[0] > 200 and left[2] < 60 and right[2] > 200 and right[0] < 60


def test_gif_and_animated_webp_give_their_first_frame() -> None:
    frames = [Image.new("RGB", (100, 100), c) for c in [(0, 200, 0), (200, 0, 0)]]
    for fmt, extra in [("GIF", {}), ("WEBP", {"lossless": True})]:
        data = encode(frames[0], fmt, save_all=True, append_images=frames[1:], duration=100, **extra)
        pixel = decoded(preprocess(data)).getpixel((273, 273))
        assert isinstance(pixel, tuple) and pixel[1] > 150 and pixel[0] < 60, fmt


@pytest.mark.parametrize("orientation, size", [(1, (770, 392)), (3, (770, 392)), (6, (392, 770)), (8, (392, 770))])
def test_exif_orientation_is_applied(orientation: int, size: tuple[int, int]) -> None:
    exif = Image.Exif()
    exif[0x0112] = orientation
    info = preprocess(encode(halves(600, 300), "JPEG", exif=exif.tobytes(), quality=95))
    assert (info.width, info.height) == size
    image = decoded(info)
    # Where the red half ends up tells the rotation: 6 turns it to the top, 8 to the bottom.
    probe = {1: (100, 196), 3: (670, 196), 6: (196, 100), 8: (196, 670)}[orientation]
    pixel = image.getpixel(probe)
    assert isinstance(pixel, tuple) and pixel[0] > 200 and pixel[2] < 60


def test_transparency_is_composited_over_white() -> None:
    for mode in ["RGBA", "LA"]:
        image = Image.new(mode, (300, 300), (10, 20, 30, 0)[: len(mode) - 1] + (0,))
        center = decoded(preprocess(encode(image, "PNG"))).getpixel((273, 273))
        assert center == (255, 255, 255), mode
    half = Image.new("RGBA", (300, 300), (0, 0, 0, 128))
    pixel = decoded(preprocess(encode(half, "PNG"))).getpixel((273, 273))
    assert isinstance(pixel, tuple) and 120 <= pixel[0] <= 135


def test_one_pixel_grows_to_the_smallest_grid() -> None:
    info = preprocess(encode(Image.new("RGB", (1, 1), (0, 128, 255)), "PNG"))
    assert (info.width, info.height) == (546, 546)
    assert decoded(info).getpixel((273, 273)) == (0, 128, 255)
    assert tokens(info.width, info.height) == 184


def bomb_png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


def test_decompression_bombs_are_refused_from_the_header() -> None:
    jpeg = bytearray(encode(Image.new("RGB", (8, 8)), "JPEG"))
    sof = jpeg.index(b"\xff\xc0")
    jpeg[sof + 5 : sof + 9] = struct.pack(">HH", 60000, 60000)
    gif = bytearray(encode(Image.new("P", (8, 8)), "GIF"))
    gif[6:10] = struct.pack("<HH", 60000, 60000)
    for name, data in [
        ("png", bomb_png(100_000, 100_000)),
        ("png wide", bomb_png(2**31 - 1, 1)),
        ("jpeg", bytes(jpeg)),
        ("gif", bytes(gif)),
    ]:
        error = failure(lambda: preprocess(data))
        assert (error.kind, str(error)) == ("ImageDimensionsTooLarge", f"image[0]: {UNSUPPORTED}"), name
    # Within the limit but with no pixel data: the decode fails, nothing is allocated for it.
    assert failure(lambda: preprocess(bomb_png(8000, 8000))).kind == "EmptyImage"


def test_refusals_of_the_bytes() -> None:
    png = encode(Image.new("RGB", (4, 4)), "PNG")
    cases = [
        (b"", "EmptyImage"),
        (b"hello", "UnsupportedMediaType"),
        (encode(Image.new("RGB", (4, 4)), "BMP"), "UnsupportedMediaType"),
        (encode(Image.new("RGB", (4, 4)), "TIFF"), "UnsupportedMediaType"),
        (png[:40], "Decode"),
        (b"GIF89a" + b"\0" * 10, "Decode"),
        (bomb_png(0, 0), "Decode"),
    ]
    for data, kind in cases:
        error = failure(lambda: preprocess(data))
        assert (error.kind, error.is_retryable, str(error)) == (kind, False, f"image[0]: {UNSUPPORTED}"), data[:8]
    with pytest.raises(ValueError, match='invalid detail "LOW"'):
        dr.PreprocessOptions("LOW", 64, 16)  # type: ignore[arg-type]


# -- the resolver --------------------------------------------------------------------------

RESOLVER = dr.ImageResolver(dr.ReqwestImageFetcher(), dr.OpenCvImagePreprocessor())
PNG = solid_png(3, 3)


def resolve(sources: list[dr.ImageSource], quota: dr.ImageQuota | None = None) -> Any:
    quota = quota if quota is not None else dr.ImageQuota()
    try:
        images = RESOLVER.resolve(sources, quota)
    except dr.ImageError as error:
        return (error.kind, str(error), quota.image_count(), quota.byte_size())
    return ([(i.width, i.height) for i in images.images], quota.image_count(), quota.byte_size())


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def test_sources_of_every_kind_share_preprocessing_and_quota() -> None:
    quota = dr.ImageQuota()
    low = dr.BytesImageSource(solid_png(1000, 800), "low")
    got = resolve([dr.BytesImageSource(PNG), dr.DataUrlImageSource(data_url(PNG, "image/jpeg")), low], quota)
    assert got == ([(546, 546), (546, 546), (616, 490)], 3, 2 * len(PNG) + len(low.data or b""))


def test_a_failed_call_adds_nothing_and_the_quota_spans_calls() -> None:
    quota = dr.ImageQuota()
    assert resolve([dr.BytesImageSource(PNG)] * 300, quota)[1:] == (300, 300 * len(PNG))
    assert (
        resolve([dr.BytesImageSource(PNG), dr.BytesImageSource(b"junk", path="m")], quota)[0] == "UnsupportedMediaType"
    )
    assert (quota.image_count(), quota.byte_size()) == (300, 300 * len(PNG))
    assert resolve([dr.BytesImageSource(PNG)] * 300, quota)[1:] == (600, 600 * len(PNG))
    assert resolve([dr.BytesImageSource(PNG)], quota) == (
        "TooManyImages",
        "Too many images: max 600 images per request, got 601",
        600,
        600 * len(PNG),
    )


MIB = 1 << 20


def test_size_limits_and_messages() -> None:
    def x(n: int) -> dr.ImageSource:
        return dr.BytesImageSource(b"x" * n)

    assert resolve([x(32 * MIB + 1)])[:2] == ("ImageTooLarge", "image[0]: image file size exceeds limit 32 MB")
    assert resolve([x(32 * MIB)])[0] == "UnsupportedMediaType"
    assert resolve([x(32 * MIB), x(32 * MIB), x(MIB - 1)])[:2] == (
        "TotalSizeTooLarge",
        "Total image size exceeds the limit: max 64 MB per request, got 64 MB",
    )


@pytest.mark.parametrize(
    "sources, want",
    [
        # The wheel's order: per source, the download or data URL, size and emptiness; then
        # per source, the preprocessing. URL checks happen in the first pass, in order.
        (
            [dr.BytesImageSource(b"junk"), dr.UrlImageSource("http://x/" + "a" * 9000)],
            ("UrlTooLong", "external link length 9009 too long, max link length 8192"),
        ),
        ([dr.BytesImageSource(b"junk"), dr.UrlImageSource("ftp://a/")], ("InvalidUrl", 'invalid url: "ftp://a/"')),
        ([dr.UrlImageSource("ftp://" + "a" * 9000)], ("InvalidUrl", None)),
        ([dr.BytesImageSource(b"junk"), dr.BytesImageSource(b"")], ("EmptyImage", "image[1]")),
        ([dr.BytesImageSource(b""), dr.BytesImageSource(b"junk")], ("EmptyImage", "image[0]")),
        (
            [dr.BytesImageSource(b"junk"), dr.DataUrlImageSource("data:image/png;base64,@@")],
            ("InvalidDataUrl", "image[1]"),
        ),
        (
            [dr.BytesImageSource(b"junk"), dr.DataUrlImageSource(data_url(PNG, "text/plain"))],
            ("UnsupportedMediaType", "image[1]"),
        ),
        (
            [dr.BytesImageSource(bomb_png(9000, 2)), dr.BytesImageSource(b"junk")],
            ("ImageDimensionsTooLarge", "image[0]"),
        ),
        (
            [dr.BytesImageSource(b"junk", path="a"), dr.BytesImageSource(PNG, path="b")],
            ("UnsupportedMediaType", "a.image[0]"),
        ),
        (
            [
                dr.BytesImageSource(PNG, path="a"),
                dr.BytesImageSource(PNG, path="b"),
                dr.BytesImageSource(b"x", path="b"),
            ],
            ("UnsupportedMediaType", "b.image[1]"),
        ),
        (
            [dr.UrlImageSource("http://127.0.0.1:1/a.png", path="m")],
            ("DestinationRejected", "m.image[0]: Failed to download image from http://127.0.0.1:1/a.png"),
        ),
    ],
)
def test_the_first_failure_in_the_wheels_order(sources: list[dr.ImageSource], want: tuple[str, str | None]) -> None:
    kind, message, *_ = resolve(sources)
    assert kind == want[0]
    if want[1] is not None:
        assert message.startswith(want[1])


def test_data_urls_are_read_like_conversion_reads_them() -> None:
    quoted = "".join(f"%{b:02X}" for b in PNG)
    for url in [
        data_url(PNG),
        "data:image/png," + quoted,
        " " + data_url(PNG),
        data_url(PNG, "IMAGE/PNG"),
        data_url(PNG, "image/jpg"),
    ]:
        assert resolve([dr.DataUrlImageSource(url)])[0] == [(546, 546)], url
    for url, kind in [
        (data_url(PNG) + "=", "InvalidDataUrl"),
        ("http://x/a.png", "InvalidDataUrl"),
        (data_url(PNG, "image/svg+xml"), "UnsupportedMediaType"),
        ("data:image/png;base64,", "EmptyImage"),
    ]:
        assert resolve([dr.DataUrlImageSource(url)])[0] == kind, url
