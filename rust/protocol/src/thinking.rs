//! Thinking mode, reasoning effort, sampling, token budget and stop-sequence rules shared by
//! all three protocols (conformance cases `*-effort-*`, `*-options-*`, `*-reasoning-*`;
//! `tests/test_max_tokens_bounds.py`).

use std::sync::Arc;

use deepseek_model::{
    ConversionError, ConversionOptions, Message, ModelVersion, ReasoningContentBehavior,
    ReasoningEffort, Role,
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

impl RequestedEffort {
    /// The canonical effort, or `None` for `none` (§7.1 table).
    fn canonical(self) -> Option<ReasoningEffort> {
        match self {
            RequestedEffort::None => None,
            RequestedEffort::Minimal | RequestedEffort::Low => Some(ReasoningEffort::Low),
            RequestedEffort::Medium | RequestedEffort::High => Some(ReasoningEffort::High),
            RequestedEffort::Xhigh => Some(ReasoningEffort::Xhigh),
            RequestedEffort::Ultra | RequestedEffort::Max => Some(ReasoningEffort::Max),
        }
    }
}

/// `thinking.type` (Chat and Messages). Variant order is the order the reference lists them
/// in its unknown-variant error (`adaptive`, `enabled`, `disabled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingType {
    Adaptive,
    Enabled,
    Disabled,
}

/// §7.1: the resolved thinking mode and canonical effort.
pub fn resolve_thinking(
    thinking: Option<ThinkingType>,
    effort: Option<RequestedEffort>,
    default_thinking_mode: bool,
) -> (bool, Option<ReasoningEffort>) {
    let high_when = |on: bool| (on, on.then_some(ReasoningEffort::High));
    match (thinking, effort) {
        (Some(ThinkingType::Disabled), _) => (false, None),
        (Some(ThinkingType::Enabled | ThinkingType::Adaptive), effort) => (
            true,
            Some(
                effort
                    .and_then(RequestedEffort::canonical)
                    .unwrap_or(ReasoningEffort::High),
            ),
        ),
        (None, Some(effort)) => match effort.canonical() {
            Some(canonical) => (true, Some(canonical)),
            None => (false, None),
        },
        (None, None) => high_when(default_thinking_mode),
    }
}

/// §7.2: range-check temperature and top_p, then apply the per-version overrides.
/// Returns the (temperature, top_p) to put in the inference options.
pub fn sampling(
    version: ModelVersion,
    thinking_mode: bool,
    temperature: Option<f32>,
    top_p: Option<f32>,
) -> Result<(Option<f32>, Option<f32>), ConversionError> {
    sampling_with_tools(version, thinking_mode, false, temperature, top_p)
}

/// [`sampling`] with the V4 rule the reference also applies: in thinking mode with active
/// tools (some tool left and tool_choice not `none`), V4's top_p is 0.95.
pub fn sampling_with_tools(
    version: ModelVersion,
    thinking_mode: bool,
    tools_active: bool,
    temperature: Option<f32>,
    top_p: Option<f32>,
) -> Result<(Option<f32>, Option<f32>), ConversionError> {
    if let Some(t) = temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(ConversionError::new(
                "Invalid temperature value, the valid range of temperature is [0, 2]",
            ));
        }
    }
    if let Some(p) = top_p {
        if !(p > 0.0 && p <= 1.0) {
            return Err(ConversionError::new(
                "Invalid top_p value, the valid range of top_p is (0, 1.0]",
            ));
        }
    }
    let temperature = if thinking_mode {
        1.0
    } else {
        temperature.unwrap_or(1.0)
    };
    let top_p = match (version.is_v41(), thinking_mode) {
        (false, true) if tools_active => THINKING_TOP_P_FLOOR,
        (false, true) => 1.0,
        (false, false) => top_p.unwrap_or(1.0),
        (true, true) => top_p.map_or(1.0, |p| p.max(THINKING_TOP_P_FLOOR)),
        (true, false) => 1.0,
    };
    Ok((Some(temperature), Some(top_p)))
}

const THINKING_TOP_P_FLOOR: f32 = 0.95;

/// §3: check `max_tokens` against the bound of the resolved thinking mode: the value must
/// lie in `[1, bound]`. With `lower` (Messages) a value above the bound is first lowered to
/// it, so with a bound of 0 every value is rejected (pinned by
/// `tests/test_max_tokens_bounds.py`).
pub fn check_max_tokens(
    max_tokens: Option<u32>,
    thinking_mode: bool,
    options: &ConversionOptions,
    lower: bool,
) -> Result<Option<u32>, ConversionError> {
    let Some(requested) = max_tokens else {
        return Ok(None);
    };
    let bound = if thinking_mode {
        options.thinking_max_tokens_upper_bound
    } else {
        options.non_thinking_max_tokens_upper_bound
    };
    let value = if lower {
        requested.min(bound)
    } else {
        requested
    };
    if value == 0 || value > bound {
        return Err(ConversionError::new(format!(
            "Invalid max_tokens value, the valid range of max_tokens is [1, {bound}]"
        )));
    }
    Ok(Some(value))
}

