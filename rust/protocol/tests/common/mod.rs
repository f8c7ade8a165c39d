//! Shared conformance-harness support: load the vendored request cases, build
//! `ConversionOptions` and request bodies the way `tests/conformance/probe.py` does, and
//! serialize results into the probe's JSON shape so they compare with `expected`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod harness;

use std::path::{Path, PathBuf};

use deepseek_model::{
    Conversation, ConversationRequest, ConversionError, ConversionOptions, ImageSource,
    ImageSourceKind, Message, ModelVersion, ParsingOptions, ReasoningContentBehavior,
    ResponseFormat, Role, SpecialToken, SpecialTokens, ThinkingInitialStage, ToolDefinition,
    WebSearchBehavior,
};
use deepseek_protocol::{intake, ProtocolError};
use serde_json::{json, Map, Value};

/// `(prompt_tokens, context_limit)` pairs the probe asks `resolve_max_tokens` about.
pub const RESOLVE_MAX_TOKENS_PROBES: [(u32, u32); 8] = [
    (0, 1_048_576),
    (1000, 1_048_576),
    (1000, 70000),
    (1000, 9000),
    (1000, 1001),
    (1000, 1000),
    (5000, 1000),
    (1_000_000, 1_048_576),
];

pub fn requests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/requests")
}

/// One vendored case file. `None` for files serde_json cannot read (Python's `Infinity`/`NaN`
/// literals: Python-value bodies that never reach the protocol layer).
pub struct Case {
    pub id: String,
    pub case: Value,
    pub expected: Value,
}

pub fn load_cases(protocol: &str) -> (Vec<Case>, Vec<String>) {
    let mut cases = Vec::new();
    let mut unreadable = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(requests_dir())
        .expect("conformance requests directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let id = path.file_stem().unwrap().to_string_lossy().into_owned();
        match serde_json::from_str::<Value>(&text) {
            Ok(mut v) => {
                if v["case"]["protocol"] != protocol {
                    continue;
                }
                let case = v["case"].take();
                let expected = v["expected"].take();
                cases.push(Case { id, case, expected });
            }
            Err(_) => {
                if text.contains(&format!("\"protocol\": \"{protocol}\"")) {
                    unreadable.push(id);
                }
            }
        }
    }
    (cases, unreadable)
}

fn model_version(name: &str) -> ModelVersion {
    match name {
        "DeepseekV4Pro" => ModelVersion::DeepseekV4Pro,
        "DeepseekV41Flash" => ModelVersion::DeepseekV41Flash,
        other => panic!("unknown model version {other}"),
    }
}

fn special_token_by_keyword(keyword: &str) -> SpecialToken {
    SpecialToken::ALL
        .into_iter()
        .find(|t| t.keyword() == keyword)
        .unwrap_or_else(|| panic!("keyword {keyword}"))
}

pub fn build_special_tokens(spec: &Value) -> SpecialTokens {
    let mut tokens = SpecialTokens::default();
    for (k, v) in spec.as_object().unwrap() {
        tokens.set(special_token_by_keyword(k), v.as_str().unwrap().to_owned());
    }
    tokens
}

/// `build_options` of probe.py.
pub fn build_options(o: &Value) -> ConversionOptions {
    let mut opts = ConversionOptions::default();
    let Some(o) = o.as_object() else { return opts };
    if let Some(v) = o.get("default_thinking_mode") {
        opts.default_thinking_mode = v.as_bool().unwrap();
    }
    if let Some(v) = o.get("thinking_max_tokens_upper_bound") {
        opts.thinking_max_tokens_upper_bound = v.as_u64().unwrap() as u32;
    }
    if let Some(v) = o.get("non_thinking_max_tokens_upper_bound") {
        opts.non_thinking_max_tokens_upper_bound = v.as_u64().unwrap() as u32;
    }
    if let Some(v) = o.get("reasoning_content_behavior") {
        opts.reasoning_content_behavior = match v.as_str().unwrap() {
            "FillEmpty" => ReasoningContentBehavior::FillEmpty,
            _ => ReasoningContentBehavior::Reject,
        };
    }
    let web = |v: &Value| match v.as_str().unwrap() {
        "Drop" => WebSearchBehavior::Drop,
        _ => WebSearchBehavior::Reject,
    };
    if let Some(v) = o.get("responses_web_search") {
        opts.responses_web_search = web(v);
    }
    if let Some(v) = o.get("messages_web_search") {
        opts.messages_web_search = web(v);
    }
    if let Some(table) = o.get("model_versions_by_name") {
        opts.model_versions_by_name = table
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), model_version(v.as_str().unwrap())))
            .collect();
    }
    if let Some(aliases) = o.get("model_aliases") {
        for pair in aliases.as_array().unwrap() {
            let name = pair[0].as_str().unwrap().to_owned();
            opts.model_versions_by_name
                .insert(name, model_version(pair[1].as_str().unwrap()));
        }
    }
    if let Some(st) = o.get("special_tokens") {
        opts.special_tokens = build_special_tokens(st);
    }
    opts
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("bad base64"),
        }
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let mut acc = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            acc |= value(*c) << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

