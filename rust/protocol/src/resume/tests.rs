//! Resuming must equal a cold parse: a named table of edits, then many random bodies and
//! edits. (`tests/test_resume_property.py` runs the same property through the gateway's
//! cache with hypothesis.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::{ChatCompletionRequest, MessagesRequest};

/// The cold parse of `body` under nesting `limit`, as text to compare.
fn cold<W: Wire + std::fmt::Debug>(body: &[u8], limit: usize) -> Option<String> {
    if nesting_exceeds(body, limit) {
        return None;
    }
    let value = intake::parse_json(body).ok()?;
    intake::from_value::<W>(value)
        .ok()
        .map(|w| format!("{w:?}"))
}

/// Check resuming `next` after `earlier` against cold parses; how many messages were reused.
fn check<W: Wire + std::fmt::Debug>(earlier: &str, next: &str, limit: usize) -> Option<usize> {
    let (earlier, next) = (earlier.as_bytes(), next.as_bytes());
    let first: W = intake::from_value(intake::parse_json(earlier).unwrap()).unwrap();
    let kept = keep(&first, earlier)?;
    let resumed = resume::<W>(next, earlier, &kept, limit);
    let want = cold::<W>(next, limit);
    match resumed {
        Some((request, kept)) => {
            assert_eq!(
                Some(format!("{request:?}")),
                want,
                "{}",
                String::from_utf8_lossy(next)
            );
            // What it keeps is what a cold parse of the body would keep.
            let again = keep(&request, next).unwrap();
            assert_eq!(kept.layout, again.layout);
            assert_eq!(kept.messages(), request.messages().len());
            Some(kept.reused_messages())
        }
        None => None,
    }
}

const BASE: &str = r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"model":"m","stream":true}"#;

