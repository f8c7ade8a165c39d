//! Non-strict schemas (behavior.md §7.6): the checks the reference's JSON-Schema validator
//! makes when it compiles a schema, with its messages.
//!
//! 1. `$schema` at the top picks the draft. Draft 2020-12 (the default) is checked; an
//!    older draft the reference knows is accepted unchecked; anything else is an error.
//! 2. The schema is checked against the 2020-12 meta-schema. The meta-schema is a list of
//!    vocabularies; each vocabulary checks the keys it owns in the order the request wrote
//!    them, and vocabularies run in a fixed order (`GROUPS`). Only the keys whose violations
//!    the reference reports are modelled; every other key is accepted as is.
//! 3. References are resolved as the validator compiles: `$id` values must be URI
//!    references, and each `$ref` / `$dynamicRef` reachable from the root (followed through
//!    its target) must parse and point at something in this document.

use serde_json::{Map, Value};

/// Check a non-strict schema; the error is the bare message the reference reports.
pub fn validate(root: &Value) -> Result<(), String> {
    if !uses_latest_draft(root)? {
        return Ok(());
    }
    check_schema(root)?;
    check_ids(root)?;
    RefWalker::new(root).walk(root, "")
}

// ---------------------------------------------------------------------------------------
// Draft detection

const DRAFT_2020_12: [&str; 2] = ["json-schema.org/draft/2020-12/schema", "json-schema.org/schema"];
const OLDER_DRAFTS: [&str; 4] = [
    "json-schema.org/draft/2019-09/schema",
    "json-schema.org/draft-07/schema",
    "json-schema.org/draft-06/schema",
    "json-schema.org/draft-04/schema",
];

/// The json-schema.org address of a `$schema` value without scheme and empty fragment.
fn meta_schema_address(uri: &str) -> &str {
    let uri = uri.strip_suffix('#').unwrap_or(uri);
    uri.strip_prefix("https://").or_else(|| uri.strip_prefix("http://")).unwrap_or(uri)
}

fn uses_latest_draft(root: &Value) -> Result<bool, String> {
    let Some(Value::String(uri)) = root.get("$schema") else {
        return Ok(true);
    };
    let address = meta_schema_address(uri);
    if DRAFT_2020_12.contains(&address) {
        Ok(true)
    } else if OLDER_DRAFTS.contains(&address) {
        Ok(false)
    } else {
        Err(format!(
            "Unknown meta-schema: '{uri}'. Custom meta-schemas must be registered in the registry before use"
        ))
    }
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
    /// `patternProperties`: a schema map whose names are regular expressions.
    PatternProperties,
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
    Pattern,
    Boolean,
    StringArray,
    DependentRequired,
    Type,
    Array,
}

type Group = &'static [(&'static str, Rule)];

/// Vocabularies in the order the validator evaluates them.
const GROUPS: [Group; 8] = [
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
        ("patternProperties", Rule::PatternProperties),
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
    &[("unevaluatedItems", Rule::Schema), ("unevaluatedProperties", Rule::Schema)],
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
        ("pattern", Rule::Pattern),
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
    &[("contentEncoding", Rule::Str), ("contentMediaType", Rule::Str), ("contentSchema", Rule::Schema)],
];

const SIMPLE_TYPES: [&str; 7] = ["array", "boolean", "integer", "null", "number", "object", "string"];
const ANCHOR_PATTERN: &str = "^[A-Za-z_][-A-Za-z0-9._]*$";
const ID_PATTERN: &str = "^[^#]*#?$";

fn check_schema(value: &Value) -> Result<(), String> {
    let map = match value {
        Value::Object(map) => map,
        Value::Bool(_) => return Ok(()),
        other => return Err(not_a_schema(other)),
    };
    for group in GROUPS {
        for (key, v) in map {
            if let Some((_, rule)) = group.iter().find(|(k, _)| k == key) {
                check_rule(*rule, v)?;
            }
        }
    }
    Ok(())
}

