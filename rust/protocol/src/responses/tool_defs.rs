//! Responses tool declarations and tool_choice (behavior.md §5.3): function tools,
//! namespaces, the `apply_patch` custom tool, client tool search, web search, and the tools
//! a `tool_search_output` item loads.

use std::collections::{BTreeMap, HashSet};

use deepseek_model::{ConversionError, ModelVersion, ToolDefinition, WebSearchBehavior};
use serde_json::{Map, Value};

use super::apply_patch;
use super::wire::{self, Execution, NamespaceMember, Tool, ToolChoiceMode, ToolChoiceObject};
use crate::tools::{self, RequestedToolChoice};

const SERVER_TOOLS: &str = "Server tools are not supported";

/// The name a namespaced tool gets: `ns::inner` on V4.1, `ns__inner` on V4.
pub fn namespaced_name(namespace: &str, inner: &str, version: ModelVersion) -> String {
    let separator = if version.is_v41() { "::" } else { "__" };
    format!("{namespace}{separator}{inner}")
}

/// The description a namespaced tool gets. V4 keeps only the inner description; V4.1
/// prefixes the namespace's description on its own line.
fn namespaced_description(namespace: Option<&str>, inner: Option<&str>, version: ModelVersion) -> Option<String> {
    match (namespace, version.is_v41()) {
        (Some(ns), true) => Some(format!("{ns}\n{}", inner.unwrap_or_default())),
        _ => inner.map(str::to_owned),
    }
}

fn custom_in_namespace(name: &str, tool: usize, member: usize) -> ConversionError {
    ConversionError::new(format!(
        "Currently custom tools are not allowed inside a namespace. Found custom tool '{name}' in tools[{tool}].tools[{member}]."
    ))
}

/// A tool whose name has been checked, waiting for the schema and uniqueness checks.
struct Pending {
    name: String,
    description: Option<String>,
    parameters: Option<Value>,
    strict: Option<bool>,
    /// Built-in tools (apply_patch) are stored as they are.
    builtin: bool,
}

/// Validate the declared tools in the reference's order (names and structure first, then
/// uniqueness and schemas tool by tool) and return the canonical tools.
pub fn declared_tools(
    tools: Vec<Tool>,
    version: ModelVersion,
    web_search: WebSearchBehavior,
) -> Result<Vec<ToolDefinition>, ConversionError> {
    let mut pending = Vec::new();
    for (i, tool) in tools.into_iter().enumerate() {
        match tool {
            Tool::Function(f) => {
                tools::validate_tool_name(&f.name, &format!("tools[{i}].name"))?;
                pending.push(Pending {
                    name: f.name,
                    description: f.description,
                    parameters: f.parameters,
                    strict: f.strict,
                    builtin: false,
                });
            }
            Tool::Namespace(ns) => {
                tools::validate_tool_name(&ns.name, &format!("tools[{i}].name"))?;
                let mut inner_names = HashSet::new();
                for (j, member) in ns.tools.into_iter().enumerate() {
                    let f = match member {
                        NamespaceMember::Function(f) => f,
                        NamespaceMember::Custom(c) => return Err(custom_in_namespace(&c.name, i, j)),
                    };
                    tools::validate_tool_name(&f.name, &format!("tools[{i}].tools[{j}].name"))?;
                    if !inner_names.insert(f.name.clone()) {
                        return Err(ConversionError::new("Tool names within a namespace must be unique."));
                    }
                    pending.push(Pending {
                        name: namespaced_name(&ns.name, &f.name, version),
                        description: namespaced_description(ns.description.as_deref(), f.description.as_deref(), version),
                        parameters: f.parameters,
                        strict: f.strict,
                        builtin: false,
                    });
                }
            }
            Tool::Custom(c) => {
                if c.name != apply_patch::NAME {
                    return Err(ConversionError::new(format!(
                        "Unsupported custom tool: '{}'. Only 'apply_patch' is supported.",
                        c.name
                    )));
                }
                let def = apply_patch::definition(version);
                pending.push(Pending {
                    name: def.name,
                    description: def.description,
                    parameters: def.parameters,
                    strict: def.strict,
                    builtin: true,
                });
            }
            Tool::ToolSearch(t) => {
                if t.execution == Some(Execution::Client) && version.is_v41() {
                    pending.push(Pending {
                        name: "tool_search".to_owned(),
                        description: t.description,
                        parameters: t.parameters,
                        strict: None,
                        builtin: false,
                    });
                }
            }
            Tool::WebSearch {} | Tool::WebSearch20250826 {} => {
                if web_search == WebSearchBehavior::Reject {
                    return Err(ConversionError::new(SERVER_TOOLS));
                }
            }
            Tool::Unsupported => {}
        }
    }
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(pending.len());
    for tool in pending {
        if !names.insert(tool.name.clone()) {
            return Err(ConversionError::new("Tool names must be unique."));
        }
        let parameters = if tool.builtin {
            tool.parameters
        } else {
            Some(tools::validate_parameters(&tool.name, tool.parameters, tool.strict == Some(true))?)
        };
        out.push(ToolDefinition {
            name: tool.name,
            description: tool.description,
            parameters,
            strict: tool.strict,
            defer_loading: false,
        });
    }
    Ok(out)
}

