//! The exhaustive sweep: every image token count and every preprocessed size recorded from
//! the published 0.2.0 wheel (`scripts/record/image_geometry.py`) against this crate.
//!
//! Token counts: every size of 1..4096 squared, 0..64 against 1..131072 both ways round,
//! every multiple of 14 up to 16,380 squared (one CRC-32 per row, so a mismatch names its
//! row), and 106,000 counts written out (0..256 squared, corners, log-uniform sizes up to
//! 2^32 - 1). Geometry: every row of the table, sizes and too-large errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::PathBuf;

use deepseek_images::geometry::{image_tokens, output_size, PreprocessOptions};
use deepseek_model::ImageDetail;
use serde_json::Value;

fn table() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/reference_tables/image_geometry.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn crc_row(counts: impl Iterator<Item = u64>) -> u64 {
    let mut hasher = crc32fast::Hasher::new();
    for count in counts {
        hasher.update(&u16::try_from(count).unwrap().to_le_bytes());
    }
    u64::from(hasher.finalize())
}

fn tokens(w: u32, h: u32) -> u64 {
    image_tokens(w, h).unwrap()
}

fn rows(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

fn check_rows(name: &str, want: &[u64], row: impl Fn(u32) -> u64 + Sync, first: u32) {
    use rayon::prelude::*;
    let bad: Vec<u32> = (0..want.len() as u32)
        .into_par_iter()
        .filter(|&i| row(first + i) != want[i as usize])
        .map(|i| first + i)
        .collect();
    assert!(
        bad.is_empty(),
        "{name}: {} rows differ, the first: {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
}

#[test]
fn every_token_count_of_1_to_4096_squared() {
    let t = table();
    let grid = &t["tokens"]["grid"];
    let size = grid["size"].as_u64().unwrap() as u32;
    assert_eq!(size, 4096);
    let want = rows(&grid["crc32_rows"]);
    assert_eq!(want.len(), 4096);
    check_rows(
        "grid",
        &want,
        |w| crc_row((1..=size).map(|h| tokens(w, h))),
        1,
    );
}

#[test]
fn every_token_count_of_thin_images() {
    let t = table();
    let strips = &t["tokens"]["strips"];
    let length = strips["length"].as_u64().unwrap() as u32;
    assert_eq!(length, 131_072);
    let tall = rows(&strips["tall_crc32"]);
    let wide = rows(&strips["wide_crc32"]);
    assert_eq!((tall.len(), wide.len()), (65, 65));
    check_rows(
        "tall",
        &tall,
        |w| crc_row((1..=length).map(|h| tokens(w, h))),
        0,
    );
    check_rows(
        "wide",
        &wide,
        |w| crc_row((1..=length).map(|h| tokens(h, w))),
        0,
    );
}

#[test]
fn every_token_count_of_a_preprocessed_size() {
    let t = table();
    let multiples = &t["tokens"]["patch_multiples"];
    let count = multiples["count"].as_u64().unwrap() as u32;
    assert_eq!(count, 1170);
    let want = rows(&multiples["crc32_rows"]);
    check_rows(
        "multiples of 14",
        &want,
        |i| crc_row((1..=count).map(|j| tokens(14 * i, 14 * j))),
        1,
    );
}

#[test]
fn written_out_token_counts() {
    let t = table();
    let explicit = t["tokens"]["explicit"].as_array().unwrap();
    assert!(explicit.len() > 100_000);
    let mut bad = Vec::new();
    for row in explicit {
        let [w, h, want] = [0, 1, 2].map(|i| row[i].as_u64().unwrap());
        let got = tokens(w as u32, h as u32);
        if got != want {
            bad.push((w, h, want, got));
        }
    }
    assert!(
        bad.is_empty(),
        "{} differ: {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
}

#[test]
fn every_recorded_preprocessed_size_and_refusal() {
    let t = table();
    let geometry = t["geometry"].as_array().unwrap();
    assert!(geometry.len() > 60_000);
    let mut bad = Vec::new();
    let mut refusals = 0;
    for row in geometry {
        let r = row.as_array().unwrap();
        let (w, h) = (r[0].as_u64().unwrap() as u32, r[1].as_u64().unwrap() as u32);
        let options = PreprocessOptions {
            detail: ImageDetail::parse(r[2].as_str().unwrap()).unwrap(),
            max_dimension_px: r[3].as_u64().unwrap() as u32,
            low_detail_max_dimension_px: r[4].as_u64().unwrap() as u32,
        };
        let got = match output_size(w, h, &options, "image[0]") {
            Ok((gw, gh)) => Value::from(vec![gw, gh]),
            Err(e) => Value::from(vec![e.kind.name()]),
        };
        let want = Value::from(r[5..].to_vec());
        if r[5].is_string() {
            refusals += 1;
        }
        if got != want {
            bad.push((r.clone(), got));
        }
    }
    assert!(refusals > 1000, "the table holds the too-large refusals");
    assert!(
        bad.is_empty(),
        "{} differ: {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
}
