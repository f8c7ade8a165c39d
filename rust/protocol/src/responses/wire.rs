//! The wire shape of an OpenAI Responses request: serde types whose names and field orders
//! reproduce the reference's `invalid request body: …` messages. Nothing here converts.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::text_or_list::TextOrList;
use crate::thinking::RequestedEffort;

/// The request body (named as the reference names it in shape errors). Exactly the 13 fields the reference reads, in its order; every other
/// key is ignored.
#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesRequest {
    pub model: String,
    pub input: Option<Input>,
    pub instructions: Option<String>,
    pub tools: Option<Vec<ResponsesTool>>,
    pub tool_choice: Option<ToolChoice>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_output_tokens: Option<u32>,
    pub top_logprobs: Option<u8>,
    pub text: Option<ResponsesTextConfig>,
    pub stream: Option<bool>,
    pub reasoning: Option<ResponsesReasoningConfig>,
    pub user: Option<String>,
}

/// Deserialize `T` from an owned JSON value, reporting a failure as `E`'s custom error with
/// serde_json's message (which carries no position for value input).
fn from_json<T: serde::de::DeserializeOwned, E: serde::de::Error>(value: Value) -> Result<T, E> {
    serde_json::from_value(value).map_err(E::custom)
}

/// `input`: a string (one user message) or a list of items.
#[derive(Debug, Clone)]
pub enum Input {
    Text(String),
    Items(Vec<Item>),
}

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(Input::Text(text)),
            Value::Array(values) => values
                .into_iter()
                .map(Item::from_value)
                .collect::<Result<_, _>>()
                .map(Input::Items),
            _ => Err(D::Error::custom(
                "input should be a string or a list of input items",
            )),
        }
    }
}

/// One input item. Items with a `type` follow the tagged shapes; items without one are
/// messages when they have a `role`.
#[derive(Debug, Clone)]
pub enum Item {
    Message(MessageItem),
    Typed(TypedItem),
}

