//! The direct plain pipeline (`plain_pipeline.rs`) against `tokenizers`' own pipeline on
//! the same file: identical ids on hand-picked edge cases and on generated texts drawn from
//! every character class the DeepSeek pre-tokenizer regexes distinguish.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[test]
fn the_deepseek_file_takes_the_direct_pipeline() {
    assert!(common::tokenizer().uses_direct_pipeline());
    assert!(common::tokenizer().uses_deepseek_v4_splitter());
    assert!(common::tokenizer().uses_fast_bpe());
    // Kanji/kana runs merge from whole characters for most common characters (the merge
    // table passes `char_merge.rs`'s check for them); a change that lost that would be slow.
    assert!(common::tokenizer().char_merge_characters() > 3000);
}

/// Runs of kanji and kana, which merge from whole characters where the merge table allows
/// it: characters drawn from the whole class (rare ones, and ones the check leaves out),
/// and from words whose merges mix parts of characters (`ー` + `ド`, `ション`, `娱乐圈`).
#[test]
fn kanji_kana_runs_match_tokenizers() {
    let tokenizer = common::tokenizer();
    let words: Vec<&str> = "ション ファイル ード ーム 娱乐圈 中国 日本語 東京 是的 我们 ソフトウェア 的 一 丁 乐 の を は"
        .split(' ')
        .collect();
    let class: Vec<char> = (0x3040..=0x30ff)
        .chain(0x4e00..=0x9fa5)
        .filter_map(char::from_u32)
        .collect();
    let mut rng = common::Lcg(0xc3c3);
    let mut next = || rng.next();
    for round in 0..3000 {
        let mut text = String::new();
        for _ in 0..1 + next() % 30 {
            match next() % 3 {
                0 => text.push(class[next() % class.len()]),
                // The first kanji of the block, many of them common.
                1 => text.push(class[192 + next() % 3000]),
                _ => text.push_str(words[next() % words.len()]),
            }
        }
        assert_eq!(
            tokenizer.encode_plain(&text).unwrap(),
            tokenizer.encode_plain_by_tokenizers(&text).unwrap(),
            "round {round}: {text:?}"
        );
    }
}

/// Word-like pieces of every length around the fast BPE's limit (64 bytes), from letters
/// weighted like English plus some multi-byte characters, to exercise many merges.
#[test]
fn word_pieces_of_every_length_match_tokenizers() {
    let tokenizer = common::tokenizer();
    let letters: Vec<char> = "eeeeeettttaaaoooiiinnnsssshhrrdllcumwfgypbvkjxqz EEETAON éüñß中ж"
        .chars()
        .collect();
    let mut rng = common::Lcg(7);
    let mut next = || rng.next();
    for round in 0..4000 {
        let len = 1 + next() % 90;
        let text: String = (0..len).map(|_| letters[next() % letters.len()]).collect();
        assert_eq!(
            tokenizer.encode_plain(&text).unwrap(),
            tokenizer.encode_plain_by_tokenizers(&text).unwrap(),
            "round {round}: {text:?}"
        );
    }
}

/// Pieces longer than 15 bytes recur (kanji/kana runs, whitespace and punctuation runs,
/// emoji sequences, long words) and are cached by their bytes after their first merge:
/// texts that repeat them, in any order, encode as `tokenizers` does, the second time from
/// the cache.
#[test]
fn recurring_long_pieces_match_tokenizers() {
    let tokenizer = common::tokenizer();
    let long = [
        "中文字符测试漢字",
        "日本語のテキストです",
        "ソフトウェアエンジニア",
        "                    ",
        "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
        "!!!!!!!!!!!!!!!!!!!!??",
        "👩\u{200d}👩\u{200d}👧\u{200d}👦",
        "Supercalifragilisticexpialidocious",
        "internationalization",
        "————————————",
    ];
    let mut rng = common::Lcg(0x10e6);
    let mut next = || rng.next();
    for round in 0..300 {
        let mut text = String::new();
        for _ in 0..1 + next() % 12 {
            text.push_str(long[next() % long.len()]);
            text.push_str(["x", " ", "。", "1"][next() % 4]);
        }
        let want = tokenizer.encode_plain_by_tokenizers(&text).unwrap();
        for pass in 0..2 {
            assert_eq!(
                tokenizer.encode_plain(&text).unwrap(),
                want,
                "round {round}, pass {pass}: {text:?}"
            );
        }
    }
}

