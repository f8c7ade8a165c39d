//! Non-strict schemas (`tests/fixtures/probes.jsonl`): the checks the reference's JSON-Schema
//! validator makes when it compiles a schema, with its messages.
//!
//! 1. `$schema` at the top picks the draft: 2020-12 (the default, and the one used for an
//!    unknown `$schema`, which is rejected after the meta-schema check) or draft-07. Drafts
//!    2019-09, 06 and 04 are accepted unchecked.
//! 2. The schema is checked against the draft's meta-schema. A meta-schema is a list of
//!    vocabularies; each vocabulary checks the keys it owns in the order the request wrote
//!    them, and vocabularies run in a fixed order (`GROUPS_2020_12`; draft-07 has one).
//!    2020-12 asserts no formats here; draft-07 asserts `regex`, `uri` and
//!    `uri-reference`. Only the keys whose violations the reference reports are modelled;
//!    every other key is accepted as is.
//! 3. 2020-12: `$id` values must be URI references.
//! 4. The schema is compiled: (2020-12) `pattern`s and `patternProperties` names must be
//!    regexes, and each `$ref` / `$dynamicRef` reachable from the root (followed through
//!    its target) must parse and point at something in this document.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::regex::{compiles, is_ecma_regex};
use super::uri;

/// Check a non-strict schema; the error is the bare message the reference reports.
pub fn validate(root: &Value) -> Result<(), String> {
    let draft = detect_draft(root);
    let vocabularies = match draft {
        Draft::Older => return Ok(()),
        Draft::Draft7 => &GROUPS_07[..],
        Draft::Latest | Draft::Unknown => &GROUPS_2020_12[..],
    };
    check_schema(vocabularies, root)?;
    if draft == Draft::Draft7 {
        return Compiler::new(root, true).compile(root);
    }
    check_ids(root)?;
    if let (Draft::Unknown, Some(Value::String(uri))) = (draft, root.get("$schema")) {
        return Err(format!(
            "Unknown meta-schema: '{uri}'. Custom meta-schemas must be registered in the registry before use"
        ));
    }
    Compiler::new(root, false).compile(root)
}

// ---------------------------------------------------------------------------------------
// Draft detection

const DRAFT_2020_12: [&str; 2] = [
    "json-schema.org/draft/2020-12/schema",
    "json-schema.org/schema",
];
const DRAFT_07: &str = "json-schema.org/draft-07/schema";
const OLDER_DRAFTS: [&str; 3] = [
    "json-schema.org/draft/2019-09/schema",
    "json-schema.org/draft-06/schema",
    "json-schema.org/draft-04/schema",
];

/// The json-schema.org address of a `$schema` value without scheme and empty fragment.
fn meta_schema_address(uri: &str) -> &str {
    let uri = uri.strip_suffix('#').unwrap_or(uri);
    uri.strip_prefix("https://")
        .or_else(|| uri.strip_prefix("http://"))
        .unwrap_or(uri)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Draft {
    /// 2020-12: no `$schema`, or one naming it.
    Latest,
    Draft7,
    /// A draft the reference knows but this crate does not model: accepted unchecked.
    Older,
    /// Any other `$schema`: checked as 2020-12, then rejected when compiling.
    Unknown,
}

fn detect_draft(root: &Value) -> Draft {
    let Some(Value::String(uri)) = root.get("$schema") else {
        return Draft::Latest;
    };
    let address = meta_schema_address(uri);
    if DRAFT_2020_12.contains(&address) {
        Draft::Latest
    } else if address == DRAFT_07 {
        Draft::Draft7
    } else if OLDER_DRAFTS.contains(&address) {
        Draft::Older
    } else {
        Draft::Unknown
    }
}

/// Documents the reference's registry holds: the 2020-12 meta-schema and its vocabularies.
fn in_registry(absolute: &str) -> bool {
    const VOCABULARIES: [&str; 7] = [
        "core",
        "applicator",
        "unevaluated",
        "validation",
        "meta-data",
        "format-annotation",
        "content",
    ];
    let Some(rest) = absolute.strip_prefix("https://json-schema.org/draft/2020-12/") else {
        return false;
    };
    rest == "schema"
        || rest
            .strip_prefix("meta/")
            .is_some_and(|v| VOCABULARIES.contains(&v))
}

/// Addresses under a known draft's prefix are never fetched, with a message of their own.
fn under_known_draft(absolute: &str) -> bool {
    [
        "https://json-schema.org/draft/2020-12/",
        "https://json-schema.org/draft/2019-09/",
        "http://json-schema.org/draft-07/",
        "http://json-schema.org/draft-06/",
        "http://json-schema.org/draft-04/",
    ]
    .iter()
    .any(|prefix| absolute.starts_with(prefix))
}

// ---------------------------------------------------------------------------------------
// The meta-schema

/// How the meta-schema constrains the value of one keyword.
#[derive(Clone, Copy)]
enum Rule {
    /// Any schema (object or boolean), checked recursively.
    Schema,
    /// An object whose values are schemas (`properties`, `$defs`, …).
    SchemaMap,
    /// A non-empty array of schemas (`allOf`, `prefixItems`, …).
    SchemaArray,
    /// `dependencies`: each value a schema or a string array.
    Dependencies,
    Str,
    /// `$anchor`-like names.
    Anchor,
    /// `$id`: a string without a non-empty fragment.
    Id,
    Vocabulary,
    Number,
    MultipleOf,
    NonNegativeInteger,
    Boolean,
    StringArray,
    DependentRequired,
    Type,
    Array,
    /// Draft-07 `items`: a schema or a non-empty array of schemas.
    Items07,
    /// A string in `format: "uri-reference"` (draft-07 asserts it).
    UriReference,
    /// A string in `format: "uri"` (draft-07).
    Uri,
    /// A string in `format: "regex"` (draft-07).
    Regex,
    /// Draft-07 `patternProperties`: a schema map whose names are regexes.
    PatternProperties07,
}

type Group = &'static [(&'static str, Rule)];