/// §3: `top_logprobs` in [0, 20].
pub fn check_top_logprobs(top_logprobs: Option<u8>) -> Result<(), ConversionError> {
    match top_logprobs {
        Some(n) if n > 20 => Err(ConversionError::new(
            "Invalid top_logprobs value, the valid range of top_logprobs is [0, 20].",
        )),
        _ => Ok(()),
    }
}

/// §3/§7.3: at most 16 stop strings, none empty (duplicates kept).
pub fn check_stop_sequences(stop: &[String]) -> Result<(), ConversionError> {
    if stop.len() > 16 {
        return Err(ConversionError::new(format!(
            "Stop string array too long: {}",
            stop.len()
        )));
    }
    if let Some(i) = stop.iter().position(String::is_empty) {
        return Err(ConversionError::new(format!(
            "Invalid 'stop[{i}]': empty string. Expected a string with minimum length 1, but got an empty string instead."
        )));
    }
    Ok(())
}

/// §7.4: fill or reject missing reasoning in assistant history; drop it all with thinking off.
/// Only assistant messages with tool calls after the last user message must carry reasoning.
pub fn apply_reasoning_history(
    messages: &mut [Arc<Message>],
    thinking_mode: bool,
    behavior: ReasoningContentBehavior,
) -> Result<(), ConversionError> {
    apply_reasoning_history_with_tools(messages, thinking_mode, behavior, false)
}

/// §7.4 as the reference applies it to Chat (see [`apply_reasoning_history_as`]).
pub fn apply_reasoning_history_with_tools(
    messages: &mut [Arc<Message>],
    thinking_mode: bool,
    behavior: ReasoningContentBehavior,
    request_has_tools: bool,
) -> Result<(), ConversionError> {
    apply_reasoning_history_as(
        messages,
        thinking_mode,
        behavior,
        request_has_tools,
        "reasoning_content",
    )
}

/// §7.4 as the reference applies it in every protocol. Under `Reject`, an assistant message
/// after the last user message must carry reasoning when it made tool calls, or when the
/// request declares tools at all (even with tool_choice `none`). A message with a tool-call
/// id in the reference's own ET format (`_ET_` at character 5 or 7, e.g. `call_00_ET_…`) is
/// exempt. `reasoning_field` names the field in the error: `reasoning_content` (Chat),
/// `reasoning_text` (Responses), `content[].thinking` (Messages).
pub fn apply_reasoning_history_as(
    messages: &mut [Arc<Message>],
    thinking_mode: bool,
    behavior: ReasoningContentBehavior,
    request_has_tools: bool,
    reasoning_field: &str,
) -> Result<(), ConversionError> {
    // A message already in the wanted state is left alone: it may be shared with an earlier
    // turn of the conversation, and is copied only when it changes.
    if !thinking_mode {
        for message in messages.iter_mut() {
            if message.role == Role::Assistant && message.reasoning_content.is_some() {
                Arc::make_mut(message).reasoning_content = None;
            }
        }
        return Ok(());
    }
    if behavior == ReasoningContentBehavior::Reject {
        let stretch_start = messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .map_or(0, |i| i + 1);
        let missing = messages.iter().skip(stretch_start).any(|m| {
            m.role == Role::Assistant
                && m.reasoning_content.is_none()
                && (request_has_tools || !m.calls().is_empty())
                && !m.calls().iter().any(|c| is_et_call_id(&c.id))
        });
        if missing {
            return Err(ConversionError::new(format!(
                "The `{reasoning_field}` in the thinking mode must be passed back to the API."
            )));
        }
    }
    for message in messages.iter_mut() {
        if message.role == Role::Assistant && message.reasoning_content.is_none() {
            Arc::make_mut(message).reasoning_content = Some(String::new());
        }
    }
    Ok(())
}

