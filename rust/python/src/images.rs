//! The image classes: `ImageInfo`, `MultiModalData`, `ImageQuota`, `PreprocessOptions`,
//! `OpenCvImagePreprocessor`, `ReqwestImageFetcher` and `ImageResolver`. The rules are the
//! `deepseek-images` crate's; downloads go through `deepseek_recipe._fetch` (httpx, each
//! connection pinned to an address the crate's destination rule accepted), which these
//! classes call with their settings and whose outcomes they turn into `ImageError`s.

use std::sync::Mutex;

use deepseek_images::address::Policy;
use deepseek_images::resolve::{self, Download, Quota};
use deepseek_images::{geometry, preprocess, ImageError, ImageErrorKind, PreprocessedImage};
use deepseek_model::{ImageDetail, ImageSource, ImageSourceKind};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::errors;
use crate::message::PyImageSource;

/// A preprocessed image for the inference backend: its encoded bytes and its dimensions in
/// pixels.
#[pyclass(name = "ImageInfo", frozen, module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PyImageInfo {
    data: Vec<u8>,
    width: u32,
    height: u32,
}

#[pymethods]
impl PyImageInfo {
    #[new]
    fn new(data: Vec<u8>, width: u32, height: u32) -> Self {
        Self {
            data,
            width,
            height,
        }
    }
    /// Encoded image bytes.
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.data)
    }
    /// Image width in pixels after preprocessing.
    #[getter]
    fn width(&self) -> u32 {
        self.width
    }
    /// Image height in pixels after preprocessing.
    #[getter]
    fn height(&self) -> u32 {
        self.height
    }
}

impl From<PreprocessedImage> for PyImageInfo {
    fn from(image: PreprocessedImage) -> Self {
        Self {
            data: image.data,
            width: image.width,
            height: image.height,
        }
    }
}

/// Images in the order their placeholders appear in a prompt.
#[pyclass(name = "MultiModalData", frozen, module = "deepseek_recipe._native")]
pub struct PyMultiModalData {
    images: Vec<PyImageInfo>,
}

#[pymethods]
impl PyMultiModalData {
    #[new]
    #[pyo3(signature = (images=None))]
    fn new(images: Option<Vec<PyRef<'_, PyImageInfo>>>) -> Self {
        Self {
            images: images
                .unwrap_or_default()
                .iter()
                .map(|i| (**i).clone())
                .collect(),
        }
    }
    /// Images in placeholder order.
    #[getter]
    fn images(&self) -> Vec<PyImageInfo> {
        self.images.clone()
    }
    /// Return whether no image is attached.
    fn is_empty(&self) -> bool {
        self.images.is_empty()
    }
    /// Return the number of inference input tokens beyond one per placeholder (each image
    /// takes its image token count in the engine's input and one placeholder in the prompt).
    /// Raises `CalcResizeError` when fitting an image does not converge.
    fn image_token_adjustment(&self) -> PyResult<u64> {
        let mut sum = 0u64;
        for image in &self.images {
            let tokens = geometry::image_tokens(image.width, image.height)
                .map_err(|e| errors::CalcResizeError::new_err(e.to_string()))?;
            sum = sum.saturating_add(tokens - 1);
        }
        Ok(sum)
    }
}

/// The image count and encoded source bytes recorded by the completed resolve calls of one
/// request. Pass the same quota to every call of a request; a failed call adds nothing.
#[pyclass(name = "ImageQuota", frozen, module = "deepseek_recipe._native")]
#[derive(Default)]
pub struct PyImageQuota {
    inner: Mutex<Quota>,
}

impl PyImageQuota {
    fn get(&self) -> Quota {
        self.inner
            .lock()
            .map(|q| *q)
            .unwrap_or_else(|p| *p.into_inner())
    }
    /// Add what a completed call recorded (calls of one request are meant to run one after
    /// another; concurrent ones each check the limits against what they saw).
    fn add(&self, images: u64, bytes: u64) {
        let add = |q: &mut Quota| {
            q.images = q.images.saturating_add(images);
            q.bytes = q.bytes.saturating_add(bytes);
        };
        match self.inner.lock() {
            Ok(mut q) => add(&mut q),
            Err(p) => add(&mut p.into_inner()),
        }
    }
}

