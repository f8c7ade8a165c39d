//! Strict schemas (`tests/fixtures/rules.jsonl`, `rules_match_the_reference`): a JSON schema is read
//! into a small typed model, the model is checked, and the model is written back out. Reading
//! reports the first problem in the order a serde reader meets it (keys in request order, a missing
//! field last); checks run after reading, children before their parent; the "top level is an
//! object" check runs last.
//!
//! Worked example: `{"type":"object","title":"T","properties":{"a":{"type":"string",
//! "minLength":1}}}` reads as `Object{properties:[a: String{}]}` (`title` and `minLength`
//! are not in the model, so they vanish) and is written as `{"type":"object","properties":
//! {"a":{"type":"string"}},"additionalProperties":false,"required":["a"]}`.

use std::collections::HashSet;

use serde_json::{Map, Number, Value};

use super::unexpected;

/// Where a strict schema comes from; it decides the error wording and whether an object
/// without properties is allowed at the top.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaUse {
    /// `parameters` of a strict function tool: an empty top-level object is allowed.
    ToolParameters,
    /// The schema of a strict `json_schema` response format.
    ResponseFormat,
}

impl SchemaUse {
    fn read_error_prefix(self) -> &'static str {
        match self {
            SchemaUse::ToolParameters => "Invalid tool parameters schema : ",
            SchemaUse::ResponseFormat => "Invalid json schema: ",
        }
    }

    fn top_level_error(self) -> &'static str {
        match self {
            SchemaUse::ToolParameters => {
                "The top level of the function parameters schema must be an object."
            }
            SchemaUse::ResponseFormat => "The top level of the json schema must be an object.",
        }
    }

    fn empty_top_object_allowed(self) -> bool {
        matches!(self, SchemaUse::ToolParameters)
    }
}

const ONE_OF_REQUIRED: &str = "one of `type`, `anyOf`, `$ref` field is required";
const NO_PROPERTIES: &str = "An object with no properties is not allowed.";
const REQUIRED_MISMATCH: &str = "Required properties must match all properties in the object";
const ADDITIONAL_TRUE: &str = "additionalProperties should not be true";
const TYPED_ENUM: &str = "JsonSchemaType";
const SCHEMA_TYPES: [&str; 7] = [
    "object", "string", "number", "integer", "boolean", "array", "null",
];
const PRIMITIVE_TYPES: [&str; 5] = ["string", "number", "integer", "boolean", "null"];
const STRING_FORMATS: [&str; 5] = ["email", "hostname", "ipv4", "ipv6", "uuid"];
/// Numeric keywords kept on `number` and `integer` nodes, in output order.
const NUMERIC_KEYS: [&str; 7] = [
    "const",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// Normalize a strict schema, or return the reference's error message.
pub fn normalize(schema: &Value, usage: SchemaUse) -> Result<Value, String> {
    let node = read_schema(schema).map_err(|e| format!("{}{e}", usage.read_error_prefix()))?;
    check(&node, usage.empty_top_object_allowed())?;
    if !matches!(node, Node::Object { .. }) {
        return Err(usage.top_level_error().to_owned());
    }
    Ok(node.write())
}

/// The normalized form of a strict tool declared without parameters.
pub fn empty_object() -> Value {
    Node::Object {
        properties: Vec::new(),
        required: None,
        additional: None,
        description: None,
    }
    .write()
}

/// The restricted schema model.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Object {
        properties: Vec<(String, Node)>,
        required: Option<Vec<String>>,
        additional: Option<bool>,
        description: Option<String>,
    },
    String {
        description: Option<String>,
        pattern: Option<String>,
        format: Option<&'static str>,
        enumeration: Option<Vec<String>>,
    },
    /// `number` (JSON numbers kept as written) or `integer` (values are i64).
    Numeric {
        type_name: &'static str,
        description: Option<String>,
        limits: [Option<Number>; 7],
    },
    /// `boolean` or `null`.
    Plain {
        type_name: &'static str,
        description: Option<String>,
    },
    Array {
        items: Box<Node>,
        description: Option<String>,
    },
    TypeList {
        types: Vec<&'static str>,
        description: Option<String>,
    },
    AnyOf {
        members: Vec<Node>,
        description: Option<String>,
    },
    Ref(String),
}

// ---------------------------------------------------------------------------------------
// Reading

