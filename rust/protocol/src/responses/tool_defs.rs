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
const NAMESPACE_NAMES_UNIQUE: &str = "Tool names within a namespace must be unique.";
const TOOL_NAMES_UNIQUE: &str = "Tool names must be unique.";
const TOOL_SEARCH: &str = "tool_search";

/// The name a namespaced tool gets: `ns::inner` on V4.1, `ns__inner` on V4.
pub fn namespaced_name(namespace: &str, inner: &str, version: ModelVersion) -> String {
    let separator = if version.is_v41() { "::" } else { "__" };
    format!("{namespace}{separator}{inner}")
}

/// The description a namespaced tool gets. V4 keeps only the inner description; V4.1
/// prefixes the namespace's description on its own line.
fn namespaced_description(namespace: Option<&str>, inner: Option<&str>, version: ModelVersion) -> Option<String> {
    match (namespace.filter(|ns| !ns.is_empty()), version.is_v41()) {
        (Some(ns), true) => Some(format!("{ns}\n{}", inner.unwrap_or_default())),
        _ => inner.map(str::to_owned),
    }
}

fn custom_in_namespace(name: &str, path: &str, tool: usize, member: usize) -> ConversionError {
    ConversionError::new(format!(
        "Currently custom tools are not allowed inside a namespace. Found custom tool '{name}' in {path}tools[{tool}].tools[{member}]."
    ))
}

/// The names the members of every namespace get, index-aligned with `tools` (empty for
/// other tools). A name already taken by a plain tool or an earlier member gets the first
/// free `_1`, `_2`, … suffix, as the reference does.
fn member_names(tools: &[Tool], version: ModelVersion) -> Vec<Vec<String>> {
    let mut used: HashSet<String> = HashSet::new();
    for tool in tools {
        match tool {
            Tool::Function(f) => {
                used.insert(f.name.clone());
            }
            Tool::Custom(c) if c.name == apply_patch::NAME => {
                used.insert(c.name.clone());
            }
            Tool::ToolSearch(t) if t.execution == Some(Execution::Client) && version.is_v41() => {
                used.insert(TOOL_SEARCH.to_owned());
            }
            _ => {}
        }
    }
    let mut names = Vec::with_capacity(tools.len());
    for tool in tools {
        let Tool::Namespace(ns) = tool else {
            names.push(Vec::new());
            continue;
        };
        let mut members = Vec::with_capacity(ns.tools.len());
        for member in &ns.tools {
            let inner = match member {
                NamespaceMember::Function(f) => &f.name,
                NamespaceMember::Custom { name } => name,
            };
            let base = namespaced_name(&ns.name, inner, version);
            let mut name = base.clone();
            let mut suffix = 1;
            while used.contains(&name) {
                name = format!("{base}_{suffix}");
                suffix += 1;
            }
            used.insert(name.clone());
            members.push(name);
        }
        names.push(members);
    }
    names
}

/// A tool that passed the first checks, waiting for the schema and uniqueness checks.
pub struct Pending {
    name: String,
    /// For a namespace member, the name before any `_N` suffix.
    namespaced_base: Option<String>,
    description: Option<String>,
    parameters: Option<Value>,
    strict: Option<bool>,
    /// Built-in tools (apply_patch) are stored as they are.
    builtin: bool,
}

impl Pending {
    /// Check the schema now: the tool as stored (parameters validated or normalized).
    pub fn validated(self, defer_loading: bool) -> Result<ValidatedTool, ConversionError> {
        let parameters = if self.builtin {
            self.parameters
        } else {
            Some(tools::validate_parameters(&self.name, self.parameters, self.strict == Some(true))?)
        };
        let definition = ToolDefinition {
            name: self.name,
            description: self.description,
            parameters,
            strict: self.strict,
            defer_loading,
        };
        Ok(ValidatedTool { definition, namespaced_base: self.namespaced_base })
    }
}

/// A tool whose schema is checked.
#[derive(Debug, Clone)]
pub struct ValidatedTool {
    pub definition: ToolDefinition,
    namespaced_base: Option<String>,
}

impl ValidatedTool {
    /// Record the tool's name in `taken`. A namespace member whose name is taken gets the
    /// first free `_N` suffix (other names are left for the uniqueness check).
    pub fn claim_name(&mut self, taken: &mut HashSet<String>) {
        if let Some(base) = &self.namespaced_base {
            let mut suffix = 1;
            while taken.contains(&self.definition.name) {
                self.definition.name = format!("{base}_{suffix}");
                suffix += 1;
            }
        }
        taken.insert(self.definition.name.clone());
    }
}