/// The request body as a JSON value, as the constructor would see it, or the intake error.
pub fn body_value(case: &Value) -> Result<Value, ProtocolError> {
    if let Some(b64) = case.get("body_b64") {
        return intake::parse_json(&base64_decode(b64.as_str().unwrap()));
    }
    let body = &case["body"];
    match body {
        Value::String(text) => intake::parse_json(text.as_bytes()),
        other => Ok(other.clone()),
    }
}

/// Errors the Python-value-to-JSON conversion raises (the bindings' job, not this crate's).
pub fn is_python_value_error(construct_error: &Value) -> bool {
    let ty = construct_error["type"].as_str().unwrap_or_default();
    let message = construct_error["message"].as_str().unwrap_or_default();
    ty != "ValueError"
        || !(message.starts_with("invalid JSON request: ")
            || message.starts_with("invalid request body: "))
}

pub fn conversion_error(e: &ConversionError) -> Value {
    json!({"error": {
        "type": "ConversionError",
        "mro": ["ConversionError", "Exception", "BaseException"],
        "message": e.message,
        "status_code": e.status_code(),
        "body": e.body(),
    }})
}

pub fn value_error(message: &str) -> Value {
    json!({"error": {"type": "ValueError", "mro": ["ValueError", "Exception", "BaseException"], "message": message}})
}

fn f32_value(v: Option<f32>) -> Value {
    v.map_or(Value::Null, |x| json!(f64::from(x)))
}

fn ser_tool_def(t: &ToolDefinition) -> Value {
    json!({
        "class": "ToolDefinition",
        "name": t.name,
        "description": t.description,
        "parameters": t.parameters,
        "strict": t.strict,
        "defer_loading": t.defer_loading,
    })
}

fn ser_image(s: &ImageSource) -> Value {
    let (class, kind, data_url, url, data) = match &s.kind {
        ImageSourceKind::DataUrl(d) => (
            "DataUrlImageSource",
            "data_url",
            json!(d),
            Value::Null,
            Value::Null,
        ),
        ImageSourceKind::Url(u) => ("UrlImageSource", "url", Value::Null, json!(u), Value::Null),
        ImageSourceKind::Bytes(b) => (
            "BytesImageSource",
            "bytes",
            Value::Null,
            Value::Null,
            json!({"bytes_b64": b64(b)}),
        ),
    };
    json!({"class": class, "kind": kind, "detail": s.detail.as_str(), "data_url": data_url, "url": url, "data": data, "path": s.path})
}