/// Any subschema: a typed node, a list of primitive types, `anyOf`, or `$ref`, chosen by
/// which key is present (in that priority).
fn read_schema(value: &Value) -> Result<Node, String> {
    let Some(map) = value.as_object() else {
        return Err(ONE_OF_REQUIRED.to_owned());
    };
    if let Some(type_value) = map.get("type") {
        if let Value::Array(types) = type_value {
            return read_type_list(types, map);
        }
        return read_typed(value);
    }
    if let Some(members) = map.get("anyOf") {
        return read_any_of(members, map);
    }
    if let Some(reference) = map.get("$ref") {
        return match reference {
            Value::String(s) => Ok(Node::Ref(s.clone())),
            other => Err(format!(
                "field `$ref`: invalid type: {}, expected a string",
                unexpected(other)
            )),
        };
    }
    Err(ONE_OF_REQUIRED.to_owned())
}

fn read_type_list(types: &[Value], map: &Map<String, Value>) -> Result<Node, String> {
    let types = types
        .iter()
        .map(|t| unit_variant(t, &PRIMITIVE_TYPES))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("field `type`: {e}"))?;
    let description = field_description(map)?;
    Ok(Node::TypeList { types, description })
}

fn read_any_of(members: &Value, map: &Map<String, Value>) -> Result<Node, String> {
    let Value::Array(items) = members else {
        return Err(format!(
            "field `anyOf`: invalid type: {}, expected a sequence",
            unexpected(members)
        ));
    };
    let members = items
        .iter()
        .map(read_typed)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("field `anyOf`: {e}"))?;
    let description = field_description(map)?;
    Ok(Node::AnyOf {
        members,
        description,
    })
}

fn field_description(map: &Map<String, Value>) -> Result<Option<String>, String> {
    map.get("description")
        .map_or(Ok(None), opt_string)
        .map_err(|e| format!("field `description`: {e}"))
}

/// A node that must carry a `type` tag naming one of the seven schema types.
fn read_typed(value: &Value) -> Result<Node, String> {
    let map = match value {
        Value::Object(map) => map,
        Value::Array(items) => return Err(sequence_form_error(items)),
        other => {
            return Err(format!(
                "invalid type: {}, expected internally tagged enum {TYPED_ENUM}",
                unexpected(other)
            ))
        }
    };
    let tag = match map.get("type") {
        None => return Err("missing field `type`".to_owned()),
        Some(Value::String(s)) => variant(s, &SCHEMA_TYPES)?,
        Some(other) => {
            return Err(format!(
                "invalid type: {}, expected variant identifier",
                unexpected(other)
            ))
        }
    };
    let fields = map.iter().filter(|(k, _)| k.as_str() != "type");
    match tag {
        "object" => {
            let (mut properties, mut required, mut additional, mut description) =
                (Vec::new(), None, None, None);
            for (key, v) in fields {
                match key.as_str() {
                    "properties" => properties = read_properties(v)?,
                    "required" => required = opt_string_list(v)?,
                    "additionalProperties" => additional = opt_bool(v)?,
                    "description" => description = opt_string(v)?,
                    _ => {}
                }
            }
            Ok(Node::Object {
                properties,
                required,
                additional,
                description,
            })
        }
        "string" => {
            let (mut description, mut pattern, mut format, mut enumeration) =
                (None, None, None, None);
            for (key, v) in fields {
                match key.as_str() {
                    "description" => description = opt_string(v)?,
                    "pattern" => pattern = opt_string(v)?,
                    "format" => format = opt_format(v)?,
                    "enum" => enumeration = opt_string_list(v)?,
                    _ => {}
                }
            }
            Ok(Node::String {
                description,
                pattern,
                format,
                enumeration,
            })
        }
        "number" | "integer" => {
            let integer = tag == "integer";
            let mut description = None;
            let mut limits: [Option<Number>; 7] = Default::default();
            for (key, v) in fields {
                if key == "description" {
                    description = opt_string(v)?;
                } else if let Some(slot) = NUMERIC_KEYS
                    .iter()
                    .position(|k| k == key)
                    .and_then(|i| limits.get_mut(i))
                {
                    *slot = if integer { opt_i64(v)? } else { opt_number(v)? };
                }
            }
            Ok(Node::Numeric {
                type_name: tag,
                description,
                limits,
            })
        }
        "array" => {
            let (mut items, mut description) = (None, None);
            for (key, v) in fields {
                match key.as_str() {
                    "items" => items = Some(read_schema(v)?),
                    "description" => description = opt_string(v)?,
                    _ => {}
                }
            }
            let items = items.ok_or_else(|| "missing field `items`".to_owned())?;
            Ok(Node::Array {
                items: Box::new(items),
                description,
            })
        }
        _ => {
            let mut description = None;
            for (key, v) in fields {
                if key == "description" {
                    description = opt_string(v)?;
                }
            }
            Ok(Node::Plain {
                type_name: tag,
                description,
            })
        }
    }
}

