//! The Chat Completions request as it arrives on the wire: serde shapes whose names, field
//! order and types reproduce the reference's shape-error texts exactly (conformance
//! cases `cc-bodyform-*`, `cc-raw-*`).
//!
//! Type names and field order matter: serde's messages name the Rust type (`expected struct
//! ChatCompletionThinking`) and report the first missing field in declaration order; a
//! JSON array body is read positionally (`invalid length 0, expected struct
//! ChatCompletionRequest with 20 elements`).

use serde::de::{self, Deserializer};
use serde::Deserialize;
use serde_json::Value;

use crate::resume::SharedMessages;
use crate::text_or_list::TextOrList;
use crate::thinking::{RequestedEffort, ThinkingType};

/// The top-level request: exactly the 20 fields of §4.1, in the reference's order.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatCompletionRequest {
    pub messages: SharedMessages<ChatCompletionRequestMessage>,
    pub model: String,
    pub frequency_penalty: Option<f32>,
    pub logprobs: Option<bool>,
    pub top_logprobs: Option<u8>,
    pub max_tokens: Option<u32>,
    pub n: Option<u8>,
    pub presence_penalty: Option<f32>,
    pub seed: Option<u64>,
    pub stop: Option<Stop>,
    pub stream: Option<bool>,
    pub stream_options: Option<ChatCompletionStreamOptions>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub response_format: Option<ChatCompletionResponseFormat>,
    pub tools: Option<Vec<ChatCompletionTool>>,
    pub tool_choice: Option<ChatCompletionToolChoice>,
    pub reasoning_effort: Option<RequestedEffort>,
    pub thinking: Option<ChatCompletionThinking>,
    /// Type-checked only; it has no effect (§4.1).
    #[allow(dead_code)]
    pub parallel_tool_calls: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatCompletionStreamOptions {
    #[allow(dead_code)]
    pub include_usage: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatCompletionThinking {
    #[serde(rename = "type")]
    pub kind: ThinkingType,
    #[allow(dead_code)]
    pub budget_tokens: Option<u64>,
}

/// `stop`: one string or a list of strings (errors name them `stop` and `stop[i]`).
#[derive(Debug, Clone)]
pub(crate) enum Stop {
    One(String),
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for Stop {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(
            match TextOrList::deserialize(deserializer, "expected a string or a list")? {
                TextOrList::Text(stop) => Stop::One(stop),
                TextOrList::List(stops) => Stop::List(stops),
            },
        )
    }
}

/// One message, tagged by `role`. Struct variants, as the reference's errors name them
/// (`struct variant ChatCompletionRequestMessage::User with 2 elements`).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
#[allow(dead_code)] // `name` is type-checked only.
pub(crate) enum ChatCompletionRequestMessage {
    System {
        content: Content,
        name: Option<String>,
    },
    User {
        content: Content,
        name: Option<String>,
    },
    Assistant {
        content: Option<Content>,
        name: Option<String>,
        reasoning_content: Option<String>,
        tool_calls: Option<Vec<ChatCompletionRequestToolCall>>,
        prefix: Option<bool>,
    },
    Tool {
        content: Content,
        tool_call_id: String,
    },
    LatestReminder {
        content: String,
    },
}

/// `content`: a string or a list of parts.
#[derive(Debug, Clone)]
pub(crate) enum Content {
    Text(String),
    Parts(Vec<ChatCompletionRequestContentBlock>),
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(
            match TextOrList::deserialize(deserializer, "content should be a string or a list")? {
                TextOrList::Text(text) => Content::Text(text),
                TextOrList::List(parts) => Content::Parts(parts),
            },
        )
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(dead_code)] // `filename` is type-checked only.
pub(crate) enum ChatCompletionRequestContentBlock {
    Text {
        text: String,
    },
    ImageUrl {
        image_url: ChatCompletionImageUrl,
    },
    /// The file fields sit on the part itself; a nested `file` object is ignored.
    File {
        file_id: Option<String>,
        file_data: Option<String>,
        filename: Option<String>,
    },
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatCompletionImageUrl {
    pub url: String,
    #[serde(default)]
    pub detail: Option<WireImageDetail>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WireImageDetail {
    Low,
    High,
    Original,
    Auto,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatCompletionRequestToolCall {
    pub id: String,
    #[serde(rename = "type")]
    #[allow(dead_code)]
    pub kind: FunctionType,
    pub function: ChatCompletionRequestFunctionCall,
}

/// The only tool type Chat knows.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FunctionType {
    Function,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatCompletionRequestFunctionCall {
    pub name: String,
    pub arguments: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatCompletionTool {
    #[serde(rename = "type")]
    #[allow(dead_code)]
    pub kind: FunctionType,
    pub function: ChatCompletionFunctionDefinition,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatCompletionFunctionDefinition {
    pub name: String,
    pub description: Option<String>,
    pub parameters: Option<Value>,
    pub strict: Option<bool>,
}

/// `tool_choice`: `"none" | "auto" | "required"` or `{"type":"function","function":{"name"}}`.
#[derive(Debug, Clone)]
pub(crate) enum ChatCompletionToolChoice {
    None,
    Auto,
    Required,
    Function(String),
}

#[derive(Debug, Clone, Deserialize)]
struct ChatCompletionToolChoiceFunction {
    name: String,
}

impl<'de> Deserialize<'de> for ChatCompletionToolChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const EXPECTED: &str = "expected one of `none`, `auto`, `required` or a tool";
        match Value::deserialize(deserializer)? {
            Value::String(s) => match s.as_str() {
                "none" => Ok(ChatCompletionToolChoice::None),
                "auto" => Ok(ChatCompletionToolChoice::Auto),
                "required" => Ok(ChatCompletionToolChoice::Required),
                _ => Err(de::Error::custom(EXPECTED)),
            },
            Value::Object(mut map) => {
                let Some(kind) = map.remove("type") else {
                    return Err(de::Error::custom(EXPECTED));
                };
                let _: FunctionType = serde_json::from_value(kind)
                    .map_err(|e| de::Error::custom(format!("field `type`: {e}")))?;
                let function = map.remove("function").unwrap_or(Value::Null);
                let function: ChatCompletionToolChoiceFunction =
                    serde_json::from_value(function)
                        .map_err(|e| de::Error::custom(format!("field `function`: {e}")))?;
                Ok(ChatCompletionToolChoice::Function(function.name))
            }
            _ => Err(de::Error::custom(EXPECTED)),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ChatCompletionResponseFormat {
    JsonObject,
    JsonSchema {
        json_schema: ChatCompletionResponseFormatJsonSchema,
    },
    Regex {
        regex: String,
    },
    Text,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChatCompletionResponseFormatJsonSchema {
    pub schema: Value,
    #[allow(dead_code)]
    pub name: Option<String>,
    pub strict: Option<bool>,
}
