//! The wire shape of an Anthropic Messages request, as serde sees it (conformance cases
//! `msg-bodyform-*`, `msg-raw-*`).
//!
//! Type names are part of the observable behaviour: serde quotes them in shape errors
//! (`invalid length 0, expected struct MessagesRequest with 13 elements`,
//! `expected internally tagged enum MessagesContentBlock`), so they match the reference.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;

use crate::resume::SharedMessages;
use crate::text_or_list::TextOrList;
use crate::thinking::{RequestedEffort, ThinkingType};

/// The 13 fields a Messages request is read from; everything else is ignored.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct MessagesRequest {
    pub model: String,
    pub messages: SharedMessages<MessagesMessage>,
    pub system: Option<SystemPrompt>,
    pub tools: Option<Vec<MessagesTool>>,
    pub tool_choice: Option<MessagesToolChoice>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_tokens: Option<u32>,
    pub stop_sequences: Option<Vec<String>>,
    pub stream: Option<bool>,
    pub thinking: Option<MessagesThinking>,
    // Shape-checked only.
    #[allow(dead_code)]
    pub metadata: Option<MessagesMetadata>,
    pub output_config: Option<MessagesOutputConfig>,
}

/// One entry of `messages`, tagged by `role` with its `content` alongside.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "role", content = "content", rename_all = "lowercase")]
pub(crate) enum MessagesMessage {
    User(Content<MessagesContentBlock>),
    Assistant(Content<MessagesContentBlock>),
    System(Content<MessagesContentBlock>),
}

/// A string (one text block) or a list of blocks.
#[derive(Debug, Clone)]
pub(crate) enum Content<B> {
    Text(String),
    Blocks(Vec<B>),
}

impl<'de, B: Deserialize<'de>> Deserialize<'de> for Content<B> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(
            match TextOrList::deserialize(deserializer, "expected a string or a list")? {
                TextOrList::Text(text) => Content::Text(text),
                TextOrList::List(blocks) => Content::Blocks(blocks),
            },
        )
    }
}

/// Top-level `system`: a string or a list of text blocks.
pub(crate) type SystemPrompt = Content<MessagesSystemBlock>;

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum MessagesSystemBlock {
    Text { text: String },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum MessagesContentBlock {
    Text {
        text: String,
    },
    Image {
        source: MessagesImageSource,
    },
    Document {
        source: MessagesDocumentSource,
    },
    Thinking {
        thinking: String,
        #[allow(dead_code)]
        signature: Option<String>,
    },
    ServerToolUse {
        #[allow(dead_code)]
        id: String,
        #[allow(dead_code)]
        name: String,
        #[allow(dead_code)]
        input: RequiredJson,
    },
    ToolUse {
        id: String,
        name: String,
        input: RequiredJson,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Option<Content<MessagesToolResultBlock>>,
        #[allow(dead_code)]
        is_error: Option<bool>,
    },
    WebSearchToolResult {
        #[allow(dead_code)]
        tool_use_id: String,
        #[allow(dead_code)]
        content: RequiredJson,
    },
    ToolAddition {
        tool: MessagesToolReference,
    },
}

/// Any JSON value, but required: a plain `Value` field would read a missing key as `null`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RequiredJson(pub Value);

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum MessagesToolReference {
    ToolReference { name: String },
}

/// A block inside `tool_result.content`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum MessagesToolResultBlock {
    Text { text: String },
    Image { source: MessagesImageSource },
    Document { source: MessagesDocumentSource },
    ToolReference { tool_name: String },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum MessagesImageSource {
    Base64 {
        media_type: MessagesImageMediaType,
        data: String,
    },
    Url {
        url: String,
    },
    File {
        #[allow(dead_code)]
        file_id: String,
    },
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) enum MessagesImageMediaType {
    #[serde(rename = "image/jpeg")]
    Jpeg,
    #[serde(rename = "image/jpg")]
    Jpg,
    #[serde(rename = "image/png")]
    Png,
    #[serde(rename = "image/gif")]
    Gif,
    #[serde(rename = "image/webp")]
    Webp,
}

impl MessagesImageMediaType {
    /// The MIME type written into the data URL (`image/jpg` is spelled `image/jpeg`).
    pub fn as_str(self) -> &'static str {
        match self {
            MessagesImageMediaType::Jpeg | MessagesImageMediaType::Jpg => "image/jpeg",
            MessagesImageMediaType::Png => "image/png",
            MessagesImageMediaType::Gif => "image/gif",
            MessagesImageMediaType::Webp => "image/webp",
        }
    }
}