#[pymethods]
impl PyImageQuota {
    #[new]
    fn new() -> Self {
        Self::default()
    }
    /// Return the number of sources recorded by the completed calls.
    fn image_count(&self) -> u64 {
        self.get().images
    }
    /// Return the number of encoded bytes recorded by the completed calls.
    fn byte_size(&self) -> u64 {
        self.get().bytes
    }
}

fn detail(detail: &str) -> PyResult<ImageDetail> {
    ImageDetail::parse(detail).ok_or_else(|| {
        PyValueError::new_err(format!(
            "invalid detail {detail:?}; expected \"low\", \"high\", \"original\", or \"auto\""
        ))
    })
}

/// Options passed to one image preprocessing operation.
#[pyclass(name = "PreprocessOptions", frozen, module = "deepseek_recipe._native")]
pub struct PyPreprocessOptions {
    inner: geometry::PreprocessOptions,
}

#[pymethods]
impl PyPreprocessOptions {
    #[new]
    fn new(
        detail: &str,
        max_dimension_px: u32,
        low_detail_max_dimension_px: u32,
    ) -> PyResult<Self> {
        Ok(Self {
            inner: geometry::PreprocessOptions {
                detail: self::detail(detail)?,
                max_dimension_px,
                low_detail_max_dimension_px,
            },
        })
    }
    /// Pickles as `PreprocessOptions(detail, max_dimension_px, low_detail_max_dimension_px)`.
    fn __getnewargs__(&self) -> (&'static str, u32, u32) {
        (
            self.inner.detail.as_str(),
            self.inner.max_dimension_px,
            self.inner.low_detail_max_dimension_px,
        )
    }
    /// Requested image detail level.
    #[getter]
    fn detail(&self) -> &'static str {
        self.inner.detail.as_str()
    }
    /// Maximum accepted source width or height in pixels, before resizing.
    #[getter]
    fn max_dimension_px(&self) -> u32 {
        self.inner.max_dimension_px
    }
    /// Maximum long side in pixels at low detail, applied before token-budget fitting.
    #[getter]
    fn low_detail_max_dimension_px(&self) -> u32 {
        self.inner.low_detail_max_dimension_px
    }
}

/// The image preprocessor (the name is the reference's; this one is the `image` crate's
/// decoders and WebP encoder): decode, orient, fit, letterbox, WebP.
#[pyclass(
    name = "OpenCvImagePreprocessor",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyOpenCvImagePreprocessor;

#[pymethods]
impl PyOpenCvImagePreprocessor {
    #[new]
    fn new() -> Self {
        Self
    }
    /// Preprocess encoded image bytes with the GIL released.
    fn preprocess(
        &self,
        py: Python<'_>,
        data: Vec<u8>,
        options: PyRef<'_, PyPreprocessOptions>,
    ) -> PyResult<PyImageInfo> {
        let options = options.inner;
        py.detach(|| preprocess(&data, &options))
            .map(PyImageInfo::from)
            .map_err(errors::image)
    }
}

const MIB: u64 = 1 << 20;

/// Settings of a fetcher, read by `deepseek_recipe._fetch`.
struct FetchSettings {
    max_bytes: u64,
    filter: Option<Py<PyAny>>,
    connect_timeout: f64,
    total_timeout: f64,
    resolver: Option<Py<PyAny>>,
    concurrency: usize,
    max_redirects: u32,
}

/// An image fetcher (the name is the reference's; this one downloads with httpx). By default
/// it connects only to globally routable addresses, each connection pinned to the address
/// that was checked, every redirect checked again.
#[pyclass(
    name = "ReqwestImageFetcher",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyReqwestImageFetcher {
    settings: FetchSettings,
    policy: Policy,
}