/// Pieces of up to 15 bytes that are several tokens are cached after their first merge,
/// with up to three ids in the entry itself and more elsewhere: words of two, three and
/// more tokens, repeated in any order, encode as `tokenizers` does, the second time from
/// the cache.
#[test]
fn recurring_short_pieces_match_tokenizers() {
    let tokenizer = common::tokenizer();
    let letters: Vec<char> = "qxzjkvwyfgbpmhuAQXZJéß".chars().collect();
    let mut rng = common::Lcg(0x5407);
    let mut next = || rng.next();
    let words: Vec<String> = (0..200)
        .map(|_| {
            let len = 2 + next() % 12;
            let word: String = (0..len).map(|_| letters[next() % letters.len()]).collect();
            [word.clone(), format!(" {word}")][next() % 2].clone()
        })
        .collect();
    let mut sizes = [0usize; 5];
    for word in &words {
        sizes[tokenizer.encode_plain(word).unwrap().len().min(4)] += 1;
    }
    assert!(
        sizes[2..].iter().all(|&count| count > 0),
        "the words should be of 2, 3 and more tokens: {sizes:?}"
    );
    for round in 0..300 {
        let mut text = String::new();
        for _ in 0..1 + next() % 10 {
            text.push_str(&words[next() % words.len()]);
            text.push_str([".", " ", "\n", "1"][next() % 4]);
        }
        let want = tokenizer.encode_plain_by_tokenizers(&text).unwrap();
        for pass in 0..2 {
            assert_eq!(
                tokenizer.encode_plain(&text).unwrap(),
                want,
                "round {round}, pass {pass}: {text:?}"
            );
        }
    }
}