fn check_rule(rule: Rule, v: &Value) -> Result<(), String> {
    match rule {
        Rule::Schema => check_schema(v),
        Rule::SchemaMap => object(v)?.values().try_for_each(check_schema),
        Rule::SchemaArray => {
            let items = array(v)?;
            if items.is_empty() {
                return Err(format!("{} has less than 1 item", compact(v)));
            }
            items.iter().try_for_each(check_schema)
        }
        Rule::PatternProperties => {
            let map = object(v)?;
            map.values().try_for_each(check_schema)?;
            match map.iter().find(|(name, _)| !is_valid_regex(name)) {
                // The reference names the schema, not the offending name.
                Some((_, schema)) => Err(format!("{} is not a \"regex\"", compact(schema))),
                None => Ok(()),
            }
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
        Rule::Id => matches_pattern(v, string(v)?, |s| s.find('#').is_none_or(|i| i + 1 == s.len()), ID_PATTERN),
        Rule::Vocabulary => object(v)?.values().try_for_each(|flag| boolean(flag).map(|_| ())),
        Rule::Number => number(v).map(|_| ()),
        Rule::MultipleOf => {
            if number(v)? <= 0.0 {
                return Err(format!("{} is less than or equal to the minimum of 0", compact(v)));
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
        Rule::Pattern => {
            if !is_valid_regex(string(v)?) {
                return Err(format!("{} is not a \"regex\"", compact(v)));
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
                        && items.iter().all(|t| t.as_str().is_some_and(|s| SIMPLE_TYPES.contains(&s)))
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

fn matches_pattern(v: &Value, s: &str, test: impl Fn(&str) -> bool, pattern: &str) -> Result<(), String> {
    if test(s) {
        Ok(())
    } else {
        Err(format!("{} does not match \"{pattern}\"", compact(v)))
    }
}

fn is_anchor(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
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
        Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(i), Some(j), _, _) => i == j,
            (_, _, Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| json_equal(p, q)))
        }
        _ => a == b,
    }
}

fn all_unique(items: &[Value]) -> bool {
    items.iter().enumerate().all(|(i, a)| items.iter().skip(i + 1).all(|b| !json_equal(a, b)))
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

fn not_any_of(v: &Value) -> String {
    format!("{} is not valid under any of the schemas listed in the 'anyOf' keyword", compact(v))
}

// ---------------------------------------------------------------------------------------
// Regular expressions (`format: "regex"`)

/// Whether `pattern` is a regular expression the reference's regex engine compiles. This is
/// a syntax check only: groups and classes must close, quantifiers need something to
/// repeat and a well-formed `{n,m}`, escapes must be known.
pub(crate) fn is_valid_regex(pattern: &str) -> bool {
    let chars: Vec<char> = pattern.chars().collect();
    let mut parser = RegexSyntax { chars: &chars, pos: 0, depth: 0 };
    parser.alternation() && parser.pos == chars.len()
}

struct RegexSyntax<'a> {
    chars: &'a [char],
    pos: usize,
    depth: usize,
}

impl RegexSyntax<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek();
        self.pos += usize::from(c.is_some());
        c
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Alternatives up to the end or an unmatched `)` (left for the caller).
    fn alternation(&mut self) -> bool {
        loop {
            if !self.sequence() {
                return false;
            }
            if !self.eat('|') {
                return true;
            }
        }
    }

    fn sequence(&mut self) -> bool {
        let mut last = Last::Nothing;
        while let Some(c) = self.peek() {
            last = match (c, last) {
                ('|', _) => return true,
                (')', _) => return self.depth > 0,
                ('*' | '+' | '?', Last::Atom) => Last::Quantified,
                // One lazy `?` or possessive `+` may follow a quantifier.
                ('+' | '?', Last::Quantified) => Last::Modified,
                ('*' | '+' | '?', _) => return false,
                ('{', Last::Nothing) => return false,
                ('{', _) => {
                    if !self.counted_repetition() {
                        return false;
                    }
                    Last::Quantified
                }
                _ => {
                    if !self.atom() {
                        return false;
                    }
                    Last::Atom
                }
            };
            if matches!(last, Last::Quantified | Last::Modified) && c != '{' {
                self.pos += 1;
            }
        }
        true
    }

    fn counted_repetition(&mut self) -> bool {
        self.pos += 1; // `{`
        let Some(min) = self.digits() else {
            return false;
        };
        let max = if self.eat(',') {
            if self.peek() == Some('}') {
                None
            } else {
                match self.digits() {
                    Some(max) => Some(max),
                    None => return false,
                }
            }
        } else {
            Some(min)
        };
        self.eat('}') && max.is_none_or(|max| min <= max)
    }

    fn digits(&mut self) -> Option<u64> {
        let start = self.pos;
        let mut value: u64 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            value = value.saturating_mul(10).saturating_add(u64::from(d));
            self.pos += 1;
        }
        (self.pos > start).then_some(value)
    }

    fn atom(&mut self) -> bool {
        match self.bump() {
            Some('(') => self.group(),
            Some('[') => self.class(),
            Some('\\') => self.escape(false),
            Some(_) => true,
            None => false,
        }
    }

    fn group(&mut self) -> bool {
        if self.eat('?') {
            match self.bump() {
                Some(':' | '=' | '!') => {}
                Some('<') => {
                    if !(self.eat('=') || self.eat('!')) && !self.group_name() {
                        return false;
                    }
                }
                Some('P') => {
                    if !(self.eat('<') && self.group_name()) {
                        return false;
                    }
                }
                Some(c) if is_flag(c) => {
                    while self.peek().is_some_and(is_flag) {
                        self.pos += 1;
                    }
                    if self.eat(')') {
                        return true;
                    }
                    if !self.eat(':') {
                        return false;
                    }
                }
                _ => return false,
            }
        }
        self.depth += 1;
        let ok = self.alternation() && self.eat(')');
        self.depth -= 1;
        ok
    }

    fn group_name(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.pos += 1;
        }
        self.pos > start && self.eat('>')
    }

    fn class(&mut self) -> bool {
        self.eat('^');
        // A `]` right at the start is a literal.
        let mut first = true;
        let mut previous: Option<char> = None;
        loop {
            let Some(c) = self.bump() else {
                return false;
            };
            match c {
                ']' if !first => return true,
                '\\' => {
                    let escaped = self.peek();
                    if !self.escape(true) {
                        return false;
                    }
                    previous = escaped.filter(|e| !e.is_ascii_alphanumeric());
                }
                '-' if previous.is_some() && self.peek().is_some_and(|n| n != ']') => {
                    let Some(end) = self.bump() else {
                        return false;
                    };
                    let end = if end == '\\' {
                        match self.bump() {
                            Some(e) if !e.is_ascii_alphanumeric() => e,
                            _ => return false,
                        }
                    } else {
                        end
                    };
                    if previous.is_some_and(|start| start > end) {
                        return false;
                    }
                    previous = None;
                }
                '[' if self.peek() == Some(':') => {
                    // POSIX class `[:alpha:]`.
                    while let Some(n) = self.bump() {
                        if n == ']' {
                            break;
                        }
                    }
                    previous = None;
                }
                other => previous = Some(other),
            }
            first = false;
        }
    }

    fn escape(&mut self, in_class: bool) -> bool {
        let Some(c) = self.bump() else {
            return false;
        };
        match c {
            'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'n' | 'r' | 't' | 'f' | 'v' | 'a' | 'e' | '0' => true,
            'b' | 'B' | 'A' | 'z' | 'Z' | 'G' | 'K' => !in_class || c == 'b',
            '1'..='9' => {
                while self.peek().is_some_and(|d| d.is_ascii_digit()) {
                    self.pos += 1;
                }
                true
            }
            'x' => self.hex_escape(2),
            'u' => self.hex_escape(4),
            'c' => self.bump().is_some_and(|l| l.is_ascii_alphabetic()),
            'p' | 'P' => {
                if self.eat('{') {
                    let start = self.pos;
                    while self.peek().is_some_and(|n| n != '}') {
                        self.pos += 1;
                    }
                    self.pos > start && self.eat('}')
                } else {
                    self.bump().is_some_and(|l| l.is_ascii_alphabetic())
                }
            }
            'k' => self.eat('<') && self.group_name(),
            other => !other.is_ascii_alphanumeric(),
        }
    }

    /// `\xhh`, `\uhhhh`, or the braced forms `\x{…}` / `\u{…}`.
    fn hex_escape(&mut self, width: usize) -> bool {
        if self.eat('{') {
            let start = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                self.pos += 1;
            }
            return self.pos > start && self.eat('}');
        }
        for _ in 0..width {
            if !self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                return false;
            }
            self.pos += 1;
        }
        true
    }
}