fn b64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let mut acc = 0u32;
        for (i, b) in chunk.iter().enumerate() {
            acc |= u32::from(*b) << (16 - 8 * i);
        }
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((acc >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub fn ser_message(m: &Message) -> Value {
    let class = match m.role {
        Role::System => "SystemMessage",
        Role::User => "UserMessage",
        Role::Assistant => "AssistantMessage",
        Role::Tool => "ToolMessage",
        Role::LatestReminder => "LatestReminderMessage",
    };
    let mut d = Map::new();
    d.insert("class".into(), json!(class));
    d.insert("role".into(), json!(m.role.as_str()));
    d.insert("content".into(), json!(m.content));
    d.insert("reasoning_content".into(), json!(m.reasoning_content));
    d.insert(
        "tool_calls".into(),
        m.tool_calls.as_ref().map_or(Value::Null, |calls| {
            calls
                .iter()
                .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                .collect()
        }),
    );
    d.insert("tool_call_id".into(), json!(m.tool_call_id));
    d.insert("prefix".into(), json!(m.prefix));
    d.insert(
        "image_sources".into(),
        m.image_sources.iter().map(ser_image).collect(),
    );
    if m.role == Role::System {
        d.insert(
            "tools".into(),
            m.tools
                .as_ref()
                .map_or(Value::Null, |t| t.iter().map(ser_tool_def).collect()),
        );
    }
    Value::Object(d)
}

pub fn ser_conversation(c: &Conversation) -> Value {
    let (schema, regex) = match &c.response_format {
        ResponseFormat::JsonSchema(s) => (s.clone(), Value::Null),
        ResponseFormat::Regex(r) => (Value::Null, json!(r)),
        _ => (Value::Null, Value::Null),
    };
    json!({
        "messages": c.messages.iter().map(|m| ser_message(m)).collect::<Vec<_>>(),
        "thinking_mode": c.thinking_mode,
        "tools": c.tools.iter().map(ser_tool_def).collect::<Vec<_>>(),
        "tool_choice": c.tool_choice.as_str(),
        "reasoning_effort": c.reasoning_effort.map(|e| e.as_str()),
        "response_format": c.response_format.name(),
        "response_schema": schema,
        "response_regex": regex,
    })
}

pub fn ser_special_tokens(st: &SpecialTokens) -> Value {
    let mut d = Map::new();
    for t in SpecialToken::ALL {
        d.insert(t.name().into(), json!(st.get(t)));
    }
    Value::Object(d)
}

fn stage_name(s: ThinkingInitialStage) -> &'static str {
    match s {
        ThinkingInitialStage::ReasoningStart => "ReasoningStart",
        ThinkingInitialStage::ReasoningContinuation => "ReasoningContinuation",
        ThinkingInitialStage::ContentContinuation => "ContentContinuation",
    }
}

pub fn ser_parsing(p: &ParsingOptions) -> Value {
    json!({
        "parse_tool_calls": p.parse_tool_calls,
        "starts_in_tool_calls": p.starts_in_tool_calls,
        "parse_json_output": p.parse_json_output,
        "thinking_initial_stage": p.thinking_initial_stage.map(stage_name),
        "stop_sequences": p.stop_sequences,
        "special_tokens": ser_special_tokens(&p.special_tokens),
    })
}

/// The fields of a successful conversion as probe.py records them.
pub fn ser_request(cr: &ConversationRequest) -> Map<String, Value> {
    let io = &cr.inference_options;
    let mut out = Map::new();
    out.insert("model_version".into(), json!(cr.model_version.name()));
    out.insert("stream".into(), json!(cr.stream));
    out.insert("conversation".into(), ser_conversation(&cr.conversation));
    out.insert(
        "inference_options".into(),
        json!({
            "max_tokens": io.max_tokens,
            "temperature": f32_value(io.temperature),
            "top_p": f32_value(io.top_p),
            "logprobs": io.logprobs,
            "top_logprobs": io.top_logprobs,
            "seed": io.seed,
            "output_constraint": io.output_constraint.as_ref().map(|oc| json!({"kind": oc.kind, "schema": oc.schema})),
        }),
    );
    out.insert("parsing_options".into(), ser_parsing(&cr.parsing_options));
    out.insert(
        "resolve_max_tokens".into(),
        RESOLVE_MAX_TOKENS_PROBES
            .iter()
            .map(|&(p, c)| {
                let r = cr
                    .resolve_max_tokens(p, c)
                    .map_or_else(|e| conversion_error(&e), |n| json!(n));
                json!([p, c, r])
            })
            .collect(),
    );
    out
}

/// The first place two JSON values differ, as `path: expected != actual`.
pub fn first_diff(path: &str, expected: &Value, actual: &Value) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                let sub = format!("{path}.{k}");
                match a.get(k) {
                    Some(av) => {
                        if let Some(d) = first_diff(&sub, ev, av) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{sub}: missing")),
                }
            }
            a.keys()
                .find(|k| !e.contains_key(*k))
                .map(|k| format!("{path}.{k}: unexpected"))
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (ev, av))| first_diff(&format!("{path}[{i}]"), ev, av)),
        _ if expected == actual => None,
        _ => Some(format!(
            "{path}: expected {} != actual {}",
            short(expected),
            short(actual)
        )),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 300 {
        format!("{}…", s.chars().take(300).collect::<String>())
    } else {
        s
    }
}
