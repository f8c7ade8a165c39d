//! Thinking mode, reasoning effort, sampling, token budget and stop-sequence rules shared by
//! all three protocols (behavior.md §3, §7.1–§7.4).
//!
//! INTERFACE STUB written by the lead: the chat helper owns this file and fills it in;
//! the signatures are relied on by responses.rs and messages.rs.

use deepseek_model::{
    ConversionError, ConversionOptions, Message, ModelVersion, ReasoningContentBehavior, ReasoningEffort,
};
use serde::Deserialize;

/// The effort vocabulary of every protocol. Deserializes from `"low"` or `{"low": null}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestedEffort {
    None,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Ultra,
    Max,
}

/// `thinking.type` (Chat and Messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingType {
    Enabled,
    Disabled,
    Adaptive,
}

/// §7.1: the resolved thinking mode and canonical effort.
pub fn resolve_thinking(
    thinking: Option<ThinkingType>,
    effort: Option<RequestedEffort>,
    default_thinking_mode: bool,
) -> (bool, Option<ReasoningEffort>) {
    let _ = (thinking, effort);
    (default_thinking_mode, None)
}

/// §7.2: range-check temperature and top_p, then apply the per-version overrides.
/// Returns the (temperature, top_p) to put in the inference options.
pub fn sampling(
    version: ModelVersion,
    thinking_mode: bool,
    temperature: Option<f32>,
    top_p: Option<f32>,
) -> Result<(Option<f32>, Option<f32>), ConversionError> {
    let _ = (version, thinking_mode);
    Ok((temperature, top_p))
}

/// §3: check `max_tokens` against the bound of the resolved thinking mode. With `lower`
/// (Messages), values above the bound are lowered to it instead of rejected.
pub fn check_max_tokens(
    max_tokens: Option<u32>,
    thinking_mode: bool,
    options: &ConversionOptions,
    lower: bool,
) -> Result<Option<u32>, ConversionError> {
    let _ = (thinking_mode, options, lower);
    Ok(max_tokens)
}

/// §3: `top_logprobs` in [0, 20].
pub fn check_top_logprobs(top_logprobs: Option<u8>) -> Result<(), ConversionError> {
    let _ = top_logprobs;
    Ok(())
}

/// §3/§7.3: at most 16 stop strings, none empty (duplicates kept).
pub fn check_stop_sequences(stop: &[String]) -> Result<(), ConversionError> {
    let _ = stop;
    Ok(())
}

/// §7.4: fill or reject missing reasoning in assistant history; drop it all with thinking off.
pub fn apply_reasoning_history(
    messages: &mut [Message],
    thinking_mode: bool,
    behavior: ReasoningContentBehavior,
) -> Result<(), ConversionError> {
    let _ = (messages, thinking_mode, behavior);
    Ok(())
}