/// What the regex sequence ended with so far.
#[derive(Clone, Copy)]
enum Last {
    Nothing,
    Atom,
    Quantified,
    Modified,
}

fn is_flag(c: char) -> bool {
    matches!(c, 'i' | 'm' | 's' | 'x' | 'U' | 'u' | '-')
}

// ---------------------------------------------------------------------------------------
// References

/// Every `$id` in the document must be a URI reference.
fn check_ids(value: &Value) -> Result<(), String> {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(id)) = map.get("$id") {
                check_uri_reference(id)?;
            }
            for (key, v) in map {
                if !matches!(key.as_str(), "enum" | "const" | "default" | "examples") {
                    check_ids(v)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(check_ids),
        _ => Ok(()),
    }
}

/// RFC 3986 URI-reference syntax, reported as the reference does.
fn check_uri_reference(uri: &str) -> Result<(), String> {
    let invalid = |reason: &str, index: usize| Err(format!("Invalid URI reference '{uri}': {reason} at index {index}"));
    let bytes = uri.as_bytes();
    if let Some(colon) = uri.find(':') {
        let before_path = uri.find(['/', '?', '#']).is_none_or(|i| colon < i);
        if before_path {
            let scheme = &bytes[..colon];
            let valid_scheme = scheme.first().is_some_and(u8::is_ascii_alphabetic)
                && scheme.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
            if !valid_scheme {
                return invalid("unexpected character", 0);
            }
        }
    }
    let mut seen_fragment = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'%' => {
                let hex = |k: usize| bytes.get(k).is_some_and(u8::is_ascii_hexdigit);
                if !(hex(i + 1) && hex(i + 2)) {
                    return invalid("invalid percent-encoded octet", i);
                }
                i += 3;
                continue;
            }
            b'#' if !seen_fragment => seen_fragment = true,
            b if b.is_ascii_alphanumeric() => {}
            b'-' | b'.' | b'_' | b'~' | b':' | b'/' | b'?' | b'[' | b']' | b'@' | b'!' | b'$' | b'&' | b'\''
            | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => {}
            _ => return invalid("unexpected character", i),
        }
        i += 1;
    }
    Ok(())
}