/// A file whose pre-tokenizer is spelled differently (here an equivalent first regex) is
/// not recognised as DeepSeek V4 and runs its regexes directly; the ids do not change.
#[test]
fn other_regex_spellings_run_the_regexes_directly() {
    let mut json: serde_json::Value = serde_json::from_str(common::tokenizer_json()).unwrap();
    json["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "[\\p{N}]{1,3}".into();
    let tokenizer = deepseek_tokenize::Tokenizer::from_str(&json.to_string()).unwrap();
    assert!(tokenizer.uses_direct_pipeline());
    assert!(!tokenizer.uses_deepseek_v4_splitter());
    let text = "Hello 12345 中文 <｜User｜>\n\n  x = [1, 2];\t😀 e\u{301}";
    assert_eq!(
        tokenizer.encode_plain(text).unwrap(),
        tokenizer.encode_plain_by_tokenizers(text).unwrap()
    );
    assert_eq!(
        tokenizer.encode_plain(text).unwrap(),
        common::tokenizer().encode_plain(text).unwrap()
    );
}

/// Texts long enough to be cut (over 64 KiB) at every kind of line start, compared with
/// `tokenizers` encoding the whole text in one go.
#[test]
fn long_texts_cut_at_newlines_match_tokenizers() {
    let tokenizer = common::tokenizer();
    let line_starts = [
        "word",
        " indented",
        "\ttab",
        ".dot",
        "\"quote",
        "'s",
        "123",
        "１２",
        "中文",
        "ひら",
        "\r\n",
        "\n",
        "  \n",
        "<｜User｜>",
        "-dash",
        "#hash",
        "{",
        "}",
        "é",
        "x\u{301}",
        "😀",
        "\u{a0}nbsp",
        "\u{3000}",
    ];
    for (round, repeat) in [(0, 6000), (1, 12000)] {
        let mut text = String::new();
        let mut rng = common::Lcg(99 + round);
        for line in 0..repeat {
            let start = line_starts[rng.next() % line_starts.len()];
            text.push_str(start);
            text.push_str(if line % 3 == 0 {
                " some text, more: 42.\n"
            } else {
                "body\n"
            });
        }
        assert!(
            text.len() > 64 << 10,
            "{} bytes is too short to be cut",
            text.len()
        );
        assert_eq!(
            tokenizer.encode_plain(&text).unwrap(),
            tokenizer.encode_plain_by_tokenizers(&text).unwrap(),
            "round {round}"
        );
    }
}

#[test]
fn edge_cases_match_tokenizers() {
    let tokenizer = common::tokenizer();
    let cases = [
        ("empty", ""),
        ("one space", " "),
        ("trailing spaces", "word   "),
        ("spaces before newline", "a  \n  b"),
        ("crlf runs", "a\r\n\r\n\rb\n"),
        ("lone carriage return", "x\ry"),
        ("digits", "1234567 89 0"),
        ("other-script digits", "٣٤٥٦ ７８９ ²³ ⅫⅣ"),
        ("cjk and kana", "中文字符ひらがなカタカナ한국어"),
        ("cjk beyond the range", "龦龧𠀀𪚥"),
        ("punctuation runs", "...!!!???\n\n;;"),
        ("punct then letters", ".hello,world-foo_bar"),
        ("symbols", "$100 + €200 = ¥300 ™ © ±"),
        ("combining marks", "e\u{301}a\u{308} \u{301}\u{302}x"),
        ("emoji with zwj", "👩‍👩‍👧 👍🏽 🇯🇵"),
        (
            "unicode spaces",
            "a\u{a0}b\u{3000}c\u{2028}d\u{2029}e\u{85}f\u{1680}g\u{202f}h",
        ),
        ("control characters", "\u{0}\u{1}a\u{7f}b\u{1b}[0m\u{feff}"),
        ("zero width", "a\u{200b}b\u{200c}c\u{200d}d\u{2060}e"),
        ("tabs and vertical tab", "\tx\u{b}y\u{c}z"),
        ("code", "fn main() {\n    println!(\"{}\", x[0]);\n}\n"),
        ("json", "{\"a\": [1, 2.5e-3, null], \"b\": {\"c\": \"d\"}}"),
        (
            "private use and unassigned",
            "\u{e000}\u{f8ff}\u{10ffff}\u{378}",
        ),
        ("surrogate-adjacent", "\u{d7ff}\u{e000}\u{fffd}"),
        (
            "typed specials",
            "<｜User｜><｜Assistant｜></think><｜DSML｜invoke name=\"x\">",
        ),
    ];
    for (name, text) in cases {
        assert_eq!(
            tokenizer.encode_plain(text).unwrap(),
            tokenizer.encode_plain_by_tokenizers(text).unwrap(),
            "{name}"
        );
    }
}

const POOL: &[&str] = &[
    "a", "Z", "é", "ß", "Ω", "ж", "ا", "א", "ก", "中", "ひ", "カ", "한", "𠀀", "0", "7", "٣", "７",
    "²", " ", "  ", "\n", "\r", "\t", "\u{a0}", "\u{3000}", ".", ",", "!", "?", "-", "_", "'",
    "\"", "(", ")", "{", "}", "[", "]", "<", ">", "/", "\\", "|", "｜", "▁", "$", "€", "+", "=",
    "^", "`", "~", "😀", "\u{301}", "\u{200d}", "\u{0}", "\u{7f}", "\u{85}", "\u{2028}",
    "\u{feff}", "think", "User", "DSML", "<｜", "｜>", "</", "the", " the", "\n\n", " \n",
];

#[test]
fn generated_texts_match_tokenizers() {
    let tokenizer = common::tokenizer();
    let mut rng = common::Lcg(0x5eed);
    let mut next = || rng.next();
    for round in 0..3000 {
        let len = next() % 40;
        let text: String = (0..len).map(|_| POOL[next() % POOL.len()]).collect();
        assert_eq!(
            tokenizer.encode_plain(&text).unwrap(),
            tokenizer.encode_plain_by_tokenizers(&text).unwrap(),
            "round {round}: {text:?}"
        );
    }
}

/// The full-vocabulary encode with added tokens found by hand (`added_split.rs`) against
/// `tokenizers` itself: control tokens, normalized added tokens, overlaps and near misses.
#[test]
fn full_encode_finds_added_tokens_like_tokenizers() {
    let tokenizer = common::tokenizer();
    let cases = [
        ("empty", ""),
        ("plain", "Hello world, 123 中文 😀\n\n  x"),
        (
            "control",
            "<｜User｜>hi<｜Assistant｜></think>ok<｜end▁of▁sentence｜>",
        ),
        (
            "normalized",
            "a<｜fim▁hole｜>b<｜tool▁calls▁begin｜>c<|EOT|>",
        ),
        ("adjacent", "<｜User｜><｜User｜><｜User｜>"),
        (
            "near misses",
            "<｜User｜ <｜User> <|User|> ｜DSML｜ <dsml: <｜User｜",
        ),
        ("inside words", "x<｜Assistant｜>y</think>z<think>"),
        (
            "prefix of another",
            "<｜tool▁call▁begin｜><｜tool▁calls▁begin｜><｜tool▁",
        ),
    ];
    for (name, text) in cases {
        assert_eq!(
            tokenizer.encode(text).unwrap(),
            tokenizer.encode_by_tokenizers(text).unwrap(),
            "{name}: {text:?}"
        );
    }
    // Every added spelling, alone and glued to text on both sides.
    let spellings: Vec<(String, u32)> = tokenizer
        .added_tokens()
        .map(|(spelling, id)| (spelling.to_owned(), id))
        .collect();
    let glued: String = spellings
        .iter()
        .map(|(spelling, _)| format!("a{spelling}b "))
        .collect();
    assert_eq!(
        tokenizer.encode(&glued).unwrap(),
        tokenizer.encode_by_tokenizers(&glued).unwrap()
    );
    for (spelling, id) in spellings.iter().take(64) {
        assert_eq!(tokenizer.encode(spelling).unwrap(), [*id], "{spelling}");
    }
}