/// serde also accepts a tagged enum written as a sequence `[tag, field, …]`; no real schema
/// does that, so only the reference's error for the short form is reproduced.
fn sequence_form_error(items: &[Value]) -> String {
    let Some(first) = items.first() else {
        return "missing field `type`".to_owned();
    };
    let tag = match first {
        Value::String(s) => match variant(s, &SCHEMA_TYPES) {
            Ok(tag) => tag,
            Err(e) => return e,
        },
        other => {
            return format!(
                "invalid type: {}, expected variant identifier",
                unexpected(other)
            )
        }
    };
    let (name, fields) = match tag {
        "object" => ("Object", 5),
        "string" => ("String", 4),
        "number" => ("Number", 8),
        "integer" => ("Integer", 8),
        "boolean" => ("Boolean", 1),
        "array" => ("Array", 2),
        _ => ("Null", 1),
    };
    let element_word = if fields == 1 { "element" } else { "elements" };
    format!(
        "invalid length {}, expected struct variant {TYPED_ENUM}::{name} with {fields} {element_word}",
        items.len().saturating_sub(1)
    )
}

fn read_properties(value: &Value) -> Result<Vec<(String, Node)>, String> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| Ok((k.clone(), read_schema(v)?)))
            .collect(),
        other => Err(format!(
            "invalid type: {}, expected a map",
            unexpected(other)
        )),
    }
}

/// A unit variant of a string enum, spelled as a string or as `{"name": null}`.
fn unit_variant(value: &Value, names: &[&'static str]) -> Result<&'static str, String> {
    match value {
        Value::String(s) => variant(s, names),
        Value::Object(map) => {
            let mut entries = map.iter();
            match (entries.next(), entries.next()) {
                (Some((key, inner)), None) => {
                    let name = variant(key, names)?;
                    match inner {
                        Value::Null => Ok(name),
                        other => Err(format!(
                            "invalid type: {}, expected unit",
                            unexpected(other)
                        )),
                    }
                }
                _ => Err("invalid value: map, expected map with a single key".to_owned()),
            }
        }
        other => Err(format!(
            "invalid type: {}, expected string or map",
            unexpected(other)
        )),
    }
}

fn variant(name: &str, names: &[&'static str]) -> Result<&'static str, String> {
    names.iter().find(|n| **n == name).copied().ok_or_else(|| {
        let expected: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        format!(
            "unknown variant `{name}`, expected one of {}",
            expected.join(", ")
        )
    })
}

fn opt_string(value: &Value) -> Result<Option<String>, String> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(format!(
            "invalid type: {}, expected a string",
            unexpected(other)
        )),
    }
}

fn opt_bool(value: &Value) -> Result<Option<bool>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(*b)),
        other => Err(format!(
            "invalid type: {}, expected a boolean",
            unexpected(other)
        )),
    }
}

fn opt_string_list(value: &Value) -> Result<Option<Vec<String>>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "invalid type: {}, expected a string",
                    unexpected(other)
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        other => Err(format!(
            "invalid type: {}, expected a sequence",
            unexpected(other)
        )),
    }
}

fn opt_format(value: &Value) -> Result<Option<&'static str>, String> {
    match value {
        Value::Null => Ok(None),
        other => unit_variant(other, &STRING_FORMATS).map(Some),
    }
}

fn opt_number(value: &Value) -> Result<Option<Number>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(Some(n.clone())),
        other => Err(format!(
            "invalid type: {}, expected a JSON number",
            unexpected(other)
        )),
    }
}

