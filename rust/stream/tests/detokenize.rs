//! The incremental detokenizer: text is released once its decoding no
//! longer ends in U+FFFD, as the reference does (observed with the V4 tokenizer: 🦀 = ids
//! 3574, 102, 225; single-byte tokens 0x80, 0xF0, 0xE4).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deepseek_stream::Detokenizer;

/// (name, token byte strings, expected text per push, expected pending bytes per push)
type Row = (&'static str, Vec<Vec<u8>>, Vec<&'static str>, Vec<usize>);

#[test]
fn detokenizer_table() {
    let crab = "🦀".as_bytes().to_vec(); // F0 9F A6 80
    let table: Vec<Row> = vec![
        (
            "ascii passes through",
            vec![b"ab".to_vec(), b"c".to_vec()],
            vec!["ab", "c"],
            vec![0, 0],
        ),
        (
            "emoji split across 3 tokens",
            vec![crab[..2].to_vec(), crab[2..3].to_vec(), crab[3..].to_vec()],
            vec!["", "", "🦀"],
            vec![2, 3, 0],
        ),
        (
            "emoji then text in one token",
            vec![[&crab[..], b" crab"].concat()],
            vec!["🦀 crab"],
            vec![0],
        ),
        (
            "lone continuation byte waits for the next character",
            vec![vec![0x80], b"a".to_vec()],
            vec!["", "\u{FFFD}a"],
            vec![1, 0],
        ),
        (
            "incomplete 3-byte sequence then ASCII is one replacement",
            vec![vec![0xE4], vec![0x80], b"a".to_vec()],
            vec!["", "", "\u{FFFD}a"],
            vec![1, 2, 0],
        ),
        (
            "text before an invalid tail is held with it",
            vec![vec![b'a', 0xF0, 0x80], vec![0xF0], b"a".to_vec()],
            vec!["", "", "a\u{FFFD}\u{FFFD}\u{FFFD}a"],
            vec![3, 4, 0],
        ),
        (
            "empty token (unknown id) changes nothing",
            vec![b"x".to_vec(), vec![], b"y".to_vec()],
            vec!["x", "", "y"],
            vec![0, 0, 0],
        ),
        (
            "a literal replacement character waits too",
            vec!["\u{FFFD}".as_bytes().to_vec(), b"z".to_vec()],
            vec!["", "\u{FFFD}z"],
            vec![3, 0],
        ),
        (
            "special-token spelling is ordinary text",
            vec!["<｜end▁of▁sentence｜>".as_bytes().to_vec()],
            vec!["<｜end▁of▁sentence｜>"],
            vec![0],
        ),
    ];
    for (name, tokens, texts, pending) in table {
        let mut detok = Detokenizer::new();
        for (i, token) in tokens.iter().enumerate() {
            assert_eq!(detok.push(token), texts[i], "{name}: text after token {i}");
            assert_eq!(
                detok.pending(),
                pending[i],
                "{name}: pending after token {i}"
            );
        }
    }
}

#[test]
fn pending_tokens_counts_the_tokens_behind_held_bytes() {
    let crab = "🦀".as_bytes();
    let mut detok = Detokenizer::new();
    assert_eq!(detok.push(&crab[..1]), "");
    assert_eq!(detok.push(&crab[1..3]), "");
    assert_eq!(detok.pending_tokens(), 2);
    assert_eq!(detok.push(&crab[3..]), "🦀");
    assert_eq!(detok.pending_tokens(), 0);
}

#[test]
fn splitting_never_changes_valid_text() {
    let text = "héllo 中文 🦀 </think> ｜DSML｜ done";
    let bytes = text.as_bytes();
    for size in 1..=5 {
        let mut detok = Detokenizer::new();
        let out: String = bytes.chunks(size).map(|c| detok.push(c)).collect();
        assert_eq!(out, text, "chunks of {size} bytes");
        assert_eq!(detok.pending(), 0);
    }
}