/// The names the checked tools will have.
pub fn pending_names(pending: &[Pending]) -> HashSet<String> {
    pending.iter().map(|p| p.name.clone()).collect()
}

/// The first checks on a list of tools (the request's, or those a `tool_search_output` at
/// `path` loads), in declaration order: names (tools, namespaces, namespace members),
/// custom tools, web search under `Reject`. Unsupported tool types and (on V4) tool search
/// are dropped. `path` prefixes error paths (`""` or `input[3].`).
pub fn check_declared(
    tools: &[Tool],
    version: ModelVersion,
    web_search: WebSearchBehavior,
    path: &str,
) -> Result<Vec<Pending>, ConversionError> {
    let member_names = member_names(tools, version);
    let mut pending = Vec::new();
    let plain = |name: String, description: Option<String>, parameters: Option<Value>, strict: Option<bool>| Pending {
        name,
        namespaced_base: None,
        description,
        parameters,
        strict,
        builtin: false,
    };
    for (i, tool) in tools.iter().enumerate() {
        match tool {
            Tool::Function(f) => {
                tools::validate_tool_name(&f.name, &format!("{path}tools[{i}].name"))?;
                pending.push(plain(f.name.clone(), f.description.clone(), f.parameters.clone(), f.strict));
            }
            Tool::Namespace(ns) => {
                tools::validate_tool_name(&ns.name, &format!("{path}tools[{i}].name"))?;
                let mut inner_names = HashSet::new();
                let names = member_names.get(i).map(Vec::as_slice).unwrap_or_default();
                for (j, (member, name)) in ns.tools.iter().zip(names).enumerate() {
                    let f = match member {
                        NamespaceMember::Function(f) => f,
                        NamespaceMember::Custom { name } => return Err(custom_in_namespace(name, path, i, j)),
                    };
                    tools::validate_tool_name(&f.name, &format!("{path}tools[{i}].tools[{j}].name"))?;
                    if !inner_names.insert(f.name.as_str()) {
                        return Err(ConversionError::new(NAMESPACE_NAMES_UNIQUE));
                    }
                    pending.push(Pending {
                        name: name.clone(),
                        namespaced_base: Some(namespaced_name(&ns.name, &f.name, version)),
                        description: namespaced_description(
                            ns.description.as_deref(),
                            f.description.as_deref(),
                            version,
                        ),
                        parameters: f.parameters.clone(),
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
                pending.push(Pending { builtin: true, ..plain(def.name, def.description, def.parameters, def.strict) });
            }
            Tool::ToolSearch(t) => {
                if t.execution == Some(Execution::Client) && version.is_v41() {
                    pending.push(plain(TOOL_SEARCH.to_owned(), t.description.clone(), t.parameters.clone(), None));
                }
            }
            Tool::WebSearch(_) | Tool::WebSearch20250826(_) => {
                if web_search == WebSearchBehavior::Reject {
                    return Err(ConversionError::new(SERVER_TOOLS));
                }
            }
            Tool::Unsupported => {}
        }
    }
    Ok(pending)
}

/// The second checks, tool by tool: unique names, then the parameter schema, for the
/// declared tools; then unique names for the tools loaded by tool search (schemas already
/// checked). Returns the canonical tools, loaded ones last.
pub fn validate_declared(
    pending: Vec<Pending>,
    loaded: Vec<ValidatedTool>,
) -> Result<Vec<ToolDefinition>, ConversionError> {
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(pending.len() + loaded.len());
    for tool in pending {
        if !names.insert(tool.name.clone()) {
            return Err(ConversionError::new(TOOL_NAMES_UNIQUE));
        }
        out.push(tool.validated(false)?.definition);
    }
    for tool in loaded {
        let definition = tool.definition;
        if !names.insert(definition.name.clone()) {
            return Err(ConversionError::new(TOOL_NAMES_UNIQUE));
        }
        out.push(definition);
    }
    Ok(out)
}

/// `{"ns::inner": ("ns", "inner")}` for every function inside a namespace. Like the
/// reference, this checks tool and namespace names on the way (not schemas, uniqueness
/// across tools, or unsupported tool types).
pub fn namespace_map(
    tools: &[Tool],
    version: ModelVersion,
) -> Result<BTreeMap<String, (String, String)>, ConversionError> {
    let member_names = member_names(tools, version);
    let mut map = BTreeMap::new();
    for (i, tool) in tools.iter().enumerate() {
        match tool {
            Tool::Function(f) => tools::validate_tool_name(&f.name, &format!("tools[{i}].name"))?,
            Tool::Namespace(ns) => {
                tools::validate_tool_name(&ns.name, &format!("tools[{i}].name"))?;
                let mut inner_names = HashSet::new();
                let names = member_names.get(i).map(Vec::as_slice).unwrap_or_default();
                for (j, (member, name)) in ns.tools.iter().zip(names).enumerate() {
                    let f = match member {
                        NamespaceMember::Function(f) => f,
                        NamespaceMember::Custom { name } => return Err(custom_in_namespace(name, "", i, j)),
                    };
                    tools::validate_tool_name(&f.name, &format!("tools[{i}].tools[{j}].name"))?;
                    if !inner_names.insert(f.name.as_str()) {
                        return Err(ConversionError::new(NAMESPACE_NAMES_UNIQUE));
                    }
                    map.insert(name.clone(), (ns.name.clone(), f.name.clone()));
                }
            }
            _ => {}
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

/// The content of the tool message answering a `tool_search_call`: the loaded tools as a
/// compact JSON array, namespace members flattened with their namespace attached.
/// `index` is the item's position (for the error an unsupported tool type gives).
pub fn loaded_listing(tools: &[Tool], index: usize) -> Result<String, ConversionError> {
    let opt = |s: &Option<String>| s.clone().map_or(Value::Null, Value::from);
    let function = |f: &wire::FunctionTool| {
        let mut entry = Map::new();
        entry.insert("type".to_owned(), Value::from("function"));
        entry.insert("name".to_owned(), Value::from(f.name.clone()));
        entry.insert("description".to_owned(), opt(&f.description));
        entry.insert("parameters".to_owned(), f.parameters.clone().unwrap_or(Value::Null));
        entry.insert("strict".to_owned(), f.strict.map_or(Value::Null, Value::from));
        entry
    };
    let mut out = Vec::new();
    for tool in tools {
        match tool {
            Tool::Function(f) => out.push(Value::Object(function(f))),
            Tool::Namespace(ns) => {
                for member in &ns.tools {
                    if let NamespaceMember::Function(f) = member {
                        let mut entry = function(f);
                        let mut namespace = Map::new();
                        namespace.insert("name".to_owned(), Value::from(ns.name.clone()));
                        namespace.insert("description".to_owned(), opt(&ns.description));
                        entry.insert("namespace".to_owned(), Value::Object(namespace));
                        out.push(Value::Object(entry));
                    }
                }
            }
            Tool::Custom(c) => {
                let mut entry = Map::new();
                entry.insert("type".to_owned(), Value::from("custom"));
                entry.insert("name".to_owned(), Value::from(c.name.clone()));
                out.push(Value::Object(entry));
            }
            Tool::ToolSearch(t) => {
                let mut entry = Map::new();
                entry.insert("type".to_owned(), Value::from(TOOL_SEARCH));
                let execution = t.execution.map(|e| match e {
                    Execution::Client => "client",
                    Execution::Server => "server",
                });
                entry.insert("execution".to_owned(), execution.map_or(Value::Null, Value::from));
                entry.insert("description".to_owned(), opt(&t.description));
                entry.insert("parameters".to_owned(), t.parameters.clone().unwrap_or(Value::Null));
                out.push(Value::Object(entry));
            }
            Tool::WebSearch(w) | Tool::WebSearch20250826(w) => {
                let kind = if matches!(tool, Tool::WebSearch(_)) { "web_search" } else { "web_search_2025_08_26" };
                let mut entry = Map::new();
                entry.insert("type".to_owned(), Value::from(kind));
                entry.insert("search_context_size".to_owned(), w.search_context_size_json());
                entry.insert("user_location".to_owned(), w.user_location_json());
                out.push(Value::Object(entry));
            }
            Tool::Unsupported => {
                return Err(ConversionError::new(format!(
                    "input[{index}]: the enum variant ResponsesTool::Unsupported cannot be serialized"
                )))
            }
        }
    }
    Ok(Value::Array(out).to_string())
}
