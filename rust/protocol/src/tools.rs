//! Tool definitions shared by all protocols (`tests/tools_rules.rs`, `tests/tools_corpus.rs`):
//! name validation, parameter-schema validation (the schema rules live in
//! [`deepseek_schema`]), uniqueness, tool_choice semantics and the output constraint.
//!
//! Check order, as the reference reports it: every tool name first (in declaration
//! order); then, tool by tool, "name already seen" and that tool's schema; then, once the
//! caller has resolved thinking mode, the tool choice (named tool exists → thinking-mode
//! restriction → filtering → strict and non-strict tools may not be mixed).

use std::collections::HashSet;

use deepseek_model::{
    ConversionError, ModelVersion, OutputConstraint, ResponseFormat, ToolChoice, ToolDefinition,
};
use deepseek_schema::{self as schema, SchemaUse};
use serde::Serialize;
use serde_json::{Map, Value};

/// A function tool as a protocol declared it, before validation.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredTool {
    pub name: String,
    pub description: Option<String>,
    /// `None` when the request had no `parameters` or `null` (becomes `{}`). A protocol
    /// whose schema field is required in practice (Messages `input_schema`) passes
    /// `Some(Value::Null)` for a missing one, which then fails the schema check.
    pub parameters: Option<Value>,
    pub strict: Option<bool>,
    pub defer_loading: bool,
}

const NAME_MAX_BYTES: usize = 128;

