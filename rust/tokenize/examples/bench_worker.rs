//! The tokenizer alone on the bench's workloads, speaking `bench/worker.py`'s file format so
//! its ids can be compared with the peers' (`<out>/<workload>.<label>.ids`, little-endian
//! u32). Measures wall time and CPU time (all threads, from `/proc/self/task/*/schedstat`).
//!
//! `cargo run -p deepseek-tokenize --profile bench-opt --example bench_worker -- DATA OUT LABEL WORKLOAD...`
//! with `DEEPSEEK_TOKENIZER_JSON` set; `RAYON_NUM_THREADS=1` for one thread.

use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::time::Instant;

use deepseek_tokenize::{PromptIds, Tokenizer};
use serde_json::Value;

/// What a measured call returned.
enum Ids {
    Vec(Vec<u32>),
    Prompt(PromptIds),
}

/// CPU time of every thread of this process, in seconds.
fn cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<f64>().ok())
        .sum::<f64>()
        / 1e9
}

/// A prompt rebuilt from `[[is_special, text], ...]`.
fn prompt(segments: &Value) -> (String, Vec<Range<usize>>) {
    let mut text = String::new();
    let mut ranges = Vec::new();
    for segment in segments.as_array().into_iter().flatten() {
        let special = segment[0].as_i64() == Some(1);
        let start = text.len();
        text.push_str(segment[1].as_str().unwrap_or_default());
        if special {
            ranges.push(start..text.len());
        }
    }
    (text, ranges)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, data, out, label, workloads @ ..] = args.as_slice() else {
        return Err("usage: bench_worker DATA OUT LABEL WORKLOAD...".into());
    };
    let (data, out) = (Path::new(data), Path::new(out));
    let path = std::env::var("DEEPSEEK_TOKENIZER_JSON")?;
    let started = Instant::now();
    let tokenizer = Tokenizer::from_file(path.as_ref())?;
    let load = started.elapsed().as_secs_f64();
    println!("{label}: load {load:.3} s");
    println!(
        "{label}: kanji/kana characters merged whole: {}",
        tokenizer.char_merge_characters()
    );
    for workload in workloads {
        let mut sink = std::fs::File::create(out.join(format!("{workload}.{label}.ids")))?;
        let mut write = |ids: &[u32]| -> std::io::Result<()> {
            let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
            sink.write_all(&bytes)
        };
        // The measured call returns the ids as the Python binding reads them (a prompt's
        // ids in the slices they are kept in); they are gathered after the clock stops.
        let timed = |what: &str, run: &mut dyn FnMut() -> Ids| {
            let (w0, c0) = (Instant::now(), cpu_seconds());
            let ids = run();
            let (wall, cpu) = (w0.elapsed().as_secs_f64(), cpu_seconds() - c0);
            let ids = match ids {
                Ids::Vec(ids) => ids,
                Ids::Prompt(ids) => ids.into_vec(),
            };
            println!(
                "{label} {workload} {what}: wall {wall:.4} s, cpu {cpu:.4} s, {} ids",
                ids.len()
            );
            ids
        };
        let prompt_ids = |text: &str, ranges: &[Range<usize>]| {
            tokenizer
                .encode_prompt_ids(text, ranges)
                .map_or(Ids::Vec(Vec::new()), Ids::Prompt)
        };
        if workload.starts_with('e') {
            let spec: Value = serde_json::from_str(&std::fs::read_to_string(
                data.join(format!("{workload}.json")),
            )?)?;
            for (section, measured) in [("warmup", false), ("measure", true)] {
                for file in spec[section].as_array().into_iter().flatten() {
                    // As Python's `read_text` (universal newlines), which the peers are given.
                    let text = std::fs::read_to_string(data.join(file.as_str().unwrap_or("")))?
                        .replace("\r\n", "\n")
                        .replace('\r', "\n");
                    let ids = timed(section, &mut || {
                        Ids::Vec(tokenizer.encode(&text).unwrap_or_default())
                    });
                    if measured {
                        write(&ids)?;
                    }
                }
            }
            continue;
        }
        let segments: Value = serde_json::from_str(&std::fs::read_to_string(
            data.join(format!("{workload}.segments.json")),
        )?)?;
        let sections: &[&str] = if workload.starts_with('d') {
            &["warmup"]
        } else {
            &["warmup", "measure"]
        };
        for &section in sections {
            let prompts: Vec<_> = segments[section]
                .as_array()
                .into_iter()
                .flatten()
                .map(prompt)
                .collect();
            if workload.starts_with('c') && section == "measure" {
                let ids = timed("all", &mut || {
                    let mut all = Vec::new();
                    for (text, ranges) in &prompts {
                        all.extend(tokenizer.encode_prompt(text, ranges).unwrap_or_default());
                    }
                    Ids::Vec(all)
                });
                write(&ids)?;
                continue;
            }
            for (i, (text, ranges)) in prompts.iter().enumerate() {
                let ids = timed(&format!("{section}[{i}]"), &mut || prompt_ids(text, ranges));
                if section == "measure" {
                    write(&ids)?;
                }
            }
        }
        if workload.starts_with('d') {
            let rounds = segments["base"].as_array().map_or(0, Vec::len);
            for round in 0..rounds {
                for (section, what) in [
                    ("base", "N"),
                    ("next", "N+1 after N"),
                    ("fresh", "fresh N+1"),
                ] {
                    let (text, ranges) = prompt(&segments[section][round]);
                    let ids = timed(&format!("{what} [{round}]"), &mut || {
                        prompt_ids(&text, &ranges)
                    });
                    write(&ids)?;
                }
            }
        }
    }
    Ok(())
}