/// Whether a tool-call id has the ET marker where the reference looks for it.
pub fn is_et_call_id(id: &str) -> bool {
    const MARKER: [char; 4] = ['_', 'E', 'T', '_'];
    let chars: Vec<char> = id.chars().take(11).collect();
    [5, 7]
        .iter()
        .any(|&at| chars.get(at..at + MARKER.len()) == Some(&MARKER[..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_tokens_bound_table() {
        // (name, max_tokens, bound, lower (Messages), result: Ok(value) or Err(bound))
        type Case = (&'static str, u32, u32, bool, Result<u32, u32>);
        let cases: [Case; 12] = [
            ("zero is rejected", 0, 5, false, Err(5)),
            ("zero is rejected when lowering", 0, 5, true, Err(5)),
            ("one fits", 1, 5, false, Ok(1)),
            ("the bound fits", 5, 5, false, Ok(5)),
            ("above the bound is rejected", 6, 5, false, Err(5)),
            ("above the bound is lowered", 6, 5, true, Ok(5)),
            ("far above the bound is lowered", u32::MAX, 5, true, Ok(5)),
            ("a bound of 0 rejects everything", 1, 0, false, Err(0)),
            (
                "a bound of 0 rejects everything when lowering",
                1024,
                0,
                true,
                Err(0),
            ),
            ("a bound of 1 lowers to 1", 1024, 1, true, Ok(1)),
            ("a bound of 1 rejects 2", 2, 1, false, Err(1)),
            ("the largest bound", u32::MAX, u32::MAX, false, Ok(u32::MAX)),
        ];
        for (name, max_tokens, bound, lower, want) in cases {
            let options = ConversionOptions {
                thinking_max_tokens_upper_bound: bound,
                non_thinking_max_tokens_upper_bound: 7,
                ..ConversionOptions::default()
            };
            let got = check_max_tokens(Some(max_tokens), true, &options, lower)
                .map(|v| v.unwrap_or_default())
                .map_err(|e| e.message);
            let want = want.map_err(|b| {
                format!("Invalid max_tokens value, the valid range of max_tokens is [1, {b}]")
            });
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn thinking_resolution_table() {
        use RequestedEffort as E;
        use ThinkingType as T;
        type Case = (
            &'static str,
            Option<T>,
            Option<E>,
            bool,
            (bool, Option<ReasoningEffort>),
        );
        let cases: [Case; 8] = [
            (
                "disabled wins over effort",
                Some(T::Disabled),
                Some(E::Max),
                true,
                (false, None),
            ),
            (
                "enabled ignores none",
                Some(T::Enabled),
                Some(E::None),
                false,
                (true, Some(ReasoningEffort::High)),
            ),
            (
                "adaptive keeps effort",
                Some(T::Adaptive),
                Some(E::Minimal),
                false,
                (true, Some(ReasoningEffort::Low)),
            ),
            (
                "effort turns thinking on",
                None,
                Some(E::Ultra),
                false,
                (true, Some(ReasoningEffort::Max)),
            ),
            (
                "effort none turns it off",
                None,
                Some(E::None),
                true,
                (false, None),
            ),
            (
                "default on",
                None,
                None,
                true,
                (true, Some(ReasoningEffort::High)),
            ),
            ("default off", None, None, false, (false, None)),
            (
                "medium is high",
                None,
                Some(E::Medium),
                true,
                (true, Some(ReasoningEffort::High)),
            ),
        ];
        for (name, thinking, effort, default, want) in cases {
            assert_eq!(resolve_thinking(thinking, effort, default), want, "{name}");
        }
    }

    #[test]
    fn sampling_overrides() {
        let v4 = ModelVersion::DeepseekV4Pro;
        let v41 = ModelVersion::DeepseekV41Flash;
        assert_eq!(
            sampling(v41, true, Some(0.3), Some(0.5)),
            Ok((Some(1.0), Some(0.95)))
        );
        assert_eq!(
            sampling(v41, true, None, Some(0.96)),
            Ok((Some(1.0), Some(0.96)))
        );
        assert_eq!(
            sampling(v41, false, Some(0.3), Some(0.5)),
            Ok((Some(0.3), Some(1.0)))
        );
        assert_eq!(
            sampling(v4, false, None, Some(0.5)),
            Ok((Some(1.0), Some(0.5)))
        );
        assert_eq!(
            sampling(v4, true, Some(0.3), Some(0.5)),
            Ok((Some(1.0), Some(1.0)))
        );
        assert!(sampling(v4, true, Some(2.5), None).is_err());
        assert!(sampling(v4, true, None, Some(0.0)).is_err());
    }

    #[test]
    fn et_call_ids() {
        let cases = [
            ("call_00_ET_aNDvwmaxocc6Ure2Xzmg1452", true),
            ("call__ET_", true),
            ("call_ab_ET_x", true),
            ("callxxx_ET_y", true),
            ("call_1_ET_x", false),
            ("call_000_ET_x", false),
            ("call_00_et_a", false),
            ("call_\u{e9}_ET_y", false),
            ("", false),
        ];
        for (id, want) in cases {
            assert_eq!(is_et_call_id(id), want, "{id}");
        }
    }

    #[test]
    fn stop_sequences() {
        let many: Vec<String> = (0..17).map(|i| i.to_string()).collect();
        assert_eq!(
            check_stop_sequences(&many).map_err(|e| e.message),
            Err("Stop string array too long: 17".into())
        );
        assert!(check_stop_sequences(&["a".into(), String::new()]).is_err());
        assert!(check_stop_sequences(&["a".into(), "a".into()]).is_ok());
    }
}