#[test]
fn named_edits() {
    type Chat = chat::wire::ChatCompletionRequest;
    let cases: &[(&str, &str, Option<usize>)] = &[
        (
            "one message more",
            r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"more"}],"model":"m","stream":true}"#,
            Some(2),
        ),
        ("the same body", BASE, Some(2)),
        (
            "the last message changed",
            r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hj"}],"model":"m","stream":true}"#,
            Some(1),
        ),
        (
            "the first message changed",
            r#"{"messages":[{"role":"system","content":"t"},{"role":"user","content":"hi"}],"model":"m","stream":true}"#,
            None,
        ),
        (
            "other fields after the messages",
            r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"model":"n","temperature":0.5}"#,
            Some(2),
        ),
        (
            "messages repeated after",
            r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"messages":[{"role":"user","content":"x"}],"model":"m"}"#,
            None,
        ),
        (
            "an escaped key after",
            r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"mod\u0065l":"m"}"#,
            None,
        ),
        (
            "a broken new message",
            r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"user","content":}],"model":"m"}"#,
            None,
        ),
        (
            "a new message of the wrong shape",
            r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"robot","content":"x"}],"model":"m"}"#,
            None,
        ),
        (
            "text after the object",
            r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"model":"m"} x"#,
            None,
        ),
        (
            "an unclosed array",
            r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}"#,
            None,
        ),
        (
            "a missing comma",
            r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"} {"role":"user","content":"x"}],"model":"m"}"#,
            None,
        ),
        (
            "whitespace everywhere",
            "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"hi\"} ,\n\t{\"role\":\"user\",\"content\":\"x\"} \r\n] , \"model\" : \"m\" }\n",
            Some(2),
        ),
    ];
    // The first message made long, as an agent's instructions are: a body reusing less than
    // half of itself is parsed cold.
    let long = |body: &str| {
        body.replace(
            r#""content":"s""#,
            &format!(r#""content":"{}""#, "s".repeat(400)),
        )
    };
    for (name, next, want) in cases {
        assert_eq!(
            check::<Chat>(&long(BASE), &long(next), PARSER_DEPTH),
            *want,
            "{name}"
        );
    }
    let grown = BASE.replace(
        "}],",
        &format!(r#"}},{{"role":"user","content":"{}"}}],"#, "x".repeat(200)),
    );
    assert_eq!(
        check::<Chat>(BASE, &grown, PARSER_DEPTH),
        None,
        "less than half reused"
    );
}

#[test]
fn a_new_message_too_deep_in_the_body_is_left_to_the_cold_parse() {
    type Anthropic = messages::wire::MessagesRequest;
    let hi = "hi ".repeat(200);
    let earlier = format!(
        r#"{{"model":"m","max_tokens":5,"messages":[{{"role":"user","content":"{hi}"}},{{"role":"assistant","content":"yo"}}]}}"#
    );
    // A tool call whose input holds arrays nested `extra` deep: the body nests `6 + extra`
    // deep (object, messages, message, content, block, input).
    let with = |extra: usize| {
        let deep = format!("{}{}", "[".repeat(extra), "]".repeat(extra));
        format!(
            r#"{{"model":"m","max_tokens":5,"messages":[{{"role":"user","content":"{hi}"}},{{"role":"assistant","content":"yo"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"t","name":"f","input":{{"a":{deep}}}}}]}}]}}"#
        )
    };
    for limit in [8, 40, PARSER_DEPTH] {
        let at_limit = limit - 6;
        assert_eq!(
            check::<Anthropic>(&earlier, &with(at_limit), limit),
            Some(2),
            "{limit}"
        );
        assert_eq!(
            check::<Anthropic>(&earlier, &with(at_limit + 1), limit),
            None,
            "{limit}"
        );
    }
    // serde_json's own limit is what PARSER_DEPTH says.
    let nested = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
    assert!(intake::parse_json(nested(PARSER_DEPTH).as_bytes()).is_ok());
    assert!(intake::parse_json(nested(PARSER_DEPTH + 1).as_bytes()).is_err());
}

#[test]
fn the_lead_covers_the_fields_before_messages_and_two_messages() {
    let body = r#"{"model":"m", "messages" : [ {"a":1} , "b" ,3],"x":[]}"#;
    let lead = conversation_lead(body.as_bytes()).unwrap();
    assert_eq!(
        &body[..lead],
        r#"{"model":"m", "messages" : [ {"a":1} , "b""#
    );
    assert_eq!(conversation_lead(br#"{"messages":[1]}"#), None);
    assert_eq!(conversation_lead(br#"[1,2]"#), None);
    assert_eq!(conversation_lead(br#"{"mess\u0061ges":[1,2]}"#), None);
}

#[test]
fn protocols_do_not_resume_each_others_bodies() {
    let body = BASE.as_bytes();
    let chat = ChatCompletionRequest::from_value(intake::parse_json(body).unwrap()).unwrap();
    let kept = chat.keep(body).unwrap();
    assert!(MessagesRequest::resume(body, body, &kept, PARSER_DEPTH).is_none());
    assert!(ChatCompletionRequest::resume(body, body, &kept, PARSER_DEPTH).is_some());
}

/// A small random generator (xorshift), so the property below runs without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// Random JSON-ish texts for messages and fields: mostly valid, sometimes not.
fn message(rng: &mut Rng, anthropic: bool) -> String {
    let text = rng.pick(&[
        "hi",
        "a \\\"quoted\\\" [text] {x}",
        "\\u00e9\\n",
        "<｜User｜>",
        "",
        "\\\\",
        "é ü 字",
    ]);
    let role = rng.pick(&[
        "user",
        "assistant",
        "user",
        "assistant",
        "system",
        "tool",
        "robot",
    ]);
    let sep = rng.pick(&["", " ", "\n", "\t"]);
    match rng.below(12) {
        0 => format!(
            "{{\"role\":\"{role}\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}"
        ),
        1 => format!("{{\"role\":\"{role}\"{sep},\"content\":\"{text}\",\"tool_call_id\":\"c\"}}"),
        2 => "{\"role\":\"user\",\"content\":".to_owned(),
        3 if anthropic => format!("{{\"content\":\"{text}\",\"role\":\"{role}\"}}"),
        4 => format!("{{\"role\":\"{role}\",\"content\":\"{text}\",\"x\":[[[{{}}]]],\"x\":1}}"),
        _ => format!("{{{sep}\"role\":\"{role}\",{sep}\"content\":\"{text}\"{sep}}}"),
    }
}

fn field(rng: &mut Rng) -> String {
    rng.pick(&[
        r#""model":"m""#,
        r#""model":"n""#,
        r#""stream":true"#,
        r#""max_tokens":10"#,
        r#""model":"m""#,
        r#""stream":false"#,
        r#""temperature":1e400"#,
        r#""messages":[]"#,
        r#""mod\u0065l":"m""#,
        r#""tools":[{"type":"function","function":{"name":"f","parameters":{}}}]"#,
        r#""system":"s""#,
        r#""n":null"#,
        r#""model":"#,
    ])
    .to_owned()
}

fn body(rng: &mut Rng, head: &[String], messages: &[String], tail: &[String]) -> String {
    let sep = rng.pick(&[",", " , ", ",\n"]);
    let mut fields: Vec<String> = head.to_vec();
    fields.push(format!("\"messages\":[{}]", messages.join(sep)));
    fields.extend_from_slice(tail);
    format!("{{{}}}", fields.join(","))
}

fn property<W: Wire + std::fmt::Debug>(anthropic: bool, seed: u64) -> (usize, usize) {
    let mut rng = Rng(seed);
    let (mut resumed, mut total) = (0, 0);
    for _ in 0..5000 {
        let head: Vec<String> = (0..rng.below(2)).map(|_| field(&mut rng)).collect();
        let tail: Vec<String> = (0..rng.below(3)).map(|_| field(&mut rng)).collect();
        // An agent's long opening, so that most edits keep over half of the body.
        let opening = format!(r#"{{"role":"user","content":"{}"}}"#, "go ".repeat(300));
        let mut messages = vec![opening];
        messages.extend((0..1 + rng.below(4)).map(|_| message(&mut rng, anthropic)));
        let earlier = body(&mut rng, &head, &messages, &tail);
        let valid = cold::<W>(earlier.as_bytes(), PARSER_DEPTH).is_some();
        if !valid {
            continue;
        }
        // One edit: append, change one message, drop the last, change the fields around.
        let mut next_messages = messages.clone();
        let (mut next_head, mut next_tail) = (head.clone(), tail.clone());
        match rng.below(5) {
            0 | 1 => {
                next_messages.extend((0..1 + rng.below(3)).map(|_| message(&mut rng, anthropic)))
            }
            2 => {
                let at = 1 + rng.below(next_messages.len() - 1);
                next_messages[at] = message(&mut rng, anthropic);
            }
            3 => {
                next_messages.pop();
            }
            _ => {
                next_tail = (0..rng.below(3)).map(|_| field(&mut rng)).collect();
                if rng.below(3) == 0 {
                    next_head = (0..rng.below(2)).map(|_| field(&mut rng)).collect();
                }
            }
        }
        let next = body(&mut rng, &next_head, &next_messages, &next_tail);
        let resumes = check::<W>(&earlier, &next, PARSER_DEPTH).is_some();
        if cold::<W>(next.as_bytes(), PARSER_DEPTH).is_some() {
            total += 1;
            resumed += usize::from(resumes);
        }
    }
    (resumed, total)
}

#[test]
fn resuming_equals_a_cold_parse_for_random_bodies_and_edits() {
    for seed in [0x9E37_79B9_7F4A_7C15, 0x2545_F491_4F6C_DD1D, 7] {
        let (resumed, total) = property::<chat::wire::ChatCompletionRequest>(false, seed);
        // Not resumed: an edit of the first message, an escaped or repeated key (the fields
        // drawn hold one often).
        assert!(
            total > 200 && resumed * 3 > total,
            "chat: {resumed} of {total} resumed"
        );
        let (resumed, total) = property::<messages::wire::MessagesRequest>(true, seed);
        assert!(
            total > 200 && resumed * 3 > total,
            "messages: {resumed} of {total} resumed"
        );
    }
}

/// Chat bodies of one conversation: a system message, then `turns` user/assistant pairs (the
/// assistants without reasoning, which the history rule fills), then a user message; and
/// `extra` fields.
fn chat_turn(turns: usize, model: &str, extra: &str) -> String {
    let mut messages = vec![r#"{"role":"system","content":"Be brief."}"#.to_owned()];
    for turn in 0..turns {
        messages.push(format!(r#"{{"role":"user","content":"question {turn}"}}"#));
        messages.push(format!(
            r#"{{"role":"assistant","content":"answer {turn}"}}"#
        ));
    }
    messages.push(r#"{"role":"user","content":"and now?"}"#.to_owned());
    format!(
        r#"{{"messages":[{}],"model":"{model}"{extra}}}"#,
        messages.join(",")
    )
}

/// A protocol's request as the resuming tests drive it.
trait Request: Sized {
    fn cold(body: &[u8]) -> Self;
    fn keep_body(&self, body: &[u8]) -> Kept;
    fn resume_body(body: &[u8], earlier: &[u8], kept: &Kept) -> (Self, Kept);
    fn convert_with(
        self,
        options: &deepseek_model::ConversionOptions,
    ) -> Result<deepseek_model::ConversationRequest, String>;
}

macro_rules! request {
    ($request:ty) => {
        impl Request for $request {
            fn cold(body: &[u8]) -> Self {
                <$request>::from_value(intake::parse_json(body).unwrap()).unwrap()
            }
            fn keep_body(&self, body: &[u8]) -> Kept {
                self.keep(body).unwrap()
            }
            fn resume_body(body: &[u8], earlier: &[u8], kept: &Kept) -> (Self, Kept) {
                <$request>::resume(body, earlier, kept, 127).unwrap()
            }
            fn convert_with(
                self,
                options: &deepseek_model::ConversionOptions,
            ) -> Result<deepseek_model::ConversationRequest, String> {
                self.convert(options).map_err(|e| e.message)
            }
        }
    };
}
request!(ChatCompletionRequest);
request!(MessagesRequest);

/// Bodies sent one after the other as one conversation's turns, each resuming the one before;
/// every conversion (or error) must equal a cold one.
struct Turns<R> {
    kept: Option<(String, Kept)>,
    options: deepseek_model::ConversionOptions,
    request: std::marker::PhantomData<R>,
}

impl<R: Request> Turns<R> {
    fn new() -> Self {
        Self {
            kept: None,
            options: deepseek_model::ConversionOptions::default(),
            request: std::marker::PhantomData,
        }
    }

    fn next(&mut self, body: String) -> Result<deepseek_model::ConversationRequest, String> {
        let request = match &self.kept {
            Some((earlier, kept)) => {
                let (request, kept) = R::resume_body(body.as_bytes(), earlier.as_bytes(), kept);
                self.kept = Some((body.clone(), kept));
                request
            }
            None => {
                let request = R::cold(body.as_bytes());
                self.kept = Some((body.clone(), request.keep_body(body.as_bytes())));
                request
            }
        };
        let converted = request.convert_with(&self.options);
        assert_eq!(
            converted,
            R::cold(body.as_bytes()).convert_with(&self.options)
        );
        converted
    }
}

/// How many leading messages two conversions share (the same values, not equal copies).
fn shared(
    a: &deepseek_model::ConversationRequest,
    b: &deepseek_model::ConversationRequest,
) -> usize {
    a.conversation
        .messages
        .iter()
        .zip(&b.conversation.messages)
        .take_while(|(a, b)| Arc::ptr_eq(a, b))
        .count()
}

#[test]
fn a_resumed_chat_turn_holds_the_messages_the_earlier_turn_converted() {
    let mut turns = Turns::<ChatCompletionRequest>::new();
    let mut next = |body: String| turns.next(body).unwrap();
    let first = next(chat_turn(40, "DeepSeek-V4-Pro", ""));
    let second = next(chat_turn(41, "DeepSeek-V4-Pro", ""));
    let third = next(chat_turn(42, "DeepSeek-V4-Pro", ""));
    // A kept message's first conversion is remembered (its filled reasoning included), and
    // every later turn holds it: all but the earlier body's last message (the question the
    // next body changes at that place) are the earlier turn's own.
    assert_eq!(
        shared(&first, &second),
        first.conversation.messages.len() - 1
    );
    assert_eq!(
        shared(&second, &third),
        second.conversation.messages.len() - 1
    );
    // Another model: nothing is taken from conversions made for the earlier one, and the
    // conversions made for it are taken from then on.
    let other = next(chat_turn(43, "DeepSeek-V4.1-Flash", ""));
    assert_eq!(shared(&third, &other), 0);
    let after = next(chat_turn(44, "DeepSeek-V4.1-Flash", ""));
    assert_eq!(
        shared(&other, &after),
        other.conversation.messages.len() - 1
    );
    // Thinking off: the reasoning the history rule filled is not taken either.
    let plain = next(chat_turn(
        45,
        "DeepSeek-V4.1-Flash",
        r#","thinking":{"type":"disabled"}"#,
    ));
    assert_eq!(shared(&after, &plain), 0);
}

/// Messages bodies of one conversation: `turns` rounds of a question, an assistant that thinks
/// and calls a tool, and the tool's result; then `tail` (more messages, JSON).
fn messages_turn(turns: usize, tail: &str) -> String {
    let mut messages = Vec::new();
    for turn in 0..turns {
        messages.push(format!(r#"{{"role":"user","content":"question {turn}"}}"#));
        messages.push(format!(
            r#"{{"role":"assistant","content":[{{"type":"thinking","thinking":"hm {turn}","signature":"s"}},{{"type":"text","text":"let me look"}},{{"type":"tool_use","id":"toolu_{turn}","name":"read","input":{{"path":"f{turn}"}}}}]}}"#
        ));
        messages.push(format!(
            r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_{turn}","content":"line {turn}"}},{{"type":"text","text":"go on"}}]}}"#
        ));
    }
    let tail = if tail.is_empty() {
        String::new()
    } else {
        format!(",{tail}")
    };
    format!(
        r#"{{"model":"DeepSeek-V4-Pro","max_tokens":100,"system":"Be brief.","tools":[{{"name":"read","input_schema":{{"type":"object"}}}}],"messages":[{}{tail}]}}"#,
        messages.join(",")
    )
}

#[test]
fn a_resumed_messages_turn_holds_the_messages_the_earlier_turn_converted() {
    let mut turns = Turns::<MessagesRequest>::new();
    let first = turns.next(messages_turn(30, "")).unwrap();
    let second = turns.next(messages_turn(31, "")).unwrap();
    let third = turns.next(messages_turn(32, "")).unwrap();
    // The top-level system is converted anew every time (it is not a message of the list);
    // after it, everything the earlier turn converted is shared (each round is three messages
    // here and four converted: question, assistant, tool result, text).
    assert_eq!(shared(&first, &second), 0);
    let skip = |a: &deepseek_model::ConversationRequest,
                b: &deepseek_model::ConversationRequest| {
        a.conversation.messages[1..]
            .iter()
            .zip(&b.conversation.messages[1..])
            .take_while(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    };
    assert_eq!(skip(&first, &second), first.conversation.messages.len() - 1);
    assert_eq!(
        skip(&second, &third),
        second.conversation.messages.len() - 1
    );
    // A turn that ends with the assistant's call unanswered: the error a cold parse gives
    // (the pairing is checked again over the shared messages, whose conversion is reused).
    let call = r#"{"role":"user","content":"question 32"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_x","name":"read","input":{}}]}"#;
    let error = turns.next(messages_turn(32, call)).unwrap_err();
    assert!(error.contains("toolu_x"), "{error}");
    // And a result that answers no call, after shared messages.
    let orphan = r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_y","content":"?"}]}"#;
    let error = turns.next(messages_turn(32, orphan)).unwrap_err();
    assert!(error.contains("toolu_y"), "{error}");
    // A shared call left last (its result dropped): the reused conversion is paired again as
    // the last message.
    let whole = messages_turn(33, "");
    turns.next(whole.clone()).unwrap();
    let cut = whole
        .rfind(r#",{"role":"user","content":[{"type":"tool_result""#)
        .unwrap();
    let error = turns.next(format!("{}]}}", &whole[..cut])).unwrap_err();
    assert!(error.contains("toolu_32"), "{error}");
}

#[test]
fn a_messages_turn_converts_again_what_names_the_tools() {
    // A tool result that references a tool needs the tool declared: when the tools change
    // after the messages, the shared message is converted (and checked) again.
    let body = |rounds: usize, tools: &str| {
        let mut messages = vec![
            r#"{"role":"user","content":"find a tool"}"#.to_owned(),
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"toolu_s","name":"search","input":{}}]}"#.to_owned(),
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s","content":[{"type":"tool_reference","tool_name":"read"}]}]}"#.to_owned(),
        ];
        for round in 0..rounds {
            messages.push(format!(
                r#"{{"role":"assistant","content":"step {round}"}}"#
            ));
            messages.push(format!(r#"{{"role":"user","content":"more {round}"}}"#));
        }
        format!(
            r#"{{"model":"DeepSeek-V4.1-Flash","max_tokens":100,"messages":[{}],"tools":[{tools}]}}"#,
            messages.join(",")
        )
    };
    let search = r#"{"name":"search","input_schema":{"type":"object"}}"#;
    let both = format!(r#"{search},{{"name":"read","input_schema":{{"type":"object"}}}}"#);
    let mut turns = Turns::<MessagesRequest>::new();
    turns.next(body(20, &both)).unwrap();
    turns.next(body(21, &both)).unwrap();
    let error = turns.next(body(22, search)).unwrap_err();
    assert!(error.contains("'read' not found"), "{error}");
}