/// Vocabularies in the order the validator evaluates them.
const GROUPS_2020_12: [Group; 8] = [
    // The meta-schema's own `properties` (deprecated keywords).
    &[
        ("definitions", Rule::SchemaMap),
        ("dependencies", Rule::Dependencies),
        ("$recursiveAnchor", Rule::Anchor),
        ("$recursiveRef", Rule::Str),
    ],
    // core
    &[
        ("$id", Rule::Id),
        ("$schema", Rule::Str),
        ("$ref", Rule::Str),
        ("$anchor", Rule::Anchor),
        ("$dynamicRef", Rule::Str),
        ("$dynamicAnchor", Rule::Anchor),
        ("$vocabulary", Rule::Vocabulary),
        ("$comment", Rule::Str),
        ("$defs", Rule::SchemaMap),
    ],
    // applicator
    &[
        ("prefixItems", Rule::SchemaArray),
        ("items", Rule::Schema),
        ("contains", Rule::Schema),
        ("additionalProperties", Rule::Schema),
        ("properties", Rule::SchemaMap),
        ("patternProperties", Rule::SchemaMap),
        ("dependentSchemas", Rule::SchemaMap),
        ("propertyNames", Rule::Schema),
        ("if", Rule::Schema),
        ("then", Rule::Schema),
        ("else", Rule::Schema),
        ("allOf", Rule::SchemaArray),
        ("anyOf", Rule::SchemaArray),
        ("oneOf", Rule::SchemaArray),
        ("not", Rule::Schema),
    ],
    // unevaluated
    &[
        ("unevaluatedItems", Rule::Schema),
        ("unevaluatedProperties", Rule::Schema),
    ],
    // validation
    &[
        ("type", Rule::Type),
        ("enum", Rule::Array),
        ("multipleOf", Rule::MultipleOf),
        ("maximum", Rule::Number),
        ("exclusiveMaximum", Rule::Number),
        ("minimum", Rule::Number),
        ("exclusiveMinimum", Rule::Number),
        ("maxLength", Rule::NonNegativeInteger),
        ("minLength", Rule::NonNegativeInteger),
        ("pattern", Rule::Str),
        ("maxItems", Rule::NonNegativeInteger),
        ("minItems", Rule::NonNegativeInteger),
        ("uniqueItems", Rule::Boolean),
        ("maxContains", Rule::NonNegativeInteger),
        ("minContains", Rule::NonNegativeInteger),
        ("maxProperties", Rule::NonNegativeInteger),
        ("minProperties", Rule::NonNegativeInteger),
        ("required", Rule::StringArray),
        ("dependentRequired", Rule::DependentRequired),
    ],
    // meta-data
    &[
        ("title", Rule::Str),
        ("description", Rule::Str),
        ("deprecated", Rule::Boolean),
        ("readOnly", Rule::Boolean),
        ("writeOnly", Rule::Boolean),
        ("examples", Rule::Array),
    ],
    // format-annotation
    &[("format", Rule::Str)],
    // content
    &[
        ("contentEncoding", Rule::Str),
        ("contentMediaType", Rule::Str),
        ("contentSchema", Rule::Schema),
    ],
];

