//! Errors users see (tokenizer loading and encoding), exact to the reference's wording, and bad
//! special ranges, which must give an error and never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Lists of one special range are what these tests mean, not `Vec`s of offsets.
#![allow(clippy::single_range_in_vec_init)]

mod common;

use std::path::Path;

use deepseek_tokenize::{TokenizeErrorKind, Tokenizer};

#[test]
fn loading_errors_carry_the_parser_message() {
    let cases = [
        ("not json", "not json", "expected ident at line 1 column 2"),
        ("empty object", "{}", "Model missing. at line 1 column 2"),
        (
            "array",
            "[]",
            "invalid type: sequence, expected struct Tokenizer at line 1 column 2",
        ),
        (
            "empty text",
            "",
            "EOF while parsing a value at line 1 column 0",
        ),
    ];
    for (name, json, message) in cases {
        let error = Tokenizer::from_str(json).unwrap_err();
        assert_eq!(error.message, message, "{name}");
        assert_eq!(error.kind, TokenizeErrorKind::Load, "{name}");
    }
}

#[test]
fn missing_file_is_the_os_error() {
    let error = Tokenizer::from_file(Path::new("/nonexistent/dir/tokenizer.json")).unwrap_err();
    assert_eq!(error.message, "No such file or directory (os error 2)");
    assert_eq!(error.kind, TokenizeErrorKind::Load);
}

#[test]
fn from_str_and_from_file_load_the_same_tokenizer() {
    let from_str = Tokenizer::from_str(common::tokenizer_json()).unwrap();
    let text = "Hello <｜User｜> 世界 12345";
    assert_eq!(
        from_str.encode(text).unwrap(),
        common::tokenizer().encode(text).unwrap()
    );
}

#[test]
fn special_spelling_missing_from_the_added_vocabulary() {
    let tokenizer = common::tokenizer();
    // (name, prompt, the special spelling it ends with, how the error quotes it: as Rust's
    // `Debug` does, control and invisible characters escaped, as in the reference)
    let cases = [
        (
            "v4.1 system token",
            "<｜System｜>",
            "<｜System｜>",
            "\"<｜System｜>\"",
        ),
        (
            "custom thinking end",
            "a</reasoning>",
            "</reasoning>",
            "\"</reasoning>\"",
        ),
        ("plain word", "hello", "hello", "\"hello\""),
        (
            "control characters are escaped",
            "<\u{1}x\ty\n\r\0>",
            "<\u{1}x\ty\n\r\0>",
            r#""<\u{1}x\ty\n\r\0>""#,
        ),
        (
            "quotes and backslashes are escaped",
            "<\"\\'>",
            "<\"\\'>",
            r#""<\"\\'>""#,
        ),
        (
            "invisible characters are escaped",
            "<\u{200b}\u{ad}\u{2028}\u{7f}>",
            "<\u{200b}\u{ad}\u{2028}\u{7f}>",
            r#""<\u{200b}\u{ad}\u{2028}\u{7f}>""#,
        ),
    ];
    for (name, prompt, spelling, quoted) in cases {
        let start = prompt.len() - spelling.len();
        let error = tokenizer
            .encode_prompt(prompt, &[start..prompt.len()])
            .unwrap_err();
        assert_eq!(
            error.message,
            format!("failed to encode conversation: special token {quoted} is not in the added vocabulary"),
            "{name}"
        );
        assert_eq!(error.kind, TokenizeErrorKind::MissingSpecialToken, "{name}");
    }
}

#[test]
fn the_first_missing_spelling_is_reported() {
    let tokenizer = common::tokenizer();
    let user = "<｜User｜>".len();
    let prompt = "<｜User｜><A><B>";
    let error = tokenizer
        .encode_prompt(prompt, &[0..user, user..user + 3, user + 3..user + 6])
        .unwrap_err();
    assert!(error.message.contains("\"<A>\""), "{}", error.message);
}

#[test]
fn bad_ranges_are_errors_not_panics() {
    let tokenizer = common::tokenizer();
    let user = "<｜User｜>".len();
    let prompt = "<｜User｜>中x";
    #[allow(clippy::reversed_empty_ranges)] // a reversed range is the point of one case
    let cases: [(&str, Vec<std::ops::Range<usize>>); 5] = [
        ("beyond the end", vec![0..100]),
        ("end before start", vec![5..2]),
        ("overlapping", vec![0..user, 5..user]),
        ("descending", vec![user..user + 3, 0..user]),
        ("inside a character", vec![0..user + 1]),
    ];
    for (name, ranges) in cases {
        let error = tokenizer.encode_prompt(prompt, &ranges).unwrap_err();
        assert_eq!(error.kind, TokenizeErrorKind::InvalidRange, "{name}");
        let sequential = tokenizer
            .encode_prompt_sequential(prompt, &ranges)
            .unwrap_err();
        assert_eq!(sequential, error, "{name}");
    }
}

#[test]
fn vocabulary_lookups() {
    let tokenizer = common::tokenizer();
    let added = [
        ("<｜begin▁of▁sentence｜>", Some(0)),
        ("<｜User｜>", Some(128803)),
        ("｜DSML｜", Some(128825)),
        ("<｜image｜>", Some(129279)),
        ("<｜System｜>", None),
        ("hello", None),
        ("", None),
    ];
    for (spelling, id) in added {
        assert_eq!(tokenizer.added_token_id(spelling), id, "{spelling:?}");
    }
    assert_eq!(tokenizer.token_to_id("hello"), Some(33310));
    assert_eq!(tokenizer.id_to_token(33310).as_deref(), Some("hello"));
    assert_eq!(tokenizer.token_to_id("<｜User｜>"), Some(128803));
    assert_eq!(tokenizer.id_to_token(128803).as_deref(), Some("<｜User｜>"));
    assert!(
        tokenizer.is_added_id(0) && tokenizer.is_added_id(128803) && tokenizer.is_added_id(129279)
    );
    assert!(!tokenizer.is_added_id(33310) && !tokenizer.is_added_id(u32::MAX));
    assert!(tokenizer.is_special_id(0));
    assert!(
        !tokenizer.is_special_id(128803),
        "<｜User｜> is a non-special added token"
    );
    assert!(!tokenizer.is_special_id(33310));
    assert_eq!(tokenizer.vocab_size(), 129280);
}

/// Joining the raw bytes of each id gives back the text, even where a character spans ids.
#[test]
fn token_bytes_round_trip() {
    let tokenizer = common::tokenizer();
    let texts = [
        "hello world",
        "中文字符 and ひらがな",
        "emoji 😀🎉 mixed\n\ttabs",
        "<｜User｜> typed",
        "Ünïcödé 123456",
    ];
    for text in texts {
        let ids = tokenizer.encode(text).unwrap();
        let bytes: Vec<u8> = ids
            .iter()
            .flat_map(|&id| tokenizer.token_bytes(id).unwrap().to_vec())
            .collect();
        assert_eq!(String::from_utf8(bytes).unwrap(), text);
        assert_eq!(tokenizer.decode(&ids, false).unwrap(), text);
    }
    assert_eq!(tokenizer.token_bytes(u32::MAX), None);
}

#[test]
fn tokenizer_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Tokenizer>();
}
