//! Tool definitions shared by all protocols (behavior.md §7.5, §7.6, §2.4 constraints):
//! name validation, parameter-schema validation, strict-schema normalization, tool_choice
//! semantics and the output constraint.
//!
//! INTERFACE STUB written by the lead: the tools helper owns this file (and may add
//! `schema.rs` for the strict normalizer / meta-schema validator); the signatures are relied
//! on by chat.rs, responses.rs and messages.rs.

use deepseek_model::{
    ConversionError, ModelVersion, OutputConstraint, ResponseFormat, ToolChoice, ToolDefinition,
};
use serde_json::Value;

/// A function tool as a protocol declared it, before validation.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredTool {
    pub name: String,
    pub description: Option<String>,
    /// `None` when the request had no `parameters` or `null` (becomes `{}`).
    pub parameters: Option<Value>,
    pub strict: Option<bool>,
    pub defer_loading: bool,
}

/// §7.6 name rules. `path` is the error path, e.g. `tools[0].function.name` (Chat) or
/// `tools[0].name` (Messages, Responses namespaces).
pub fn validate_tool_name(name: &str, path: &str) -> Result<(), ConversionError> {
    let _ = (name, path);
    Ok(())
}

/// §7.6 schema rules for one tool: a missing/null schema becomes `{}`; non-strict schemas
/// are validated and kept verbatim; strict ones are normalized. Returns the stored schema.
pub fn validate_parameters(function: &str, parameters: Option<Value>, strict: bool) -> Result<Value, ConversionError> {
    let _ = (function, strict);
    Ok(parameters.unwrap_or_else(|| Value::Object(Default::default())))
}

/// §7.6 strict normalization (also used for strict json_schema response formats).
pub fn normalize_strict_schema(schema: &Value) -> Result<Value, ConversionError> {
    Ok(schema.clone())
}

/// Validate every declared tool (names with `name_path(i)`, schemas, uniqueness) in the
/// order the reference checks them, returning the canonical tools.
pub fn validate_tools(
    tools: Vec<DeclaredTool>,
    name_path: &dyn Fn(usize) -> String,
) -> Result<Vec<ToolDefinition>, ConversionError> {
    let _ = name_path;
    Ok(tools
        .into_iter()
        .map(|t| ToolDefinition {
            name: t.name,
            description: t.description,
            parameters: t.parameters,
            strict: t.strict,
            defer_loading: t.defer_loading,
        })
        .collect())
}

/// A tool_choice as any protocol spells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestedToolChoice {
    Auto,
    None,
    Required,
    Named(String),
}

/// §7.5: check the named tool exists, then the thinking-mode restriction, then filter.
/// Returns the remaining tools and the canonical choice.
pub fn apply_tool_choice(
    tools: Vec<ToolDefinition>,
    choice: RequestedToolChoice,
    thinking_mode: bool,
) -> Result<(Vec<ToolDefinition>, ToolChoice), ConversionError> {
    let _ = (choice, thinking_mode);
    Ok((tools, ToolChoice::Auto))
}

/// §2.4: the output constraint for the final tools, choice and response format.
/// `format_schema` is the schema to constrain with for `JsonSchema` (normalized when strict).
pub fn output_constraint(
    tools: &[ToolDefinition],
    tool_choice: ToolChoice,
    format: &ResponseFormat,
    format_schema: Option<&Value>,
    version: ModelVersion,
) -> Option<OutputConstraint> {
    let _ = (tools, tool_choice, format, format_schema, version);
    None
}
