//! What differs between V4 and V4.1, as data: DSML tag names, the effort preamble, the
//! `json_object` format text and the PYJSON float spelling. Structural differences (system hoisting, merging, prefix rules)
//! are branches on [`Dialect::v41`] where they happen.

use deepseek_model::pyjson::FloatStyle;
use deepseek_model::{ModelVersion, ReasoningEffort};

#[derive(Debug, Clone, Copy)]
pub(crate) struct Dialect {
    /// V4.1 (`DeepseekV41Flash`); otherwise V4 (`DeepseekV4Pro`).
    pub(crate) v41: bool,
    /// The DSML block tag after the DSML token: `tool_calls` / ` calls`.
    pub(crate) calls_tag: &'static str,
    /// The DSML invoke tag: `invoke` / ` invoke`.
    pub(crate) invoke_tag: &'static str,
    /// The DSML parameter tag: `parameter` / ` parameter`.
    pub(crate) parameter_tag: &'static str,
    /// The section appended to the head system for `response_format == json_object`.
    pub(crate) json_object_section: &'static str,
    /// How PYJSON spells floats (schema lines, json_schema section, DSML values).
    pub(crate) float_style: FloatStyle,
}

const V4: Dialect = Dialect {
    v41: false,
    calls_tag: "tool_calls",
    invoke_tag: "invoke",
    parameter_tag: "parameter",
    json_object_section: "\n\nYou are a helpful assistant designed to output JSON.\n## Response Format:\n\nReply with JSON object ONLY.",
    float_style: FloatStyle::Compact,
};

const V41: Dialect = Dialect {
    v41: true,
    calls_tag: " calls",
    invoke_tag: " invoke",
    parameter_tag: " parameter",
    json_object_section: "\n\n## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n{\"type\": \"json_object\"}",
    float_style: FloatStyle::PythonRepr,
};

/// The head text of the `json_schema` section; PYJSON(schema) follows it.
pub(crate) const JSON_SCHEMA_SECTION: &str =
    "\n\n## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n";

const V4_PREAMBLE_DEFAULT: &str = "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n\
You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root cause, rigorously stress-testing your logic against all potential paths, edge cases, and adversarial scenarios.\n\
Explicitly write out your entire deliberation process, documenting every intermediate step, considered alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.";

const V4_PREAMBLE_MAX: &str = "Reasoning Effort: Beyond maximum \u{2014} exhaustive, relentless, and uncompromising.\n\
You MUST reason with the utmost depth and rigor, leaving absolutely nothing to chance: exhaustively decompose the problem into its most fundamental components, trace every causal chain to its root, and resolve the underlying cause rather than any surface symptom.\n\
Do not stop reasoning until you have independently verified the solution from multiple angles and are certain that no assumption remains unchecked and no error remains undiscovered.";

impl Dialect {
    pub(crate) fn of(version: ModelVersion) -> Self {
        if version.is_v41() {
            V41
        } else {
            V4
        }
    }

    /// The effort preamble (without its trailing blank line) for a thinking conversation;
    /// `None` where the version emits none.
    pub(crate) fn effort_preamble(&self, effort: Option<ReasoningEffort>) -> Option<String> {
        if self.v41 {
            let level = match effort {
                Some(ReasoningEffort::Low) => 50,
                None | Some(ReasoningEffort::High | ReasoningEffort::Xhigh) => 75,
                Some(ReasoningEffort::Max) => 100,
            };
            Some(format!(
                "Reasoning Effort: {level} (range 1-100, the higher the value, the more thorough the reasoning)"
            ))
        } else {
            match effort {
                Some(ReasoningEffort::Low) => None,
                None | Some(ReasoningEffort::High | ReasoningEffort::Xhigh) => {
                    Some(V4_PREAMBLE_DEFAULT.to_owned())
                }
                Some(ReasoningEffort::Max) => Some(V4_PREAMBLE_MAX.to_owned()),
            }
        }
    }
}