impl PyReqwestImageFetcher {
    fn with(&self, change: impl FnOnce(&mut FetchSettings)) -> Self {
        let mut settings = Python::attach(|py| FetchSettings {
            filter: self.settings.filter.as_ref().map(|f| f.clone_ref(py)),
            resolver: self.settings.resolver.as_ref().map(|f| f.clone_ref(py)),
            ..self.settings.clone_plain()
        });
        change(&mut settings);
        Self {
            settings,
            policy: self.policy.clone(),
        }
    }

    /// Download `urls` concurrently: one outcome per URL. `sniff`: stop a body whose first
    /// bytes are no image (a resolve call refuses it anyway).
    fn download(&self, py: Python<'_>, urls: &[String], sniff: bool) -> PyResult<Vec<Outcome>> {
        let module = py.import("deepseek_recipe._fetch")?;
        let outcomes = module.call_method1(
            "fetch_many",
            (self.settings_tuple(py)?, urls.to_vec(), sniff),
        )?;
        outcomes.extract::<Vec<(String, Option<Vec<u8>>)>>()
    }

    fn settings_tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let s = &self.settings;
        PyTuple::new(
            py,
            [
                s.max_bytes.into_pyobject(py)?.into_any(),
                s.filter
                    .as_ref()
                    .map_or_else(|| py.None().into_bound(py), |f| f.bind(py).clone()),
                Bound::new(
                    py,
                    PyFetchRules {
                        policy: self.policy.clone(),
                    },
                )?
                .into_any(),
                s.connect_timeout.into_pyobject(py)?.into_any(),
                s.total_timeout.into_pyobject(py)?.into_any(),
                s.resolver
                    .as_ref()
                    .map_or_else(|| py.None().into_bound(py), |f| f.bind(py).clone()),
                s.concurrency.into_pyobject(py)?.into_any(),
                s.max_redirects.into_pyobject(py)?.into_any(),
            ],
        )
    }
}

impl FetchSettings {
    fn clone_plain(&self) -> Self {
        Self {
            max_bytes: self.max_bytes,
            filter: None,
            connect_timeout: self.connect_timeout,
            total_timeout: self.total_timeout,
            resolver: None,
            concurrency: self.concurrency,
            max_redirects: self.max_redirects,
        }
    }
}

impl Clone for FetchSettings {
    fn clone(&self) -> Self {
        Python::attach(|py| Self {
            filter: self.filter.as_ref().map(|f| f.clone_ref(py)),
            resolver: self.resolver.as_ref().map(|f| f.clone_ref(py)),
            ..self.clone_plain()
        })
    }
}

/// What `_fetch.fetch_many` reports for one URL: `("ok", body)`, `("too_large", None)`,
/// `("rejected", None)`, `("status:<code>", None)`, `("client", None)` or `("fetch", None)`.
type Outcome = (String, Option<Vec<u8>>);

/// The error for a failed download of `url` (image `location`); `in_resolver` because the
/// reference reports an oversized body as `ImageTooLarge` from `fetch` but as a (retryable)
/// `Fetch` failure from a resolve call.
fn outcome_error(
    outcome: &str,
    location: &str,
    url: &str,
    max_bytes: u64,
    in_resolver: bool,
) -> ImageError {
    let kind = match outcome {
        "too_large" if in_resolver => ImageErrorKind::Fetch,
        "too_large" => {
            return ImageError::new(
                ImageErrorKind::ImageTooLarge,
                format!(
                    "{location}: image file size exceeds limit {} MB",
                    max_bytes / MIB
                ),
            )
        }
        "rejected" => ImageErrorKind::DestinationRejected,
        "client" => ImageErrorKind::Client,
        other => match other
            .strip_prefix("status:")
            .and_then(|s| s.parse::<u16>().ok())
        {
            Some(status) => ImageErrorKind::FetchStatus(status),
            None => ImageErrorKind::Fetch,
        },
    };
    ImageError::download(kind, location, url)
}