/// The draft-07 meta-schema: one object, its keys checked in request order.
const GROUPS_07: [Group; 1] = [&[
    ("$id", Rule::UriReference),
    ("$schema", Rule::Uri),
    ("$ref", Rule::UriReference),
    ("$comment", Rule::Str),
    ("title", Rule::Str),
    ("description", Rule::Str),
    ("readOnly", Rule::Boolean),
    ("writeOnly", Rule::Boolean),
    ("examples", Rule::Array),
    ("multipleOf", Rule::MultipleOf),
    ("maximum", Rule::Number),
    ("exclusiveMaximum", Rule::Number),
    ("minimum", Rule::Number),
    ("exclusiveMinimum", Rule::Number),
    ("maxLength", Rule::NonNegativeInteger),
    ("minLength", Rule::NonNegativeInteger),
    ("pattern", Rule::Regex),
    ("additionalItems", Rule::Schema),
    ("items", Rule::Items07),
    ("maxItems", Rule::NonNegativeInteger),
    ("minItems", Rule::NonNegativeInteger),
    ("uniqueItems", Rule::Boolean),
    ("contains", Rule::Schema),
    ("maxProperties", Rule::NonNegativeInteger),
    ("minProperties", Rule::NonNegativeInteger),
    ("required", Rule::StringArray),
    ("additionalProperties", Rule::Schema),
    ("definitions", Rule::SchemaMap),
    ("properties", Rule::SchemaMap),
    ("patternProperties", Rule::PatternProperties07),
    ("dependencies", Rule::Dependencies),
    ("propertyNames", Rule::Schema),
    ("enum", Rule::Array),
    ("type", Rule::Type),
    ("format", Rule::Str),
    ("contentMediaType", Rule::Str),
    ("contentEncoding", Rule::Str),
    ("if", Rule::Schema),
    ("then", Rule::Schema),
    ("else", Rule::Schema),
    ("allOf", Rule::SchemaArray),
    ("anyOf", Rule::SchemaArray),
    ("oneOf", Rule::SchemaArray),
    ("not", Rule::Schema),
]];

const SIMPLE_TYPES: [&str; 7] = [
    "array", "boolean", "integer", "null", "number", "object", "string",
];
const ANCHOR_PATTERN: &str = "^[A-Za-z_][-A-Za-z0-9._]*$";
const ID_PATTERN: &str = "^[^#]*#?$";

fn check_schema(vocabularies: &[Group], value: &Value) -> Result<(), String> {
    let map = match value {
        Value::Object(map) => map,
        Value::Bool(_) => return Ok(()),
        other => return Err(not_a_schema(other)),
    };
    for group in vocabularies {
        for (key, v) in map {
            if let Some((_, rule)) = group.iter().find(|(k, _)| k == key) {
                check_rule(vocabularies, *rule, v)?;
            }
        }
    }
    Ok(())
}