fn opt_i64(value: &Value) -> Result<Option<Number>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(Some(Number::from(i)))
            } else if n.is_u64() {
                Err(format!("invalid value: integer `{n}`, expected i64"))
            } else {
                Err(format!("invalid type: {}, expected i64", unexpected(value)))
            }
        }
        other => Err(format!("invalid type: {}, expected i64", unexpected(other))),
    }
}

// ---------------------------------------------------------------------------------------
// Checking

/// Children first, then the node's own `required` and `additionalProperties`.
fn check(node: &Node, top: bool) -> Result<(), String> {
    match node {
        Node::Object {
            properties,
            required,
            additional,
            ..
        } => {
            if properties.is_empty() && !top {
                return Err(NO_PROPERTIES.to_owned());
            }
            for (_, child) in properties {
                check(child, false)?;
            }
            if let Some(required) = required {
                let declared: HashSet<&str> = properties.iter().map(|(k, _)| k.as_str()).collect();
                let mut seen: HashSet<&str> = HashSet::with_capacity(required.len());
                for name in required {
                    if !seen.insert(name.as_str()) {
                        return Err(format!("Duplicate required property '{name}'"));
                    }
                    if !declared.contains(name.as_str()) {
                        return Err(format!("Required property '{name}' not found in object"));
                    }
                }
                if required.len() != properties.len() {
                    return Err(REQUIRED_MISMATCH.to_owned());
                }
            }
            if *additional == Some(true) {
                return Err(ADDITIONAL_TRUE.to_owned());
            }
            Ok(())
        }
        Node::Array { items, .. } => check(items, false),
        Node::AnyOf { members, .. } => members.iter().try_for_each(|m| check(m, top)),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------
// Writing

impl Node {
    fn write(&self) -> Value {
        let mut out = Map::new();
        match self {
            Node::Object {
                properties,
                description,
                ..
            } => {
                out.insert("type".into(), "object".into());
                let props: Map<String, Value> = properties
                    .iter()
                    .map(|(k, v)| (k.clone(), v.write()))
                    .collect();
                let names: Vec<Value> = properties
                    .iter()
                    .map(|(k, _)| Value::String(k.clone()))
                    .collect();
                out.insert("properties".into(), Value::Object(props));
                out.insert("additionalProperties".into(), Value::Bool(false));
                out.insert("required".into(), Value::Array(names));
                put_description(&mut out, description);
            }
            Node::String {
                description,
                pattern,
                format,
                enumeration,
            } => {
                out.insert("type".into(), "string".into());
                put_description(&mut out, description);
                if let Some(p) = pattern {
                    out.insert("pattern".into(), Value::String(p.clone()));
                }
                if let Some(f) = format {
                    out.insert("format".into(), Value::String((*f).to_owned()));
                }
                if let Some(e) = enumeration {
                    out.insert(
                        "enum".into(),
                        Value::Array(e.iter().cloned().map(Value::String).collect()),
                    );
                }
            }
            Node::Numeric {
                type_name,
                description,
                limits,
            } => {
                out.insert("type".into(), (*type_name).into());
                put_description(&mut out, description);
                for (key, limit) in NUMERIC_KEYS.iter().zip(limits) {
                    if let Some(n) = limit {
                        out.insert((*key).to_owned(), Value::Number(n.clone()));
                    }
                }
            }
            Node::Plain {
                type_name,
                description,
            } => {
                out.insert("type".into(), (*type_name).into());
                put_description(&mut out, description);
            }
            Node::Array { items, description } => {
                out.insert("type".into(), "array".into());
                out.insert("items".into(), items.write());
                put_description(&mut out, description);
            }
            Node::TypeList { types, description } => {
                out.insert(
                    "type".into(),
                    Value::Array(types.iter().map(|t| Value::from(*t)).collect()),
                );
                put_description(&mut out, description);
            }
            Node::AnyOf {
                members,
                description,
            } => {
                out.insert(
                    "anyOf".into(),
                    Value::Array(members.iter().map(Node::write).collect()),
                );
                put_description(&mut out, description);
            }
            Node::Ref(reference) => {
                out.insert("$ref".into(), Value::String(reference.clone()));
            }
        }
        Value::Object(out)
    }
}

fn put_description(out: &mut Map<String, Value>, description: &Option<String>) {
    if let Some(d) = description {
        out.insert("description".into(), Value::String(d.clone()));
    }
}
