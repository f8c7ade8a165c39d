//! The wire shape of an OpenAI Responses request: serde types whose names and field orders
//! reproduce the reference's `invalid request body: …` messages. Nothing here converts.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::thinking::RequestedEffort;

/// The request body. Exactly the 13 fields the reference reads, in its order; every other
/// key is ignored.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename = "ResponsesRequest")]
pub struct Body {
    pub model: String,
    pub input: Option<Input>,
    pub instructions: Option<String>,
    pub tools: Option<Vec<Tool>>,
    pub tool_choice: Option<ToolChoice>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_output_tokens: Option<u32>,
    pub top_logprobs: Option<u8>,
    pub text: Option<TextConfig>,
    pub stream: Option<bool>,
    pub reasoning: Option<ReasoningConfig>,
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
            Value::Array(values) => values.into_iter().map(Item::from_value).collect::<Result<_, _>>().map(Input::Items),
            _ => Err(D::Error::custom("input should be a string or a list of input items")),
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
    /// `web_search_call`, `item_reference` and every other type: dropped.
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
    Blocks(Vec<ContentBlock>),
}

impl<'de> Deserialize<'de> for MessageContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(MessageContent::Text(text)),
            blocks @ Value::Array(_) => from_json(blocks).map(MessageContent::Blocks),
            _ => Err(D::Error::custom("content should be a string or a list of content blocks")),
        }
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
pub struct ImagePart {
    pub image_url: Option<String>,
    pub file_id: Option<String>,
    pub detail: Option<ImageDetail>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename = "ResponsesContentBlock", rename_all = "snake_case")]
pub enum ContentBlock {
    InputText { text: String },
    OutputText { text: String },
    InputImage(ImagePart),
    InputFile {},
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReasoningText {
    pub text: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReasoningItem {
    pub content: Option<Vec<ReasoningText>>,
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
    pub output: ToolOutput,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ToolSearchCallItem {
    pub call_id: String,
    pub arguments: Map<String, Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ToolSearchOutputItem {
    pub call_id: String,
    pub tools: Vec<Tool>,
}

/// A tool output: a string or a list of output parts.
#[derive(Debug, Clone)]
pub enum ToolOutput {
    Text(String),
    Parts(Vec<OutputPart>),
}

impl<'de> Deserialize<'de> for ToolOutput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(ToolOutput::Text(text)),
            parts @ Value::Array(_) => from_json(parts).map(ToolOutput::Parts),
            _ => Err(D::Error::custom("output should be a string or a list of output content parts")),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename = "ResponsesOutputContentPart", rename_all = "snake_case")]
pub enum OutputPart {
    InputText { text: String },
    InputImage(ImagePart),
    InputFile {},
}

/// A declared tool.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename = "ResponsesTool", rename_all = "snake_case")]
pub enum Tool {
    Function(FunctionTool),
    Namespace(NamespaceTool),
    Custom(CustomTool),
    ToolSearch(ToolSearchTool),
    WebSearch {},
    #[serde(rename = "web_search_2025_08_26")]
    WebSearch20250826 {},
    #[serde(other)]
    Unsupported,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FunctionTool {
    pub name: String,
    pub description: Option<String>,
    pub parameters: Option<Value>,
    pub strict: Option<bool>,
    #[allow(dead_code)] // shape-checked only: the reference ignores it
    pub defer_loading: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CustomTool {
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct NamespaceTool {
    pub name: String,
    pub description: Option<String>,
    pub tools: Vec<NamespaceMember>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NamespaceMember {
    Function(FunctionTool),
    Custom(CustomTool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Execution {
    Client,
    Server,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ToolSearchTool {
    pub execution: Option<Execution>,
    pub description: Option<String>,
    pub parameters: Option<Value>,
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
    Function { name: String },
    WebSearch {},
    #[serde(rename = "web_search_2025_08_26")]
    WebSearch20250826 {},
    Custom { name: String },
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
            Value::Object(map) if map.contains_key("type") => from_json(Value::Object(map)).map(ToolChoice::Object),
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

#[derive(Debug, Clone, Deserialize)]
#[serde(rename = "ResponsesTextConfig")]
pub struct TextConfig {
    pub format: Option<TextFormat>,
    #[allow(dead_code)] // shape-checked only: the reference ignores it
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename = "ResponsesTextFormat", rename_all = "snake_case")]
pub enum TextFormat {
    Text,
    JsonSchema(JsonSchemaFormat),
    JsonObject,
}

#[derive(Debug, Clone, Deserialize)]
pub struct JsonSchemaFormat {
    #[allow(dead_code)] // shape-checked only: the reference ignores it
    pub name: String,
    pub schema: Value,
    pub strict: Option<bool>,
    #[allow(dead_code)] // shape-checked only: the reference ignores it
    pub description: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningSummary {
    Auto,
    Concise,
    Detailed,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename = "ResponsesReasoningConfig")]
pub struct ReasoningConfig {
    pub effort: Option<RequestedEffort>,
    #[allow(dead_code)] // shape-checked only: the reference ignores it
    pub summary: Option<ReasoningSummary>,
}