fn check_rule(vocabularies: &[Group], rule: Rule, v: &Value) -> Result<(), String> {
    let check_schema = |v: &Value| check_schema(vocabularies, v);
    match rule {
        Rule::Schema => check_schema(v),
        Rule::SchemaMap => object(v)?.values().try_for_each(check_schema),
        Rule::Items07 => {
            let valid = check_schema(v).is_ok()
                || v.as_array().is_some_and(|items| {
                    !items.is_empty() && items.iter().all(|i| check_schema(i).is_ok())
                });
            if valid {
                Ok(())
            } else {
                Err(not_any_of(v))
            }
        }
        Rule::UriReference => {
            let s = string(v)?;
            uri::check_reference(s).map_err(|_| not_a_format(v, "uri-reference"))
        }
        Rule::Uri => {
            let s = string(v)?;
            if uri::check_reference(s).is_ok() && uri::has_scheme(s) {
                Ok(())
            } else {
                Err(not_a_format(v, "uri"))
            }
        }
        Rule::Regex => {
            if is_ecma_regex(string(v)?) {
                Ok(())
            } else {
                Err(not_a_format(v, "regex"))
            }
        }
        Rule::PatternProperties07 => {
            let map = object(v)?;
            map.values().try_for_each(check_schema)?;
            match map.keys().find(|name| !is_ecma_regex(name)) {
                Some(name) => Err(not_a_format(&Value::String(name.clone()), "regex")),
                None => Ok(()),
            }
        }
        Rule::SchemaArray => {
            let items = array(v)?;
            if items.is_empty() {
                return Err(format!("{} has less than 1 item", compact(v)));
            }
            items.iter().try_for_each(check_schema)
        }
        Rule::Dependencies => {
            for dependency in object(v)?.values() {
                if check_schema(dependency).is_err() && !is_string_array(dependency) {
                    return Err(not_any_of(dependency));
                }
            }
            Ok(())
        }
        Rule::Str => string(v).map(|_| ()),
        Rule::Anchor => matches_pattern(v, string(v)?, is_anchor, ANCHOR_PATTERN),
        Rule::Id => matches_pattern(
            v,
            string(v)?,
            |s| s.find('#').is_none_or(|i| i + 1 == s.len()),
            ID_PATTERN,
        ),
        Rule::Vocabulary => object(v)?
            .values()
            .try_for_each(|flag| boolean(flag).map(|_| ())),
        Rule::Number => number(v).map(|_| ()),
        Rule::MultipleOf => {
            if number(v)? <= 0.0 {
                return Err(format!(
                    "{} is less than or equal to the minimum of 0",
                    compact(v)
                ));
            }
            Ok(())
        }
        Rule::NonNegativeInteger => {
            if !is_integer(v) {
                return Err(not_of_type(v, "integer"));
            }
            if number(v)? < 0.0 {
                return Err(format!("{} is less than the minimum of 0", compact(v)));
            }
            Ok(())
        }
        Rule::Boolean => boolean(v).map(|_| ()),
        Rule::StringArray => check_string_array(v),
        Rule::DependentRequired => object(v)?.values().try_for_each(check_string_array),
        Rule::Type => {
            let valid = match v {
                Value::String(s) => SIMPLE_TYPES.contains(&s.as_str()),
                Value::Array(items) => {
                    !items.is_empty()
                        && items
                            .iter()
                            .all(|t| t.as_str().is_some_and(|s| SIMPLE_TYPES.contains(&s)))
                        && all_unique(items)
                }
                _ => false,
            };
            if valid {
                Ok(())
            } else {
                Err(not_any_of(v))
            }
        }
        Rule::Array => array(v).map(|_| ()),
    }
}

fn check_string_array(v: &Value) -> Result<(), String> {
    let items = array(v)?;
    for item in items {
        string(item)?;
    }
    if !all_unique(items) {
        return Err(format!("{} has non-unique elements", compact(v)));
    }
    Ok(())
}

fn is_string_array(v: &Value) -> bool {
    check_string_array(v).is_ok()
}

fn matches_pattern(
    v: &Value,
    s: &str,
    test: impl Fn(&str) -> bool,
    pattern: &str,
) -> Result<(), String> {
    if test(s) {
        Ok(())
    } else {
        Err(format!("{} does not match \"{pattern}\"", compact(v)))
    }
}

fn is_anchor(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
}

fn object(v: &Value) -> Result<&Map<String, Value>, String> {
    v.as_object().ok_or_else(|| not_of_type(v, "object"))
}

fn array(v: &Value) -> Result<&Vec<Value>, String> {
    v.as_array().ok_or_else(|| not_of_type(v, "array"))
}

fn string(v: &Value) -> Result<&str, String> {
    v.as_str().ok_or_else(|| not_of_type(v, "string"))
}

fn boolean(v: &Value) -> Result<bool, String> {
    v.as_bool().ok_or_else(|| not_of_type(v, "boolean"))
}

fn number(v: &Value) -> Result<f64, String> {
    v.as_f64().ok_or_else(|| not_of_type(v, "number"))
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(i), Some(j), _, _) => i == j,
                (_, _, Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| json_equal(p, q)))
        }
        _ => a == b,
    }
}

fn all_unique(items: &[Value]) -> bool {
    // Strings (the common case: `required`, `type`) by hashing; anything else pairwise.
    if let Some(strings) = items.iter().map(Value::as_str).collect::<Option<Vec<_>>>() {
        let mut seen = HashSet::with_capacity(strings.len());
        return strings.into_iter().all(|s| seen.insert(s));
    }
    items
        .iter()
        .enumerate()
        .all(|(i, a)| items.iter().skip(i + 1).all(|b| !json_equal(a, b)))
}