#[pymethods]
impl PyReqwestImageFetcher {
    #[new]
    fn new() -> Self {
        Self {
            settings: FetchSettings {
                max_bytes: resolve::MAX_IMAGE_BYTES,
                filter: None,
                connect_timeout: 10.0,
                total_timeout: 30.0,
                resolver: None,
                concurrency: 8,
                max_redirects: 5,
            },
            policy: Policy::default(),
        }
    }

    /// A fetcher with the default rules and this size limit.
    #[staticmethod]
    fn with_max_bytes(max_bytes: u64) -> Self {
        let mut fetcher = Self::new();
        fetcher.settings.max_bytes = max_bytes;
        fetcher
    }

    /// Return a fetcher with this fetcher's size limit that connects only to the addresses
    /// `destination_filter(host, address)` allows (it replaces the default rule). A filter
    /// that raises or returns a non-boolean rejects the address.
    fn with_destination_filter(&self, destination_filter: Bound<'_, PyAny>) -> PyResult<Self> {
        if !destination_filter.is_callable() {
            return Err(PyTypeError::new_err("destination_filter must be callable"));
        }
        let filter = destination_filter.unbind();
        Ok(self.with(|s| s.filter = Some(filter)))
    }

    /// Ours: allow these networks (`"127.0.0.0/8"`, `"::1"`) besides the globally routable
    /// addresses. Raises `ValueError` for a malformed network.
    fn with_allowed_networks(&self, networks: Vec<String>) -> PyResult<Self> {
        let policy = Policy::allowing(&networks).map_err(PyValueError::new_err)?;
        Ok(Self {
            policy,
            ..self.with(|_| {})
        })
    }

    /// Ours: the connect timeout and the total time of one download, in seconds.
    fn with_timeouts(&self, connect: f64, total: f64) -> PyResult<Self> {
        if !(connect > 0.0 && total > 0.0) {
            return Err(PyValueError::new_err("timeouts must be positive"));
        }
        Ok(self.with(|s| {
            s.connect_timeout = connect;
            s.total_timeout = total;
        }))
    }

    /// Ours: resolve host names with `resolver(host, port) -> list[str]` (once per hop; the
    /// connection uses an address it returned) instead of the system resolver.
    fn with_resolver(&self, resolver: Bound<'_, PyAny>) -> PyResult<Self> {
        if !resolver.is_callable() {
            return Err(PyTypeError::new_err("resolver must be callable"));
        }
        let resolver = resolver.unbind();
        Ok(self.with(|s| s.resolver = Some(resolver)))
    }

    /// Ours: how many images of one resolve call download at once (at least 1).
    fn with_concurrency(&self, concurrency: usize) -> Self {
        self.with(|s| s.concurrency = concurrency.max(1))
    }

    /// Fetch encoded image bytes. A standalone fetch applies this fetcher's size limit to one
    /// image; every failure names it `image[0]`.
    fn fetch<'py>(&self, py: Python<'py>, url: String) -> PyResult<Bound<'py, PyBytes>> {
        let mut outcomes = self.download(py, std::slice::from_ref(&url), false)?;
        match outcomes.pop() {
            Some((ok, Some(body))) if ok == "ok" => Ok(PyBytes::new(py, &body)),
            Some((outcome, _)) => Err(errors::image(outcome_error(
                &outcome,
                "image[0]",
                &url,
                self.settings.max_bytes,
                false,
            ))),
            None => Err(errors::image(ImageError::download(
                ImageErrorKind::Fetch,
                "image[0]",
                &url,
            ))),
        }
    }
}

/// An image resolver built from explicit fetching and preprocessing components.
#[pyclass(name = "ImageResolver", frozen, module = "deepseek_recipe._native")]
pub struct PyImageResolver {
    fetcher: Py<PyReqwestImageFetcher>,
    max_pixels: Option<u64>,
}