/// Compiles the reachable part of a schema the way the reference does, only to find the
/// references it cannot resolve.
struct RefWalker<'a> {
    root: &'a Value,
    /// The absolute `$id` of the root, when it has one.
    base: Option<&'a str>,
    /// JSON pointers of reference targets already walked (cycles are fine).
    visited: Vec<String>,
}

/// Keywords whose value is one subschema.
const SUBSCHEMA_KEYS: [&str; 12] = [
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
];
/// Keywords whose value is an object of subschemas.
const SUBSCHEMA_MAP_KEYS: [&str; 4] = ["properties", "patternProperties", "dependentSchemas", "dependencies"];
/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_LIST_KEYS: [&str; 4] = ["prefixItems", "allOf", "anyOf", "oneOf"];

impl<'a> RefWalker<'a> {
    fn new(root: &'a Value) -> Self {
        let base = root
            .get("$id")
            .and_then(Value::as_str)
            .map(|id| id.split('#').next().unwrap_or(id))
            .filter(|id| has_scheme(id));
        Self { root, base, visited: Vec::new() }
    }

    fn walk(&mut self, schema: &'a Value, pointer: &str) -> Result<(), String> {
        let Some(map) = schema.as_object() else {
            return Ok(());
        };
        for (key, v) in map {
            let key = key.as_str();
            if key == "$ref" || key == "$dynamicRef" {
                if let Value::String(reference) = v {
                    self.resolve(reference)?;
                }
            } else if SUBSCHEMA_KEYS.contains(&key) {
                self.walk(v, &format!("{pointer}/{}", escape_pointer(key)))?;
            } else if SUBSCHEMA_MAP_KEYS.contains(&key) {
                if let Value::Object(children) = v {
                    for (name, child) in children {
                        self.walk(child, &format!("{pointer}/{key}/{}", escape_pointer(name)))?;
                    }
                }
            } else if SUBSCHEMA_LIST_KEYS.contains(&key) {
                if let Value::Array(children) = v {
                    for (i, child) in children.iter().enumerate() {
                        self.walk(child, &format!("{pointer}/{key}/{i}"))?;
                    }
                }
            }
        }
        Ok(())
    }

