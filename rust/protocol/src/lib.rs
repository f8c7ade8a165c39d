//! Protocol requests in, canonical conversations out. This crate owns the wire shapes of
//! OpenAI Chat Completions, OpenAI Responses and Anthropic Messages requests, their
//! validation (with the exact error texts clients expect), and the rules that turn them into
//! a [`deepseek_model::ConversationRequest`]. It refuses to render prompts or touch tokens.
//!
//! Flow: bytes or text → [`intake::parse_json`] (a `serde_json::Value`, depth-limited) →
//! `XxxRequest::from_value` (typed shape; shape errors) → `convert(options)` (semantic
//! checks; [`deepseek_model::ConversionError`]). The next body of a conversation can be
//! parsed from where it differs from the earlier one ([`resume`]), with the earlier bodies of
//! many conversations kept in a [`BodyCache`].

pub mod body_cache;
pub mod chat;
pub mod error;
mod images;
pub mod intake;
pub mod messages;
mod placeholder_text;
pub mod responses;
pub mod resume;
mod text_or_list;
pub mod thinking;
pub mod tools;

pub use body_cache::BodyCache;
pub use chat::ChatCompletionRequest;
pub use error::ProtocolError;
pub use messages::MessagesRequest;
pub use responses::ResponsesRequest;
pub use resume::Kept;
