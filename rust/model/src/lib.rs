//! The canonical conversation model: what every protocol converts *into* and what the
//! renderer reads. It owns the plain data types (messages, tools, conversation, options,
//! special tokens), the settings a Responses reply reports back about its request, and the
//! one error type a conversion can raise. It refuses to know any wire format: parsing
//! requests lives in `deepseek-protocol`, producing prompts in `deepseek-render`.

pub mod cancel;
mod conversation;
mod error;
mod message;
mod options;
pub mod pyjson;
mod reported;
mod special;

pub use conversation::{
    Conversation, ConversationRequest, InferenceOptions, OutputConstraint, ParsingOptions,
    ReasoningEffort, ReplySettings, ResponseFormat, ThinkingInitialStage, ToolChoice,
};
pub use error::{ConversionError, DEFAULT_CONTEXT_ERROR_TYPE};
pub use message::{
    ImageDetail, ImageSource, ImageSourceKind, Message, Role, ToolCall, ToolDefinition,
};
pub use options::{ConversionOptions, ModelVersion, ReasoningContentBehavior, WebSearchBehavior};
pub use reported::{
    json_object, NamespaceTools, ReportedSettings, RequestReply, ResponsesEcho, StoredState,
};
pub use special::{SpecialToken, SpecialTokens};