/// Only the media type of a document matters (it names the unsupported type).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct MessagesDocumentSource {
    pub media_type: Option<String>,
}

/// A declared tool: a client function tool, or a typed (server) tool.
#[derive(Debug, Clone)]
pub(crate) enum MessagesTool {
    Function(FunctionTool),
    Typed {
        tool_type: String,
        name: Option<String>,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct FunctionTool {
    pub name: String,
    pub description: Option<String>,
    /// `None` when `input_schema` was absent.
    pub input_schema: Option<Value>,
    pub defer_loading: bool,
}

impl<'de> Deserialize<'de> for MessagesTool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let mut map = match value {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        if let Some(tool_type) = map.remove("type") {
            let tool_type = String::deserialize(tool_type).map_err(D::Error::custom)?;
            let name = match map.remove("name") {
                Some(name) => Option::<String>::deserialize(name).map_err(D::Error::custom)?,
                None => None,
            };
            return Ok(MessagesTool::Typed { tool_type, name });
        }
        // Errors of a function tool's fields name the field, as the reference does.
        fn field<T: serde::de::DeserializeOwned, E: serde::de::Error>(
            map: &mut serde_json::Map<String, Value>,
            name: &str,
        ) -> Result<Option<T>, E> {
            match map.remove(name) {
                None => Ok(None),
                Some(v) => T::deserialize(v)
                    .map(Some)
                    .map_err(|e| E::custom(format!("field `{name}`: {e}"))),
            }
        }
        let name: Option<String> = field(&mut map, "name")?;
        let name = name.ok_or_else(|| D::Error::missing_field("name"))?;
        let description: Option<Option<String>> = field(&mut map, "description")?;
        let defer_loading: Option<Option<bool>> = field(&mut map, "defer_loading")?;
        let input_schema = map.remove("input_schema");
        Ok(MessagesTool::Function(FunctionTool {
            name,
            description: description.flatten(),
            input_schema,
            defer_loading: defer_loading.flatten().unwrap_or(false),
        }))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum MessagesToolChoice {
    Auto {
        #[allow(dead_code)]
        disable_parallel_tool_use: Option<bool>,
    },
    Any {
        #[allow(dead_code)]
        disable_parallel_tool_use: Option<bool>,
    },
    Tool {
        name: String,
        #[allow(dead_code)]
        disable_parallel_tool_use: Option<bool>,
    },
    None,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct MessagesThinking {
    #[serde(rename = "type")]
    pub thinking_type: MessagesThinkingType,
    #[allow(dead_code)]
    pub budget_tokens: Option<u64>,
}

/// `thinking.type`, in the reference's variant order (it shows in unknown-variant errors).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum MessagesThinkingType {
    Adaptive,
    Enabled,
    Disabled,
}

impl From<MessagesThinkingType> for ThinkingType {
    fn from(t: MessagesThinkingType) -> Self {
        match t {
            MessagesThinkingType::Adaptive => ThinkingType::Adaptive,
            MessagesThinkingType::Enabled => ThinkingType::Enabled,
            MessagesThinkingType::Disabled => ThinkingType::Disabled,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct MessagesMetadata {
    #[allow(dead_code)]
    pub user_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct MessagesOutputConfig {
    /// `format` is accepted and ignored (no JSON mode in Messages), so it is not a field.
    pub effort: Option<RequestedEffort>,
}