fn compact(v: &Value) -> String {
    v.to_string()
}

fn not_of_type(v: &Value, type_name: &str) -> String {
    format!("{} is not of type \"{type_name}\"", compact(v))
}

fn not_a_schema(v: &Value) -> String {
    format!("{} is not of types \"boolean\", \"object\"", compact(v))
}

fn not_a_format(v: &Value, format: &str) -> String {
    format!("{} is not a \"{format}\"", compact(v))
}

fn not_any_of(v: &Value) -> String {
    format!(
        "{} is not valid under any of the schemas listed in the 'anyOf' keyword",
        compact(v)
    )
}

// ---------------------------------------------------------------------------------------
// References

/// Keywords whose value is one subschema, an object of subschemas, or an array of them:
/// where the validator looks for `$id` and anchors.
const ONE_SUBSCHEMA: [&str; 13] = [
    "items",
    "contains",
    "additionalProperties",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
    "additionalItems",
    "$recursiveRef",
];
const SUBSCHEMA_MAPS: [&str; 6] = [
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
];
const SUBSCHEMA_LISTS: [&str; 4] = ["prefixItems", "allOf", "anyOf", "oneOf"];

/// The direct subschemas of a schema object, in key order.
fn subschemas(map: &Map<String, Value>) -> Vec<&Value> {
    let mut out = Vec::new();
    for (key, v) in map {
        let key = key.as_str();
        if ONE_SUBSCHEMA.contains(&key) {
            out.push(v);
        } else if SUBSCHEMA_MAPS.contains(&key) {
            out.extend(v.as_object().into_iter().flat_map(|m| m.values()));
        } else if SUBSCHEMA_LISTS.contains(&key) {
            out.extend(v.as_array().into_iter().flatten());
        }
    }
    out
}

/// Every `$id` in a subschema position must be a URI reference.
fn check_ids(value: &Value) -> Result<(), String> {
    let Value::Object(map) = value else {
        return Ok(());
    };
    if let Some(Value::String(id)) = map.get("$id") {
        uri::check_reference(id)?;
    }
    subschemas(map).into_iter().try_for_each(check_ids)
}

/// Compiles the reachable part of a schema the way the reference does, only to find what
/// fails to compile: `pattern` and `patternProperties` names that are not regexes, and
/// references that do not resolve. Keywords are compiled in key order; `$defs` only
/// through a reference; `if` (with `then`/`else`) only when `then` or `else` is present.
struct Compiler<'a> {
    root: &'a Value,
    /// The absolute `$id` of the root, when it has one.
    base: Option<&'a str>,
    /// Reference targets already compiled (cycles are fine).
    visited: HashSet<String>,
    /// How many references deep the walk is; chains longer than [`MAX_REF_DEPTH`] are not
    /// followed further (bounded stack on hostile input).
    ref_depth: usize,
    /// Draft-07 rules: a `$ref` hides its sibling keywords.
    draft7: bool,
}

const MAX_REF_DEPTH: usize = 64;

/// Keywords compiled as one subschema.
const COMPILED_ONE: [&str; 8] = [
    "items",
    "contains",
    "additionalProperties",
    "propertyNames",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "$recursiveRef",
];
/// Keywords compiled as an object of subschemas (`patternProperties` handled apart).
const COMPILED_MAPS: [&str; 3] = ["properties", "dependentSchemas", "dependencies"];

impl<'a> Compiler<'a> {
    fn new(root: &'a Value, draft7: bool) -> Self {
        let base = root
            .get("$id")
            .and_then(Value::as_str)
            .map(|id| id.split('#').next().unwrap_or(id))
            .filter(|id| uri::has_scheme(id));
        Self {
            root,
            base,
            visited: HashSet::new(),
            ref_depth: 0,
            draft7,
        }
    }