#[test]
fn chunks_are_decoded_as_a_whole() {
    use deepseek_model::SpecialToken;
    use deepseek_stream::{DecodedPiece as P, Token as T};
    let crab = "🦀".as_bytes();
    let mut detok = Detokenizer::new();
    // Text before an incomplete character in the same chunk waits with it.
    assert_eq!(
        detok.push_chunk(&[T::Bytes("思考".as_bytes()), T::Bytes(&crab[..2])]),
        vec![]
    );
    assert_eq!(detok.pending_tokens(), 2);
    assert_eq!(
        detok.push_chunk(&[
            T::Bytes(&crab[2..]),
            T::Special(SpecialToken::ThinkingEnd),
            T::Bytes(b"ok")
        ]),
        vec![
            P::Text("思考🦀".into()),
            P::Special(SpecialToken::ThinkingEnd),
            P::Text("ok".into())
        ]
    );
    // A special token makes an incomplete tail final (one U+FFFD), as the decoded text shows.
    assert_eq!(
        detok.push_chunk(&[T::Bytes(&crab[..2]), T::Special(SpecialToken::Eos)]),
        vec![P::Text("\u{FFFD}".into()), P::Special(SpecialToken::Eos)]
    );
    assert_eq!(
        detok.push_chunk(&[T::Added("<｜x｜>")]),
        vec![P::Added("<｜x｜>".into())]
    );
    assert_eq!(detok.pending(), 0);
}

/// An added token settles everything before it in the chunk (recorded from the wheel: ids
/// `hello </think> 🦀[0]` give reasoning `hello` in that push, and count 2 tokens if the
/// stream ends there); only the ordinary run after the chunk's last added token can wait.
/// Each piece carries the number of tokens that made it.
#[test]
fn an_added_token_settles_the_text_before_it() {
    use deepseek_model::SpecialToken::{Eos, ThinkingEnd};
    use deepseek_stream::{DecodedPiece as P, Token as T};
    let crab = "🦀".as_bytes();
    // (name, chunks, released per chunk with token counts, pending tokens after each chunk)
    type Row<'a> = (
        &'static str,
        Vec<Vec<T<'a>>>,
        Vec<Vec<(P, usize)>>,
        Vec<usize>,
    );
    let table: Vec<Row<'_>> = vec![
        (
            "text and </think> come out; the incomplete character after them waits",
            vec![
                vec![T::Bytes(b"hello"), T::Special(ThinkingEnd), T::Bytes(&crab[..2])],
                vec![T::Bytes(&crab[2..3]), T::Bytes(&crab[3..])],
            ],
            vec![
                vec![(P::Text("hello".into()), 1), (P::Special(ThinkingEnd), 1)],
                vec![(P::Text("🦀".into()), 3)],
            ],
            vec![1, 0],
        ),
        (
            "held tokens of an earlier chunk go with the text that completes them",
            vec![
                vec![T::Bytes(&crab[..2])],
                vec![T::Bytes(&crab[2..]), T::Bytes(b"a"), T::Special(Eos), T::Bytes(b"b")],
            ],
            vec![
                vec![],
                vec![
                    (P::Text("🦀a".into()), 3),
                    (P::Special(Eos), 1),
                    (P::Text("b".into()), 1),
                ],
            ],
            vec![1, 0],
        ),
        (
            "unknown ids belong to the run they are in",
            vec![vec![T::Bytes(b"a"), T::Unknown, T::Special(Eos), T::Unknown]],
            vec![vec![(P::Text("a".into()), 2), (P::Special(Eos), 1)]],
            vec![1],
        ),
        (
            "a run that decoded to nothing waits for the next text, or goes with the next added token",
            vec![
                vec![T::Unknown],
                vec![T::Bytes(b"x")],
                vec![T::Unknown, T::Added("<｜x｜>")],
            ],
            vec![
                vec![],
                vec![(P::Text("x".into()), 2)],
                vec![(P::Added("<｜x｜>".into()), 2)],
            ],
            vec![1, 0, 0],
        ),
    ];
    for (name, chunks, released, pending) in table {
        let mut detok = Detokenizer::new();
        for (i, chunk) in chunks.iter().enumerate() {
            assert_eq!(
                detok.push_chunk_counted(chunk),
                released[i],
                "{name}: chunk {i}"
            );
            assert_eq!(
                detok.pending_tokens(),
                pending[i],
                "{name}: pending after chunk {i}"
            );
        }
    }
}