#[pymethods]
impl PyImageResolver {
    #[new]
    fn new(
        fetcher: Bound<'_, PyReqwestImageFetcher>,
        preprocessor: PyRef<'_, PyOpenCvImagePreprocessor>,
    ) -> Self {
        let _ = preprocessor;
        Self {
            fetcher: fetcher.unbind(),
            max_pixels: None,
        }
    }

    /// Ours: a resolver that refuses a call whose images hold more than `max_pixels` pixels
    /// (read from their headers, before any is decoded): `ImageError` kind `TooManyPixels`.
    fn with_pixel_budget(&self, py: Python<'_>, max_pixels: u64) -> Self {
        Self {
            fetcher: self.fetcher.clone_ref(py),
            max_pixels: Some(max_pixels),
        }
    }

    /// Ours: the pixel budget of one call (`None`: none, as the reference's resolver).
    #[getter]
    fn pixel_budget(&self) -> Option<u64> {
        self.max_pixels
    }

    /// Resolve image sources and update the caller-supplied request quota. Downloads run
    /// concurrently, preprocessing in parallel with the GIL released. A failed call leaves
    /// the quota unchanged.
    fn resolve(
        &self,
        py: Python<'_>,
        sources: Vec<PyRef<'_, PyImageSource>>,
        quota: PyRef<'_, PyImageQuota>,
    ) -> PyResult<PyMultiModalData> {
        let sources: Vec<ImageSource> = sources.iter().map(|s| s.inner.clone()).collect();
        let before = quota.get();
        let mut current = before;
        let wanted = resolve::urls_to_fetch(&sources, &current).map_err(errors::image)?;
        let mut downloads: Vec<Option<Download>> = (0..sources.len()).map(|_| None).collect();
        if !wanted.is_empty() {
            let urls: Vec<String> = wanted
                .iter()
                .filter_map(|&i| match &sources[i].kind {
                    ImageSourceKind::Url(url) => Some(url.clone()),
                    _ => None,
                })
                .collect();
            let fetcher = self.fetcher.bind(py).get();
            let outcomes = fetcher.download(py, &urls, true)?;
            let locations = resolve::locations(&sources);
            for ((&i, url), (outcome, body)) in wanted.iter().zip(&urls).zip(outcomes) {
                downloads[i] = Some(match body {
                    Some(body) if outcome == "ok" => Ok(body),
                    _ => Err(outcome_error(
                        &outcome,
                        &locations[i],
                        url,
                        fetcher.settings.max_bytes,
                        true,
                    )),
                });
            }
        }
        let images = py
            .detach(|| resolve::resolve(&sources, downloads, &mut current, self.max_pixels))
            .map_err(errors::image)?;
        quota.add(current.images - before.images, current.bytes - before.bytes);
        Ok(PyMultiModalData {
            images: images.into_iter().map(PyImageInfo::from).collect(),
        })
    }
}

/// Bytes `_looks_like_image` needs to decide.
pub const SNIFF_BYTES: usize = 12;

/// The rules a download follows, handed to `deepseek_recipe._fetch` with the fetcher's
/// settings: that module applies them and imports nothing of this one.
#[pyclass(name = "_FetchRules", frozen, module = "deepseek_recipe._native")]
struct PyFetchRules {
    policy: Policy,
}

#[pymethods]
impl PyFetchRules {
    /// Whether the fetcher's rule allows connecting to `address` (a caller's filter, when
    /// set, decides instead).
    fn allows_address(&self, address: &str) -> bool {
        self.policy.allows_text(address)
    }

    /// Whether a fetcher may use this URL scheme.
    #[staticmethod]
    fn scheme_allowed(scheme: &str) -> bool {
        deepseek_images::address::scheme_allowed(scheme)
    }

    /// How many first bytes of a body `looks_like_image` needs.
    #[getter]
    fn sniff_bytes(&self) -> usize {
        SNIFF_BYTES
    }

    /// Whether the first bytes of a body are those of a PNG, JPEG, GIF or WebP file.
    #[staticmethod]
    fn looks_like_image(prefix: &[u8]) -> bool {
        deepseek_images::preprocess::sniff(prefix).is_some()
    }
}
