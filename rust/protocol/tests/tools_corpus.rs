//! The vendored conformance cases, replayed through the tool rules alone.
//!
//! For every request case that declares tools or a tool choice, the declared function
//! tools and the choice are read from the body the way each protocol spells them, then run
//! through `validate_tools` → `apply_tool_choice` → `output_constraint` (and, for
//! `json_schema` formats, the schema check). A case whose expected outcome is one of these
//! rules' errors must fail with exactly that message; a case that converts must give the
//! expected tools, tool choice and output constraint. Cases with tool kinds this layer does
//! not see (Responses namespaces, custom and hosted tools, Messages server tools), and cases
//! that fail for reasons owned elsewhere, are counted as out of scope.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use deepseek_model::{ModelVersion, ResponseFormat, ToolDefinition};
use deepseek_protocol::tools::{self, DeclaredTool, RequestedToolChoice};
use deepseek_schema::{self as schema, SchemaUse};
use serde_json::{json, Value};

/// Error messages produced by the rules under test (prefixes).
const OWN_ERRORS: &[&str] = &[
    "Invalid 'tools[",
    "Tool names must be unique.",
    "Invalid schema for function",
    "Invalid tool parameters schema",
    "Invalid json schema",
    "Required propert",
    "Duplicate required property",
    "An object with no properties is not allowed.",
    "additionalProperties should not be true",
    "The top level of the",
    "Invalid value for 'tool_call'",
    "Thinking mode does not support this tool_choice",
];

enum Outcome {
    Skip(&'static str),
    Pass,
    Fail(String),
}

struct Inputs {
    tools: Vec<DeclaredTool>,
    name_path: fn(usize) -> String,
    choice: RequestedToolChoice,
    /// The response format and whether its schema is strict.
    format: ResponseFormat,
    format_strict: bool,
}

fn chat_path(i: usize) -> String {
    format!("tools[{i}].function.name")
}

fn plain_path(i: usize) -> String {
    format!("tools[{i}].name")
}

fn opt_string(v: Option<&Value>) -> Result<Option<String>, &'static str> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err("non-string field"),
    }
}

fn opt_params(v: Option<&Value>) -> Option<Value> {
    match v {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.clone()),
    }
}

