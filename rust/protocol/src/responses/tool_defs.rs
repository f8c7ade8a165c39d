//! Responses tool declarations and tool_choice (conformance cases `resp-tools-*`): function
//! tools,
//! namespaces, the `apply_patch` custom tool, client tool search, web search, and the tools
//! a `tool_search_output` item loads.

use std::collections::{BTreeMap, HashMap, HashSet};

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
fn namespaced_description(
    namespace: Option<&str>,
    inner: Option<&str>,
    version: ModelVersion,
) -> Option<String> {
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

/// Tool names taken so far. A namespace member whose name is taken gets the first free
/// `_1`, `_2`, … suffix, as the reference does. Names are only ever added, so once suffix `n`
/// of a base was found taken it stays taken: the search for the next member with that base
/// resumes after the last suffix tried instead of at 1, and k members sharing a base cost
/// O(k) lookups, not O(k²).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TakenNames {
    names: HashSet<String>,
    next_suffix: HashMap<String, usize>,
}

impl TakenNames {
    fn insert(&mut self, name: String) {
        self.names.insert(name);
    }

    /// `name` when it is free, otherwise the first free `{base}_{n}`; the result is taken.
    fn claim(&mut self, name: String, base: &str) -> String {
        let name = if self.names.contains(&name) {
            let next = self.next_suffix.entry(base.to_owned()).or_insert(1);
            loop {
                let candidate = format!("{base}_{next}");
                *next += 1;
                if !self.names.contains(&candidate) {
                    break candidate;
                }
            }
        } else {
            name
        };
        self.names.insert(name.clone());
        name
    }
}

/// The names the members of every namespace get, index-aligned with `tools` (empty for
/// other tools): a name already taken by a plain tool or an earlier member gets a suffix
/// ([`TakenNames`]).
fn member_names(tools: &[Tool], version: ModelVersion) -> Vec<Vec<String>> {
    let mut used = TakenNames::default();
    for tool in tools {
        match tool {
            Tool::Function(f) => used.insert(f.name.clone()),
            Tool::Custom { name } if name == apply_patch::NAME => used.insert(name.clone()),
            Tool::ToolSearch { execution, .. }
                if *execution == Some(Execution::Client) && version.is_v41() =>
            {
                used.insert(TOOL_SEARCH.to_owned());
            }
            _ => {}
        }
    }
    let mut names = Vec::with_capacity(tools.len());
    for tool in tools {
        let Tool::Namespace {
            name: ns_name,
            tools: members,
            ..
        } = tool
        else {
            names.push(Vec::new());
            continue;
        };
        let mut assigned = Vec::with_capacity(members.len());
        for member in members {
            let inner = match member {
                NamespaceMember::Function(f) => &f.name,
                NamespaceMember::Custom { name } => name,
            };
            let base = namespaced_name(ns_name, inner, version);
            assigned.push(used.claim(base.clone(), &base));
        }
        names.push(assigned);
    }
    names
}

/// A tool that passed the first checks, waiting for the schema and uniqueness checks.
#[derive(Debug, Clone)]
pub struct Pending {
    name: String,
    /// For a namespace member, the name before any `_N` suffix.
    namespaced_base: Option<String>,
    description: Option<String>,
    parameters: Option<Value>,
    strict: Option<bool>,
    /// Built-in tools (apply_patch) are stored as they are.
    builtin: bool,
    /// Loaded by a tool search.
    defer_loading: bool,
}

impl Pending {
    /// Mark a tool as loaded by a tool search.
    pub fn deferred(self) -> Self {
        Self {
            defer_loading: true,
            ..self
        }
    }

    /// Record the tool's name in `taken`. A namespace member whose name is taken gets the
    /// first free `_N` suffix (other names are left for the uniqueness check).
    pub fn claim_name(&mut self, taken: &mut TakenNames) {
        match &self.namespaced_base {
            Some(base) => self.name = taken.claim(std::mem::take(&mut self.name), base),
            None => taken.insert(self.name.clone()),
        }
    }

    /// The tool as announced before its schema is checked (a missing schema shown as `{}`).
    pub fn provisional(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: Some(
                self.parameters
                    .clone()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            ),
            strict: self.strict,
            defer_loading: self.defer_loading,
        }
    }

    /// Check the schema: the tool as stored (parameters validated or normalized).
    fn validated(self) -> Result<ToolDefinition, ConversionError> {
        let parameters = if self.builtin {
            self.parameters
        } else {
            Some(tools::validate_parameters(
                &self.name,
                self.parameters,
                self.strict == Some(true),
            )?)
        };
        Ok(ToolDefinition {
            name: self.name,
            description: self.description,
            parameters,
            strict: self.strict,
            defer_loading: self.defer_loading,
        })
    }
}