    fn compile(&mut self, schema: &'a Value) -> Result<(), String> {
        let Some(map) = schema.as_object() else {
            return Ok(());
        };
        if self.draft7 {
            if let Some(reference) = map.get("$ref") {
                return match reference {
                    Value::String(reference) => self.resolve(reference),
                    _ => Ok(()),
                };
            }
        }
        for (key, v) in map {
            match key.as_str() {
                // Only meaningful (and compiled) next to an array of `items`.
                "additionalItems"
                    if self.draft7 && map.get("items").is_some_and(Value::is_array) =>
                {
                    self.compile(v)?
                }
                "items" if v.is_array() => {
                    for sub in v.as_array().into_iter().flatten() {
                        self.compile(sub)?;
                    }
                }
                "$ref" | "$dynamicRef" => {
                    if let Value::String(reference) = v {
                        self.resolve(reference)?;
                    }
                }
                "pattern" => {
                    if let Value::String(pattern) = v {
                        if !compiles(pattern) {
                            return Err(format!("{} is not a \"regex\"", compact(v)));
                        }
                    }
                }
                "patternProperties" => {
                    for (name, sub) in v.as_object().into_iter().flatten() {
                        if !compiles(name) {
                            // The reference names the subschema, not the offending name.
                            return Err(format!("{} is not a \"regex\"", compact(sub)));
                        }
                        self.compile(sub)?;
                    }
                }
                "if" if map.contains_key("then") || map.contains_key("else") => {
                    self.compile(v)?;
                    for branch in ["then", "else"] {
                        if let Some(b) = map.get(branch) {
                            self.compile(b)?;
                        }
                    }
                }
                k if COMPILED_ONE.contains(&k) => self.compile(v)?,
                k if COMPILED_MAPS.contains(&k) => {
                    for sub in v.as_object().into_iter().flat_map(|m| m.values()) {
                        self.compile(sub)?;
                    }
                }
                k if SUBSCHEMA_LISTS.contains(&k) => {
                    for sub in v.as_array().into_iter().flatten() {
                        self.compile(sub)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn resolve(&mut self, reference: &str) -> Result<(), String> {
        uri::check_reference(reference)?;
        let (resource, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        if !resource.is_empty() {
            let absolute = match self.base {
                _ if uri::has_scheme(resource) => uri::normalize(resource),
                Some(base) => uri::resolve(base, resource),
                None => {
                    return Err(format!(
                        "Resource '{reference}' is not present in a registry and retrieving it failed: No base URI is available"
                    ))
                }
            };
            if self.base.map(uri::normalize).as_deref() != Some(absolute.as_str()) {
                if in_registry(&absolute)
                    || (self.draft7 && absolute == "http://json-schema.org/draft-07/schema")
                {
                    return Ok(());
                }
                let why = if under_known_draft(&absolute) {
                    "Retrieving external resources is not supported once the registry is populated"
                        .to_owned()
                } else {
                    format!("Retrieval is disabled, cannot fetch {absolute}")
                };
                return Err(format!(
                    "Resource '{absolute}' is not present in a registry and retrieving it failed: {why}"
                ));
            }
        }
        let (target, key) = if fragment.is_empty() || fragment.starts_with('/') {
            let target = lookup_pointer(self.root, fragment)
                .ok_or_else(|| format!("Pointer '{fragment}' does not exist"))?;
            (target, fragment.to_owned())
        } else {
            let target = find_anchor(self.root, fragment)
                .ok_or_else(|| format!("Anchor '{fragment}' does not exist"))?;
            (target, format!("#{fragment}"))
        };
        if !matches!(target, Value::Object(_) | Value::Bool(_)) {
            return Err(not_a_schema(target));
        }
        if self.visited.contains(&key) || self.ref_depth >= MAX_REF_DEPTH {
            return Ok(());
        }
        self.visited.insert(key);
        self.ref_depth += 1;
        let compiled = self.compile(target);
        self.ref_depth -= 1;
        compiled
    }
}

/// A JSON pointer from a URI fragment: percent-decoded, then `~1` / `~0` unescaped.
fn lookup_pointer<'v>(root: &'v Value, fragment: &str) -> Option<&'v Value> {
    let decoded = percent_decode(fragment)?;
    if decoded.is_empty() {
        return Some(root);
    }
    let mut current = root;
    for token in decoded.strip_prefix('/')?.split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        current = match current {
            Value::Object(map) => map.get(&token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn find_anchor<'v>(value: &'v Value, name: &str) -> Option<&'v Value> {
    let map = value.as_object()?;
    let named = |key: &str| map.get(key).and_then(Value::as_str) == Some(name);
    let id_anchor = map
        .get("$id")
        .and_then(Value::as_str)
        .and_then(|id| id.strip_prefix('#'))
        == Some(name);
    if named("$anchor") || named("$dynamicAnchor") || id_anchor {
        return Some(value);
    }
    subschemas(map)
        .into_iter()
        .find_map(|v| find_anchor(v, name))
}