fn read_inputs(protocol: &str, body: &Value) -> Result<Inputs, &'static str> {
    let declared = body
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut tools = Vec::new();
    for t in &declared {
        let tool = match protocol {
            "chat_completions" => {
                if t.get("type").and_then(Value::as_str) != Some("function") {
                    return Err("non-function chat tool");
                }
                let f = t.get("function").ok_or("no function")?;
                DeclaredTool {
                    name: f
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("bad name")?
                        .to_owned(),
                    description: opt_string(f.get("description"))?,
                    parameters: opt_params(f.get("parameters")),
                    strict: f.get("strict").and_then(Value::as_bool),
                    defer_loading: false,
                }
            }
            "responses" => {
                if t.get("type").and_then(Value::as_str) != Some("function") {
                    return Err("non-function responses tool");
                }
                DeclaredTool {
                    name: t
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("bad name")?
                        .to_owned(),
                    description: opt_string(t.get("description"))?,
                    parameters: opt_params(t.get("parameters")),
                    strict: t.get("strict").and_then(Value::as_bool),
                    defer_loading: false,
                }
            }
            _ => {
                if t.get("type").is_some() {
                    return Err("messages server tool");
                }
                DeclaredTool {
                    name: t
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("bad name")?
                        .to_owned(),
                    description: opt_string(t.get("description"))?,
                    // `input_schema` is required in practice: a missing one is validated as null.
                    parameters: Some(t.get("input_schema").cloned().unwrap_or(Value::Null)),
                    strict: None,
                    defer_loading: t
                        .get("defer_loading")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                }
            }
        };
        tools.push(tool);
    }
    let choice = match (protocol, body.get("tool_choice")) {
        (_, None | Some(Value::Null)) => RequestedToolChoice::Auto,
        ("messages", Some(c)) => match c.get("type").and_then(Value::as_str) {
            Some("auto" | "any") => RequestedToolChoice::Auto,
            Some("none") => RequestedToolChoice::None,
            Some("tool") => RequestedToolChoice::Named(
                c.get("name")
                    .and_then(Value::as_str)
                    .ok_or("tool choice name")?
                    .into(),
            ),
            _ => return Err("messages tool choice shape"),
        },
        (_, Some(Value::String(s))) => match s.as_str() {
            "auto" => RequestedToolChoice::Auto,
            "none" => RequestedToolChoice::None,
            "required" => RequestedToolChoice::Required,
            _ => return Err("bogus tool choice"),
        },
        ("chat_completions", Some(c)) => RequestedToolChoice::Named(
            c.pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or("chat tool choice name")?
                .into(),
        ),
        (_, Some(c)) => match c.get("type").and_then(Value::as_str) {
            Some("function") => RequestedToolChoice::Named(
                c.get("name").and_then(Value::as_str).ok_or("name")?.into(),
            ),
            _ => return Err("responses hosted tool choice"),
        },
    };
    let format_value = match protocol {
        "chat_completions" => body.get("response_format").cloned(),
        "responses" => body.pointer("/text/format").cloned(),
        _ => None,
    };
    let (format, format_strict) = match format_value
        .as_ref()
        .and_then(|f| f.get("type"))
        .and_then(Value::as_str)
    {
        None | Some("text") => (ResponseFormat::Text, false),
        Some("json_object") => (ResponseFormat::JsonObject, false),
        Some("regex") => (
            ResponseFormat::Regex(
                format_value
                    .as_ref()
                    .and_then(|f| f.get("regex"))
                    .and_then(Value::as_str)
                    .ok_or("regex")?
                    .into(),
            ),
            false,
        ),
        Some("json_schema") => {
            let holder = if protocol == "chat_completions" {
                format_value
                    .as_ref()
                    .and_then(|f| f.get("json_schema"))
                    .ok_or("json_schema")?
            } else {
                format_value.as_ref().ok_or("format")?
            };
            let schema = holder.get("schema").cloned().ok_or("schema")?;
            (
                ResponseFormat::JsonSchema(schema),
                holder.get("strict").and_then(Value::as_bool) == Some(true),
            )
        }
        Some(_) => return Err("unknown format"),
    };
    let name_path = if protocol == "chat_completions" {
        chat_path
    } else {
        plain_path
    };
    Ok(Inputs {
        tools,
        name_path,
        choice,
        format,
        format_strict,
    })
}

fn tool_json(t: &ToolDefinition) -> Value {
    json!({
        "name": t.name,
        "description": t.description,
        "parameters": t.parameters,
        "strict": t.strict,
        "defer_loading": t.defer_loading,
    })
}

fn run(
    inputs: Inputs,
    thinking: bool,
    version: ModelVersion,
) -> Result<(Vec<ToolDefinition>, String, Option<Value>), String> {
    let tools = tools::validate_tools(inputs.tools, &inputs.name_path).map_err(|e| e.message)?;
    let (tools, choice) =
        tools::apply_tool_choice(tools, inputs.choice, thinking).map_err(|e| e.message)?;
    let normalized = match &inputs.format {
        ResponseFormat::JsonSchema(schema) if inputs.format_strict => Some(
            schema::normalize_strict(schema, SchemaUse::ResponseFormat).map_err(|e| e.message)?,
        ),
        ResponseFormat::JsonSchema(schema) => {
            schema::check_response_schema(schema).map_err(|e| e.message)?;
            None
        }
        _ => None,
    };
    let constraint =
        tools::output_constraint(&tools, choice, &inputs.format, normalized.as_ref(), version)
            .map(|c| json!({"kind": c.kind, "schema": c.schema}));
    Ok((tools, choice.as_str().to_owned(), constraint))
}