/// The names the checked tools will have.
pub fn pending_names(pending: &[Pending]) -> TakenNames {
    let mut taken = TakenNames::default();
    for p in pending {
        taken.insert(p.name.clone());
    }
    taken
}

/// The first checks on a list of tools (the request's, or those a `tool_search_output` at
/// `path` loads), in declaration order: names (tools, namespaces, namespace members),
/// custom tools, web search under `Reject`. Unsupported tool types and (on V4) tool search
/// are dropped. `path` prefixes error paths (`""` or `input[3].`). The tools are taken, so
/// their parameter schemas move into the pending tools rather than being copied.
pub fn check_declared(
    tools: Vec<Tool>,
    version: ModelVersion,
    web_search: WebSearchBehavior,
    path: &str,
) -> Result<Vec<Pending>, ConversionError> {
    let member_names = member_names(&tools, version);
    let mut pending = Vec::new();
    let plain = |name: String,
                 description: Option<String>,
                 parameters: Option<Value>,
                 strict: Option<bool>| Pending {
        name,
        namespaced_base: None,
        description,
        parameters,
        strict,
        builtin: false,
        defer_loading: false,
    };
    for (i, tool) in tools.into_iter().enumerate() {
        match tool {
            Tool::Function(f) => {
                tools::validate_tool_name(&f.name, &format!("{path}tools[{i}].name"))?;
                pending.push(plain(f.name, f.description, f.parameters, f.strict));
            }
            Tool::Namespace {
                name: ns_name,
                description: ns_description,
                tools: members,
            } => {
                tools::validate_tool_name(&ns_name, &format!("{path}tools[{i}].name"))?;
                let mut inner_names = HashSet::new();
                let names = member_names.get(i).map(Vec::as_slice).unwrap_or_default();
                for (j, (member, name)) in members.into_iter().zip(names).enumerate() {
                    let f = match member {
                        NamespaceMember::Function(f) => f,
                        NamespaceMember::Custom { name } => {
                            return Err(custom_in_namespace(&name, path, i, j))
                        }
                    };
                    tools::validate_tool_name(
                        &f.name,
                        &format!("{path}tools[{i}].tools[{j}].name"),
                    )?;
                    if !inner_names.insert(f.name.clone()) {
                        return Err(ConversionError::new(NAMESPACE_NAMES_UNIQUE));
                    }
                    pending.push(Pending {
                        name: name.clone(),
                        namespaced_base: Some(namespaced_name(&ns_name, &f.name, version)),
                        description: namespaced_description(
                            ns_description.as_deref(),
                            f.description.as_deref(),
                            version,
                        ),
                        parameters: f.parameters,
                        strict: f.strict,
                        builtin: false,
                        defer_loading: false,
                    });
                }
            }
            Tool::Custom { name } => {
                if name != apply_patch::NAME {
                    return Err(ConversionError::new(format!(
                        "Unsupported custom tool: '{}'. Only 'apply_patch' is supported.",
                        name
                    )));
                }
                let def = apply_patch::definition(version);
                pending.push(Pending {
                    builtin: true,
                    ..plain(def.name, def.description, def.parameters, def.strict)
                });
            }
            Tool::ToolSearch {
                execution,
                description,
                parameters,
            } => {
                if execution == Some(Execution::Client) && version.is_v41() {
                    pending.push(plain(TOOL_SEARCH.to_owned(), description, parameters, None));
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

/// The second checks, tool by tool in order (declared, then loaded by tool search): a
/// name seen before gives `Tool names must be unique.`, then the parameter schema is
/// checked. Returns the canonical tools.
pub fn validate_declared(pending: Vec<Pending>) -> Result<Vec<ToolDefinition>, ConversionError> {
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(pending.len());
    for tool in pending {
        if !names.insert(tool.name.clone()) {
            return Err(ConversionError::new(TOOL_NAMES_UNIQUE));
        }
        out.push(tool.validated()?);
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
            Tool::Namespace {
                name: ns_name,
                tools: members,
                ..
            } => {
                tools::validate_tool_name(ns_name, &format!("tools[{i}].name"))?;
                let mut inner_names = HashSet::new();
                let names = member_names.get(i).map(Vec::as_slice).unwrap_or_default();
                for (j, (member, name)) in members.iter().zip(names).enumerate() {
                    let f = match member {
                        NamespaceMember::Function(f) => f,
                        NamespaceMember::Custom { name } => {
                            return Err(custom_in_namespace(name, "", i, j))
                        }
                    };
                    tools::validate_tool_name(&f.name, &format!("tools[{i}].tools[{j}].name"))?;
                    if !inner_names.insert(f.name.clone()) {
                        return Err(ConversionError::new(NAMESPACE_NAMES_UNIQUE));
                    }
                    map.insert(name.clone(), (ns_name.clone(), f.name.clone()));
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
        Some(wire::ToolChoice::Object(
            ToolChoiceObject::Function { name } | ToolChoiceObject::Custom { name },
        )) => RequestedToolChoice::Named(name),
        Some(wire::ToolChoice::Object(
            ToolChoiceObject::WebSearch {} | ToolChoiceObject::WebSearch20250826 {},
        )) => {
            if web_search == WebSearchBehavior::Reject {
                return Err(ConversionError::new(SERVER_TOOLS));
            }
            RequestedToolChoice::Auto
        }
    })
}

/// A function tool as replies and tool listings spell it.
fn function_entry(f: &wire::ResponsesFunctionTool) -> Map<String, Value> {
    let mut entry = Map::new();
    entry.insert("type".to_owned(), Value::from("function"));
    entry.insert("name".to_owned(), Value::from(f.name.clone()));
    entry.insert("description".to_owned(), optional(&f.description));
    entry.insert(
        "parameters".to_owned(),
        f.parameters.clone().unwrap_or(Value::Null),
    );
    entry.insert(
        "strict".to_owned(),
        f.strict.map_or(Value::Null, Value::from),
    );
    entry
}

fn optional(s: &Option<String>) -> Value {
    s.clone().map_or(Value::Null, Value::from)
}

fn typed(kind: &str) -> Map<String, Value> {
    let mut entry = Map::new();
    entry.insert("type".to_owned(), Value::from(kind));
    entry
}

/// One tool as the reference serializes it (namespaces nested), or `None` for an
/// unsupported type.
fn tool_entry(tool: &Tool) -> Option<Value> {
    let entry = match tool {
        Tool::Function(f) => function_entry(f),
        Tool::Namespace {
            name,
            description,
            tools,
        } => {
            let mut entry = typed("namespace");
            entry.insert("name".to_owned(), Value::from(name.clone()));
            entry.insert("description".to_owned(), optional(description));
            let members = tools
                .iter()
                .map(|member| match member {
                    NamespaceMember::Function(f) => Value::Object(function_entry(f)),
                    NamespaceMember::Custom { name } => {
                        let mut custom = typed("custom");
                        custom.insert("name".to_owned(), Value::from(name.clone()));
                        Value::Object(custom)
                    }
                })
                .collect();
            entry.insert("tools".to_owned(), Value::Array(members));
            entry
        }
        Tool::Custom { name } => {
            let mut entry = typed("custom");
            entry.insert("name".to_owned(), Value::from(name.clone()));
            entry
        }
        Tool::ToolSearch {
            execution,
            description,
            parameters,
        } => {
            let mut entry = typed(TOOL_SEARCH);
            let execution = execution.map(|e| match e {
                Execution::Client => "client",
                Execution::Server => "server",
            });
            entry.insert(
                "execution".to_owned(),
                execution.map_or(Value::Null, Value::from),
            );
            entry.insert("description".to_owned(), optional(description));
            entry.insert(
                "parameters".to_owned(),
                parameters.clone().unwrap_or(Value::Null),
            );
            entry
        }
        Tool::WebSearch(w) | Tool::WebSearch20250826(w) => {
            let mut entry = typed(if matches!(tool, Tool::WebSearch(_)) {
                "web_search"
            } else {
                "web_search_2025_08_26"
            });
            entry.insert(
                "search_context_size".to_owned(),
                w.search_context_size_json(),
            );
            entry.insert("user_location".to_owned(), w.user_location_json());
            entry
        }
        Tool::Unsupported => return None,
    };
    Some(Value::Object(entry))
}

/// The content of the tool message answering a `tool_search_call`: the loaded tools as a
/// compact JSON array, namespace members flattened with their namespace attached.
/// `index` is the item's position (for the error an unsupported tool type gives).
pub fn loaded_listing(tools: &[Tool], index: usize) -> Result<String, ConversionError> {
    let mut out = Vec::new();
    for tool in tools {
        match tool {
            Tool::Namespace { name, description, tools: members } => {
                for member in members {
                    if let NamespaceMember::Function(f) = member {
                        let mut entry = function_entry(f);
                        let mut namespace = Map::new();
                        namespace.insert("name".to_owned(), Value::from(name.clone()));
                        namespace.insert("description".to_owned(), optional(description));
                        entry.insert("namespace".to_owned(), Value::Object(namespace));
                        out.push(Value::Object(entry));
                    }
                }
            }
            other => match tool_entry(other) {
                Some(entry) => out.push(entry),
                None => {
                    return Err(ConversionError::new(format!(
                        "input[{index}]: the enum variant ResponsesTool::Unsupported cannot be serialized"
                    )))
                }
            },
        }
    }
    Ok(Value::Array(out).to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use serde_json::json;

    const V4: ModelVersion = ModelVersion::DeepseekV4Pro;
    const V41: ModelVersion = ModelVersion::DeepseekV41Flash;

    fn tools(value: Value) -> Vec<Tool> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn namespaced_descriptions() {
        let cases = [
            (V4, Some("N"), Some("d"), Some("d")),
            (V4, Some("N"), None, None),
            (V41, Some("N"), Some("d"), Some("N\nd")),
            (V41, Some("N"), None, Some("N\n")),
            (V41, Some(""), Some("d"), Some("d")),
            (V41, None, Some("d"), Some("d")),
        ];
        for (version, ns, inner, expected) in cases {
            assert_eq!(
                namespaced_description(ns, inner, version).as_deref(),
                expected,
                "{version:?} {ns:?} {inner:?}"
            );
        }
    }

    #[test]
    fn taken_names_give_the_first_free_suffix() {
        // (names taken beforehand, claims as (name, base), names the claims get)
        type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [&'a str]);
        let cases: [Case<'_>; 5] = [
            (
                &[],
                &[("a", "a"), ("a", "a"), ("a", "a")],
                &["a", "a_1", "a_2"],
            ),
            (
                &["a", "a_2"],
                &[("a", "a"), ("a", "a"), ("a", "a")],
                &["a_1", "a_3", "a_4"],
            ),
            (&["a_1"], &[("a", "a"), ("a", "a")], &["a", "a_2"]),
            // A claim made after other names were added still finds the first free suffix.
            (
                &["b"],
                &[("b", "b"), ("b_2", "b"), ("b", "b")],
                &["b_1", "b_2", "b_3"],
            ),
            (&["x"], &[("x_2", "x"), ("x", "x")], &["x_2", "x_1"]),
        ];
        for (before, claims, want) in cases {
            let mut taken = TakenNames::default();
            for name in before {
                taken.insert((*name).to_owned());
            }
            let got: Vec<String> = claims
                .iter()
                .map(|(name, base)| taken.claim((*name).to_owned(), base))
                .collect();
            assert_eq!(got, want, "{before:?} {claims:?}");
        }
    }

    #[test]
    fn colliding_namespace_members_get_suffixes() {
        let ns = json!({"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "a"}]});
        let declared = tools(json!([ns, {"type": "function", "name": "ns__a_1"}, ns, ns]));
        let map = namespace_map(&declared, V4).unwrap();
        let names: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(names, ["ns__a", "ns__a_2", "ns__a_3"]);
        let names: Vec<String> = namespace_map(&tools(json!([ns, ns])), V41)
            .unwrap()
            .into_keys()
            .collect();
        assert_eq!(names, ["ns::a", "ns::a_1"]);
    }

    #[test]
    fn first_checks() {
        let check = |value: Value, version| {
            check_declared(tools(value), version, WebSearchBehavior::Reject, "")
                .map(|p| p.into_iter().map(|t| t.name).collect::<Vec<_>>())
                .map_err(|e| e.message)
        };
        assert_eq!(
            check(json!([{"type": "tool_search", "execution": "client"}]), V4),
            Ok(vec![])
        );
        assert_eq!(
            check(json!([{"type": "tool_search", "execution": "client"}]), V41),
            Ok(vec!["tool_search".to_owned()])
        );
        assert_eq!(
            check(json!([{"type": "file_search"}, {"type": "mcp"}]), V4),
            Ok(vec![])
        );
        assert_eq!(
            check(json!([{"type": "web_search"}]), V4),
            Err(SERVER_TOOLS.to_owned())
        );
        assert_eq!(
            check(json!([{"type": "custom", "name": "x"}]), V4),
            Err("Unsupported custom tool: 'x'. Only 'apply_patch' is supported.".to_owned())
        );
        assert_eq!(
            check(json!([{"type": "namespace", "name": "n", "tools": [{"type": "custom", "name": "apply_patch"}]}]), V4),
            Err("Currently custom tools are not allowed inside a namespace. Found custom tool 'apply_patch' in tools[0].tools[0].".to_owned())
        );
        assert_eq!(
            check(
                json!([{"type": "namespace", "name": "n", "tools": [{"type": "function", "name": "a"}, {"type": "function", "name": "a"}]}]),
                V4
            ),
            Err(NAMESPACE_NAMES_UNIQUE.to_owned())
        );
    }
}