    fn resolve(&mut self, reference: &str) -> Result<(), String> {
        check_uri_reference(reference)?;
        let (resource, fragment) = match reference.split_once('#') {
            Some((resource, fragment)) => (resource, fragment),
            None => (reference, ""),
        };
        if !resource.is_empty() {
            let absolute = match self.base {
                _ if has_scheme(resource) => resource.to_owned(),
                Some(base) => join(base, resource),
                None => {
                    return Err(format!(
                        "Resource '{resource}' is not present in a registry and retrieving it failed: No base URI is available"
                    ))
                }
            };
            if self.base != Some(absolute.as_str()) {
                let address = meta_schema_address(&absolute);
                if DRAFT_2020_12.contains(&address) || OLDER_DRAFTS.contains(&address) || address.starts_with("json-schema.org/draft/2020-12/meta/") {
                    return Ok(());
                }
                return Err(format!(
                    "Resource '{absolute}' is not present in a registry and retrieving it failed: Retrieval is disabled, cannot fetch {absolute}"
                ));
            }
        }
        let (target, pointer) = if fragment.is_empty() || fragment.starts_with('/') {
            let target = lookup_pointer(self.root, fragment).ok_or_else(|| format!("Pointer '{fragment}' does not exist"))?;
            (target, fragment.to_owned())
        } else {
            let target = find_anchor(self.root, fragment).ok_or_else(|| format!("Anchor '{fragment}' does not exist"))?;
            (target, format!("#{fragment}"))
        };
        if !matches!(target, Value::Object(_) | Value::Bool(_)) {
            return Err(not_a_schema(target));
        }
        if self.visited.contains(&pointer) {
            return Ok(());
        }
        self.visited.push(pointer.clone());
        self.walk(target, &pointer)
    }
}

fn has_scheme(uri: &str) -> bool {
    match uri.find(':') {
        Some(colon) => uri.find(['/', '?', '#']).is_none_or(|i| colon < i) && colon > 0,
        None => false,
    }
}

/// Resolve a relative reference against an absolute base (path merge only).
fn join(base: &str, relative: &str) -> String {
    if relative.starts_with('/') {
        // Keep scheme and authority.
        if let Some(start) = base.find("://") {
            let authority_end = base[start + 3..].find('/').map_or(base.len(), |i| start + 3 + i);
            return format!("{}{relative}", &base[..authority_end]);
        }
        return relative.to_owned();
    }
    match base.rfind('/') {
        Some(i) => format!("{}{relative}", &base[..=i]),
        None => relative.to_owned(),
    }
}

fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
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
    match value {
        Value::Object(map) => {
            let named = |key: &str| map.get(key).and_then(Value::as_str) == Some(name);
            if named("$anchor") || named("$dynamicAnchor") {
                return Some(value);
            }
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "enum" | "const" | "default" | "examples"))
                .find_map(|(_, v)| find_anchor(v, name))
        }
        Value::Array(items) => items.iter().find_map(|v| find_anchor(v, name)),
        _ => None,
    }
}
