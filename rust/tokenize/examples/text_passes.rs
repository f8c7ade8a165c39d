//! Encode a warm-up text once, then a measured text a given number of times, on the
//! calling thread: the program `bench/cachegrind.sh` counts instructions and cache misses
//! of. Pass 1 finds the measured text's new words (their merges); later passes find them
//! all in the thread's caches.
//!
//! `DEEPSEEK_TOKENIZER_JSON=/path/tokenizer.json cargo run -p deepseek-tokenize --example
//! text_passes -- WARM.txt TEXT.txt PASSES`

use deepseek_tokenize::Tokenizer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, warm, text, passes] = args.as_slice() else {
        return Err("usage: text_passes WARM.txt TEXT.txt PASSES".into());
    };
    let passes: usize = passes.parse()?;
    let tokenizer = Tokenizer::from_file(std::env::var("DEEPSEEK_TOKENIZER_JSON")?.as_ref())?;
    tokenizer.encode(&std::fs::read_to_string(warm)?)?;
    let text = std::fs::read_to_string(text)?;
    for pass in 1..=passes {
        let ids = tokenizer.encode(&text)?;
        println!("pass {pass}: {} ids", ids.len());
    }
    Ok(())
}