/// `{"ns::inner": ("ns", "inner")}` for every function inside a namespace.
pub fn namespace_map(
    tools: &[Tool],
    version: ModelVersion,
) -> Result<BTreeMap<String, (String, String)>, ConversionError> {
    let mut map = BTreeMap::new();
    for (i, tool) in tools.iter().enumerate() {
        let Tool::Namespace(ns) = tool else { continue };
        for (j, member) in ns.tools.iter().enumerate() {
            match member {
                NamespaceMember::Function(f) => {
                    map.insert(namespaced_name(&ns.name, &f.name, version), (ns.name.clone(), f.name.clone()));
                }
                NamespaceMember::Custom(c) => return Err(custom_in_namespace(&c.name, i, j)),
            }
        }
    }
    Ok(map)
}

/// The tool choice as the shared rules take it. Web-search choices become `auto` under
/// `Drop` and are refused under `Reject`.
pub fn requested_choice(
    choice: Option<wire::ToolChoice>,
    web_search: WebSearchBehavior,
) -> Result<RequestedToolChoice, ConversionError> {
    Ok(match choice {
        None | Some(wire::ToolChoice::Mode(ToolChoiceMode::Auto)) => RequestedToolChoice::Auto,
        Some(wire::ToolChoice::Mode(ToolChoiceMode::None)) => RequestedToolChoice::None,
        Some(wire::ToolChoice::Mode(ToolChoiceMode::Required)) => RequestedToolChoice::Required,
        Some(wire::ToolChoice::Object(ToolChoiceObject::Function { name } | ToolChoiceObject::Custom { name })) => {
            RequestedToolChoice::Named(name)
        }
        Some(wire::ToolChoice::Object(ToolChoiceObject::WebSearch {} | ToolChoiceObject::WebSearch20250826 {})) => {
            if web_search == WebSearchBehavior::Reject {
                return Err(ConversionError::new(SERVER_TOOLS));
            }
            RequestedToolChoice::Auto
        }
    })
}

/// A tool loaded by `tool_search_output`: its canonical definition (V4.1 naming) and its
/// entry in the tool message that lists the loaded tools.
pub struct LoadedTool {
    pub definition: ToolDefinition,
    listing: Value,
}

impl LoadedTool {
    /// The tool message content: a compact JSON array of the loaded tools.
    pub fn listing(tools: &[LoadedTool]) -> String {
        Value::Array(tools.iter().map(|t| t.listing.clone()).collect()).to_string()
    }

    fn function(f: wire::FunctionTool, namespace: Option<(&str, Option<&str>)>) -> Self {
        let version = ModelVersion::DeepseekV41Flash;
        let mut listing = Map::new();
        listing.insert("type".to_owned(), Value::from("function"));
        listing.insert("name".to_owned(), Value::from(f.name.clone()));
        listing.insert("description".to_owned(), f.description.clone().map_or(Value::Null, Value::from));
        listing.insert("parameters".to_owned(), f.parameters.clone().unwrap_or(Value::Null));
        listing.insert("strict".to_owned(), f.strict.map_or(Value::Null, Value::from));
        let (name, description) = match namespace {
            Some((ns, ns_description)) => {
                let mut entry = Map::new();
                entry.insert("name".to_owned(), Value::from(ns));
                entry.insert("description".to_owned(), ns_description.map_or(Value::Null, Value::from));
                listing.insert("namespace".to_owned(), Value::Object(entry));
                (
                    namespaced_name(ns, &f.name, version),
                    namespaced_description(ns_description, f.description.as_deref(), version),
                )
            }
            None => (f.name, f.description),
        };
        let definition = ToolDefinition {
            name,
            description,
            parameters: Some(f.parameters.unwrap_or_else(|| Value::Object(Map::new()))),
            strict: f.strict,
            defer_loading: false,
        };
        Self { definition, listing: Value::Object(listing) }
    }
}

/// The tools of a `tool_search_output` item at `input[index]` (V4.1 only).
pub fn loaded_tools(tools: Vec<Tool>, index: usize) -> Result<Vec<LoadedTool>, ConversionError> {
    let mut out = Vec::new();
    for tool in tools {
        match tool {
            Tool::Function(f) => out.push(LoadedTool::function(f, None)),
            Tool::Namespace(ns) => {
                for member in ns.tools {
                    if let NamespaceMember::Function(f) = member {
                        out.push(LoadedTool::function(f, Some((&ns.name, ns.description.as_deref()))));
                    }
                }
            }
            _ => {
                return Err(ConversionError::new(format!(
                    "input[{index}]: the enum variant ResponsesTool::Unsupported cannot be serialized"
                )))
            }
        }
    }
    Ok(out)
}