impl Item {
    fn from_value<E: serde::de::Error>(value: Value) -> Result<Self, E> {
        let Value::Object(map) = value else {
            return Err(E::custom("invalid input item"));
        };
        if map.contains_key("type") {
            from_json(Value::Object(map)).map(Item::Typed)
        } else if map.contains_key("role") {
            from_json(Value::Object(map)).map(Item::Message)
        } else {
            Err(E::custom("invalid input item"))
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TypedItem {
    Message(MessageItem),
    Reasoning(ReasoningItem),
    FunctionCall(FunctionCallItem),
    FunctionCallOutput(FunctionCallOutputItem),
    CustomToolCall(CustomToolCallItem),
    CustomToolCallOutput(CustomToolCallOutputItem),
    ToolSearchCall(ToolSearchCallItem),
    ToolSearchOutput(ToolSearchOutputItem),
    /// A server-side search the assistant ran: converted like an empty assistant text.
    WebSearchCall {},
    /// `item_reference` and every other type: ignored.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    System,
    Developer,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MessageItem {
    pub role: Role,
    pub content: MessageContent,
}

/// A message's content: a string or a list of content blocks.
#[derive(Debug, Clone)]
pub enum MessageContent {
    Text(String),
    Blocks(Vec<ResponsesContentBlock>),
}

impl<'de> Deserialize<'de> for MessageContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const EXPECTED: &str = "content should be a string or a list of content blocks";
        Ok(match TextOrList::deserialize(deserializer, EXPECTED)? {
            TextOrList::Text(text) => MessageContent::Text(text),
            TextOrList::List(blocks) => MessageContent::Blocks(blocks),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageDetail {
    Low,
    High,
    Original,
    Auto,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesInputImage {
    pub image_url: Option<String>,
    pub file_id: Option<String>,
    pub detail: Option<ImageDetail>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponsesContentBlock {
    InputText { text: String },
    OutputText { text: String },
    InputImage(ResponsesInputImage),
    InputFile {},
}

#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesReasoningContent {
    pub text: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReasoningItem {
    pub content: Option<Vec<ResponsesReasoningContent>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FunctionCallItem {
    pub arguments: String,
    pub call_id: String,
    pub name: String,
    pub namespace: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FunctionCallOutputItem {
    pub output: ToolOutput,
    pub call_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CustomToolCallItem {
    pub call_id: String,
    pub name: String,
    pub input: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CustomToolCallOutputItem {
    pub call_id: String,
    /// Missing or `null`: an empty output.
    pub output: Option<ToolOutput>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ToolSearchCallItem {
    pub call_id: String,
    pub arguments: Map<String, Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ToolSearchOutputItem {
    pub call_id: String,
    pub tools: Vec<ResponsesTool>,
}

/// A tool output: a string or a list of output parts.
#[derive(Debug, Clone)]
pub enum ToolOutput {
    Text(String),
    Parts(Vec<ResponsesToolCallOutputItem>),
}

impl<'de> Deserialize<'de> for ToolOutput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const EXPECTED: &str = "output should be a string or a list of output content parts";
        Ok(match TextOrList::deserialize(deserializer, EXPECTED)? {
            TextOrList::Text(text) => ToolOutput::Text(text),
            TextOrList::List(parts) => ToolOutput::Parts(parts),
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)] // the variant names are the wire's type tags
pub enum ResponsesToolCallOutputItem {
    InputText { text: String },
    InputImage(ResponsesInputImage),
    InputFile {},
}

/// A declared tool.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponsesTool {
    // Variant order matters: serde also accepts a variant's index as the tag.
    Function(ResponsesFunctionTool),
    WebSearch(ResponsesWebSearchTool),
    #[serde(rename = "web_search_2025_08_26")]
    WebSearch20250826(ResponsesWebSearchTool),
    Namespace {
        name: String,
        description: Option<String>,
        tools: Vec<ResponsesNamespaceTool>,
    },
    Custom {
        name: String,
    },
    ToolSearch {
        execution: Option<Execution>,
        description: Option<String>,
        parameters: Option<Value>,
    },
    #[serde(other)]
    Unsupported,
}

/// A web search tool: dropped or refused, only listed back when a tool search loads one.
#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesWebSearchTool {
    pub user_location: Option<ResponsesUserLocation>,
    pub search_context_size: Option<Verbosity>,
}

impl ResponsesWebSearchTool {
    pub fn search_context_size_json(&self) -> Value {
        self.search_context_size
            .map_or(Value::Null, |s| Value::from(s.as_str()))
    }

    pub fn user_location_json(&self) -> Value {
        let Some(location) = &self.user_location else {
            return Value::Null;
        };
        let field = |v: &Option<String>| v.clone().map_or(Value::Null, Value::from);
        let mut map = Map::new();
        map.insert("city".to_owned(), field(&location.city));
        map.insert("country".to_owned(), field(&location.country));
        map.insert("region".to_owned(), field(&location.region));
        map.insert("timezone".to_owned(), field(&location.timezone));
        Value::Object(map)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesUserLocation {
    pub city: Option<String>,
    pub country: Option<String>,
    pub region: Option<String>,
    pub timezone: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesFunctionTool {
    pub name: String,
    pub description: Option<String>,
    pub parameters: Option<Value>,
    pub strict: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponsesNamespaceTool {
    Function(ResponsesFunctionTool),
    Custom { name: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Execution {
    Client,
    Server,
}

/// `tool_choice`: a mode string or a tool choice object.
#[derive(Debug, Clone)]
pub enum ToolChoice {
    Mode(ToolChoiceMode),
    Object(ToolChoiceObject),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoiceMode {
    None,
    Auto,
    Required,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoiceObject {
    Function {
        name: String,
    },
    WebSearch {},
    #[serde(rename = "web_search_2025_08_26")]
    WebSearch20250826 {},
    Custom {
        name: String,
    },
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const EXPECTED: &str = "expected one of `none`, `auto`, `required` or a tool choice object";
        match Value::deserialize(deserializer)? {
            Value::String(mode) => match mode.as_str() {
                "none" => Ok(ToolChoice::Mode(ToolChoiceMode::None)),
                "auto" => Ok(ToolChoice::Mode(ToolChoiceMode::Auto)),
                "required" => Ok(ToolChoice::Mode(ToolChoiceMode::Required)),
                _ => Err(D::Error::custom(EXPECTED)),
            },
            Value::Object(map) if map.contains_key("type") => {
                from_json(Value::Object(map)).map(ToolChoice::Object)
            }
            _ => Err(D::Error::custom(EXPECTED)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    Low,
    Medium,
    High,
}

impl Verbosity {
    pub fn as_str(self) -> &'static str {
        match self {
            Verbosity::Low => "low",
            Verbosity::Medium => "medium",
            Verbosity::High => "high",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesTextConfig {
    #[serde(default)]
    pub format: ResponsesTextFormat,
    #[allow(dead_code)] // shape-checked only: the reference only echoes it
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponsesTextFormat {
    #[default]
    Text,
    JsonSchema {
        #[allow(dead_code)] // shape-checked only: the reference only echoes it
        name: String,
        schema: Value,
        strict: Option<bool>,
        #[allow(dead_code)] // shape-checked only: the reference only echoes it
        description: Option<String>,
    },
    JsonObject,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningSummary {
    Auto,
    Concise,
    Detailed,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesReasoningConfig {
    pub effort: Option<RequestedEffort>,
    #[allow(dead_code)] // shape-checked only: the reference only echoes it
    pub summary: Option<ReasoningSummary>,
    #[allow(dead_code)] // shape-checked only: the deprecated spelling of `summary`
    pub generate_summary: Option<ReasoningSummary>,
}

// Short names for the converting modules; the long ones are what shape errors print.
pub use ResponsesContentBlock as ContentBlock;
pub use ResponsesNamespaceTool as NamespaceMember;
pub use ResponsesTextFormat as TextFormat;
pub use ResponsesTool as Tool;
pub use ResponsesToolCallOutputItem as OutputPart;
