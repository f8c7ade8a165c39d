//! Messages, tool calls, tool definitions and image sources.

use std::ops::Range;

use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
    LatestReminder,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::LatestReminder => "latest_reminder",
        }
    }
}

/// A call the assistant made. `arguments` is the raw string the caller supplied, never validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool the model may call. `parameters` is the JSON schema as stored (possibly normalised
/// by conversion; `None` only for directly built tools).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub description: Option<String>,
    pub parameters: Option<Value>,
    pub strict: Option<bool>,
    pub defer_loading: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageDetail {
    Low,
    #[default]
    High,
    Original,
    Auto,
}

impl ImageDetail {
    pub fn as_str(self) -> &'static str {
        match self {
            ImageDetail::Low => "low",
            ImageDetail::High => "high",
            ImageDetail::Original => "original",
            ImageDetail::Auto => "auto",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "low" => ImageDetail::Low,
            "high" => ImageDetail::High,
            "original" => ImageDetail::Original,
            "auto" => ImageDetail::Auto,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSourceKind {
    DataUrl(String),
    Url(String),
    Bytes(Vec<u8>),
}

/// Where an image comes from. Never fetched or decoded during conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSource {
    pub kind: ImageSourceKind,
    pub detail: ImageDetail,
    /// The request location of the image as errors report it (`.messages[0]`); may be empty.
    pub path: String,
}

/// One message of a conversation. Fields a role does not use hold their defaults
/// (`None`, empty, `false`).
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Assistant only: `None` (absent) or the reasoning text (possibly empty).
    pub reasoning_content: Option<String>,
    /// Assistant only: `None` when the message made no calls.
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Tool only.
    pub tool_call_id: Option<String>,
    /// System, user and tool messages.
    pub image_sources: Vec<ImageSource>,
    /// Byte ranges in `content` that are image placeholders (one per source, in order; there
    /// may be fewer ranges than sources). Only these become special tokens: a placeholder
    /// spelling typed by a user elsewhere in `content` stays plain text.
    pub image_placeholders: Vec<Range<usize>>,
    /// Assistant only: the message is a continuation the model should extend.
    pub prefix: bool,
    /// System only: tools announced mid-conversation (rendered by V4.1).
    pub tools: Option<Vec<ToolDefinition>>,
}

impl Message {
    fn plain(role: Role, content: String) -> Self {
        Self {
            role,
            content,
            reasoning_content: None,
            tool_calls: None,
            tool_call_id: None,
            image_sources: Vec::new(),
            image_placeholders: Vec::new(),
            prefix: false,
            tools: None,
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content.into())
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content.into())
    }

    pub fn latest_reminder(content: impl Into<String>) -> Self {
        Self::plain(Role::LatestReminder, content.into())
    }

    pub fn assistant(
        content: impl Into<String>,
        reasoning_content: Option<String>,
        tool_calls: Option<Vec<ToolCall>>,
        prefix: bool,
    ) -> Self {
        Self {
            reasoning_content,
            tool_calls,
            prefix,
            ..Self::plain(Role::Assistant, content.into())
        }
    }

    pub fn tool(content: impl Into<String>, tool_call_id: Option<String>) -> Self {
        Self {
            tool_call_id,
            ..Self::plain(Role::Tool, content.into())
        }
    }

    /// Attach image sources whose placeholders are the first occurrences of `image_token`
    /// in the content (the rule for directly constructed messages).
    pub fn with_images_at_first_occurrences(
        mut self,
        sources: Vec<ImageSource>,
        image_token: &str,
    ) -> Self {
        let mut ranges = Vec::new();
        if !image_token.is_empty() {
            for (start, _) in self.content.match_indices(image_token).take(sources.len()) {
                ranges.push(start..start + image_token.len());
            }
        }
        self.image_sources = sources;
        self.image_placeholders = ranges;
        self
    }

    /// The tool calls, empty when there are none.
    pub fn calls(&self) -> &[ToolCall] {
        self.tool_calls.as_deref().unwrap_or(&[])
    }
}