fn check_case(case: &Value) -> Outcome {
    let protocol = case["case"]["protocol"].as_str().unwrap_or_default();
    let body = match case["case"].get("body") {
        Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
        other => other.cloned(),
    };
    let Some(body) = body.filter(Value::is_object) else {
        return Outcome::Skip("body not a JSON object");
    };
    let body = &body;
    let has_format =
        body.get("response_format").is_some() || body.pointer("/text/format").is_some();
    if body.get("tools").is_none() && body.get("tool_choice").is_none() && !has_format {
        return Outcome::Skip("no tools, no format");
    }
    let expected = &case["expected"];
    if expected.get("construct").is_some() {
        return Outcome::Skip("constructor error");
    }
    let inputs = match read_inputs(protocol, body) {
        Ok(inputs) => inputs,
        Err(why) => return Outcome::Skip(why),
    };
    let convert = &expected["convert"];
    if convert == "ok" {
        let conversation = &expected["conversation"];
        let thinking = conversation["thinking_mode"].as_bool().unwrap_or(true);
        let version = match expected["model_version"].as_str() {
            Some("DeepseekV41Flash") => ModelVersion::DeepseekV41Flash,
            _ => ModelVersion::DeepseekV4Pro,
        };
        let want_tools: Vec<Value> = conversation["tools"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .map(|t| {
                        json!({"name": t["name"], "description": t["description"], "parameters": t["parameters"],
                               "strict": t["strict"], "defer_loading": t["defer_loading"]})
                    })
                    .collect()
            })
            .unwrap_or_default();
        let want_choice = conversation["tool_choice"].clone();
        let want_constraint = expected["inference_options"]["output_constraint"].clone();
        match run(inputs, thinking, version) {
            Err(message) => Outcome::Fail(format!("expected ok, got error {message:?}")),
            Ok((tools, choice, constraint)) => {
                let got_tools: Vec<Value> = tools.iter().map(tool_json).collect();
                let mut problems = Vec::new();
                if got_tools != want_tools {
                    problems.push(format!(
                        "tools:\n  got  {}\n  want {}",
                        Value::from(got_tools),
                        Value::from(want_tools)
                    ));
                }
                if want_choice != choice.as_str() {
                    problems.push(format!("tool_choice: got {choice}, want {want_choice}"));
                }
                let constraint = constraint.unwrap_or(Value::Null);
                if constraint != want_constraint {
                    problems.push(format!(
                        "constraint:\n  got  {constraint}\n  want {want_constraint}"
                    ));
                }
                if problems.is_empty() {
                    Outcome::Pass
                } else {
                    Outcome::Fail(problems.join("\n"))
                }
            }
        }
    } else {
        let message = convert["error"]["message"].as_str().unwrap_or_default();
        if !OWN_ERRORS.iter().any(|p| message.starts_with(p)) {
            return Outcome::Skip("error owned elsewhere");
        }
        let thinking = message == "Thinking mode does not support this tool_choice";
        match run(inputs, thinking, ModelVersion::DeepseekV4Pro) {
            Err(got) if got == message => Outcome::Pass,
            Err(got) => Outcome::Fail(format!("error: got {got:?}, want {message:?}")),
            Ok(_) => Outcome::Fail(format!("expected error {message:?}, got ok")),
        }
    }
}

#[test]
fn vendored_cases_through_the_tool_rules() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/requests");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("vendored cases")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let (mut passed, mut skipped, mut failures) = (0, 0, Vec::new());
    let mut skip_reasons: std::collections::BTreeMap<&str, usize> = Default::default();
    for path in &paths {
        // A few cases carry Python's NaN/Infinity spellings, which are not JSON.
        let Ok(case) =
            serde_json::from_str::<Value>(&std::fs::read_to_string(path).expect("read case"))
        else {
            skipped += 1;
            *skip_reasons.entry("not strict JSON").or_default() += 1;
            continue;
        };
        let id = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        match check_case(&case) {
            Outcome::Pass => passed += 1,
            Outcome::Skip(why) => {
                skipped += 1;
                *skip_reasons.entry(why).or_default() += 1;
            }
            Outcome::Fail(why) => failures.push(format!("{id}: {why}")),
        }
    }
    eprintln!(
        "tool rules over {} vendored cases: {passed} passed, {} failed, {skipped} out of scope {skip_reasons:?}",
        paths.len(),
        failures.len()
    );
    assert!(passed >= 250, "too few cases in scope: {passed}");
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