/// §7.6 name rules. `path` is the error path, e.g. `tools[0].function.name` (Chat) or
/// `tools[0].name` (Messages, Responses namespaces).
pub fn validate_tool_name(name: &str, path: &str) -> Result<(), ConversionError> {
    if name.is_empty() {
        return Err(ConversionError::new(format!(
            "Invalid '{path}': empty string. Expected a string with minimum length 1, but got an empty string instead."
        )));
    }
    if name.len() > NAME_MAX_BYTES {
        return Err(ConversionError::new(format!(
            "Invalid '{path}': string too long. Expected a string with maximum length {NAME_MAX_BYTES}, but got a string with length {} instead.",
            name.len()
        )));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(ConversionError::new(format!(
            "Invalid '{path}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        )));
    }
    Ok(())
}

/// §7.6 schema rules for one tool: a missing/null schema becomes `{}` (or, for a strict
/// tool, the normalized empty object); non-strict schemas are validated and kept verbatim;
/// strict ones are normalized. Returns the stored schema.
pub fn validate_parameters(
    function: &str,
    parameters: Option<Value>,
    strict: bool,
) -> Result<Value, ConversionError> {
    match (parameters, strict) {
        (None, false) => Ok(Value::Object(Map::new())),
        (None, true) => Ok(schema::strict_empty_parameters()),
        (Some(parameters), false) => {
            schema::check_tool_parameters(function, &parameters)?;
            Ok(parameters)
        }
        (Some(parameters), true) => normalize_strict_schema(&parameters),
    }
}

/// §7.6 strict normalization of a function tool's parameters. Strict `json_schema`
/// response formats word their errors differently: use
/// [`schema::normalize_strict`] with [`SchemaUse::ResponseFormat`] for those.
pub fn normalize_strict_schema(schema: &Value) -> Result<Value, ConversionError> {
    schema::normalize_strict(schema, SchemaUse::ToolParameters)
}

/// Validate every declared tool (names with `name_path(i)`, schemas, uniqueness) in the
/// order the reference checks them, returning the canonical tools.
pub fn validate_tools(
    tools: Vec<DeclaredTool>,
    name_path: &dyn Fn(usize) -> String,
) -> Result<Vec<ToolDefinition>, ConversionError> {
    for (i, tool) in tools.iter().enumerate() {
        validate_tool_name(&tool.name, &name_path(i))?;
    }
    validate_tool_schemas(tools)
}

/// The part of [`validate_tools`] after the names: for each tool in order, a name seen
/// before gives `Tool names must be unique.`, then its schema is checked. For callers that
/// validate names themselves (Responses namespaces, whose combined names skip the pattern).
pub fn validate_tool_schemas(
    tools: Vec<DeclaredTool>,
) -> Result<Vec<ToolDefinition>, ConversionError> {
    let mut seen: HashSet<String> = HashSet::with_capacity(tools.len());
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        if seen.contains(&tool.name) {
            return Err(ConversionError::new("Tool names must be unique."));
        }
        let parameters =
            validate_parameters(&tool.name, tool.parameters, tool.strict == Some(true))?;
        seen.insert(tool.name.clone());
        out.push(ToolDefinition {
            name: tool.name,
            description: tool.description,
            parameters: Some(parameters),
            strict: tool.strict,
            defer_loading: tool.defer_loading,
        });
    }
    Ok(out)
}

/// A tool_choice as any protocol spells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestedToolChoice {
    Auto,
    None,
    Required,
    Named(String),
}

/// §7.5: check the named tool exists, then the thinking-mode restriction, then filter;
/// then the remaining tools must be all strict or all non-strict. Returns the remaining
/// tools and the canonical choice.
///
/// - `none` empties the tool list;
/// - `required` or a named tool with no tools at all is silently `auto`;
/// - a named tool that is not declared is an error whatever the thinking mode;
/// - `required` / named with thinking on is an error; otherwise the choice is `required`,
///   filtered to the named tool;
/// - strict (`strict: true`) and other tools left together give
///   `Cannot use strict tool with non-strict tool in the same request` (observed on the
///   reference; filtering to one named tool avoids it).
pub fn apply_tool_choice(
    tools: Vec<ToolDefinition>,
    choice: RequestedToolChoice,
    thinking_mode: bool,
) -> Result<(Vec<ToolDefinition>, ToolChoice), ConversionError> {
    let (tools, choice) = choose(tools, choice, thinking_mode)?;
    let strict = tools.iter().filter(|t| t.strict == Some(true)).count();
    if strict > 0 && strict < tools.len() {
        return Err(ConversionError::new(
            "Cannot use strict tool with non-strict tool in the same request",
        ));
    }
    Ok((tools, choice))
}

fn choose(
    tools: Vec<ToolDefinition>,
    choice: RequestedToolChoice,
    thinking_mode: bool,
) -> Result<(Vec<ToolDefinition>, ToolChoice), ConversionError> {
    let named = match choice {
        RequestedToolChoice::None => return Ok((Vec::new(), ToolChoice::None)),
        RequestedToolChoice::Auto => return Ok((tools, ToolChoice::Auto)),
        _ if tools.is_empty() => return Ok((tools, ToolChoice::Auto)),
        RequestedToolChoice::Required => None,
        RequestedToolChoice::Named(name) => Some(name),
    };
    if let Some(name) = &named {
        if !tools.iter().any(|t| &t.name == name) {
            return Err(ConversionError::new(format!(
                "Invalid value for 'tool_call': no function named '{name}' was specified in the 'tools' parameter."
            )));
        }
    }
    if thinking_mode {
        return Err(ConversionError::new(
            "Thinking mode does not support this tool_choice",
        ));
    }
    let tools = match named {
        Some(name) => tools.into_iter().filter(|t| t.name == name).collect(),
        None => tools,
    };
    Ok((tools, ToolChoice::Required))
}

/// §7.6a: whether strict tools are in force (some remaining tool is strict and the choice
/// is not `none`), in which case a response format is refused with
/// `response_format should not be used with tools` (Chat: any `response_format` object;
/// Responses: `json_object` / `json_schema`). Call with [`apply_tool_choice`]'s result.
pub fn strict_tools_active(tools: &[ToolDefinition], tool_choice: ToolChoice) -> bool {
    tool_choice != ToolChoice::None && tools.iter().any(|t| t.strict == Some(true))
}

/// §2.4: the output constraint for the final tools, choice and response format.
/// `format_schema` is the schema to constrain with for `JsonSchema` (normalized when strict).
///
/// Tools win: with tools left and a choice other than `none`, the constraint is the tool
/// list (`tool_call`, or `tool_call_required`); otherwise the response format decides.
pub fn output_constraint(
    tools: &[ToolDefinition],
    tool_choice: ToolChoice,
    format: &ResponseFormat,
    format_schema: Option<&Value>,
    version: ModelVersion,
) -> Option<OutputConstraint> {
    if !tools.is_empty() && tool_choice != ToolChoice::None {
        let kind = if tool_choice == ToolChoice::Required {
            "tool_call_required"
        } else {
            "tool_call"
        };
        return Some(OutputConstraint {
            kind: kind.to_owned(),
            schema: tool_list_json(tools, version),
        });
    }
    let (kind, schema) = match format {
        ResponseFormat::Text => return None,
        ResponseFormat::JsonObject => ("json", String::new()),
        ResponseFormat::JsonSchema(schema) => ("json", format_schema.unwrap_or(schema).to_string()),
        ResponseFormat::Regex(regex) => ("regex", regex.clone()),
    };
    Some(OutputConstraint {
        kind: kind.to_owned(),
        schema,
    })
}

/// The compact tool list of a `tool_call` constraint: Chat-style function tools, with a
/// `"defer_loading":true` sibling of `function` for deferred tools on V4.1 only. Written from
/// borrowed tools: every request with tools makes one, and copying each parameter schema into
/// a JSON value first cost as much as all the other tool work.
pub fn tool_list_json(tools: &[ToolDefinition], version: ModelVersion) -> String {
    #[derive(Serialize)]
    struct Function<'a> {
        name: &'a str,
        description: Option<&'a str>,
        parameters: Option<&'a Value>,
        strict: Option<bool>,
    }
    #[derive(Serialize)]
    struct Entry<'a> {
        r#type: &'static str,
        function: Function<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        defer_loading: bool,
    }
    let list: Vec<Entry<'_>> = tools
        .iter()
        .map(|tool| Entry {
            r#type: "function",
            function: Function {
                name: &tool.name,
                description: tool.description.as_deref(),
                parameters: tool.parameters.as_ref(),
                strict: tool.strict,
            },
            defer_loading: tool.defer_loading && version.is_v41(),
        })
        .collect();
    // Serializing borrowed strings and values into a String cannot fail.
    serde_json::to_string(&list).unwrap_or_default()
}
