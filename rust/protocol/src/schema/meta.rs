//! Non-strict schemas (behavior.md §7.6): the checks the reference's JSON-Schema validator
//! makes when it compiles a schema, with its messages.
//!
//! 1. `$schema` at the top picks the draft. Draft 2020-12 (the default) is checked; an
//!    older draft the reference knows is accepted unchecked; anything else is an error.
//! 2. The schema is checked against the 2020-12 meta-schema (formats not asserted). The meta-schema is a list of
//!    vocabularies; each vocabulary checks the keys it owns in the order the request wrote
//!    them, and vocabularies run in a fixed order (`GROUPS`). Only the keys whose violations
//!    the reference reports are modelled; every other key is accepted as is.
//! 3. `$id` values must be URI references.
//! 4. The schema is compiled: `pattern`s and `patternProperties` names must be regexes, and
//!    each `$ref` / `$dynamicRef` reachable from the root (followed through its target)
//!    must parse and point at something in this document.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::uri;

/// Check a non-strict schema; the error is the bare message the reference reports.
pub fn validate(root: &Value) -> Result<(), String> {
    let draft = detect_draft(root);
    if draft == Draft::Older {
        return Ok(());
    }
    check_schema(root)?;
    check_ids(root)?;
    if let (Draft::Unknown, Some(Value::String(uri))) = (draft, root.get("$schema")) {
        return Err(format!(
            "Unknown meta-schema: '{uri}'. Custom meta-schemas must be registered in the registry before use"
        ));
    }
    Compiler::new(root).compile(root)
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Draft {
    /// 2020-12: no `$schema`, or one naming it.
    Latest,
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
    } else if OLDER_DRAFTS.contains(&address) {
        Draft::Older
    } else {
        Draft::Unknown
    }
}

/// Documents the reference's registry holds: the 2020-12 meta-schema and its vocabularies.
fn in_registry(absolute: &str) -> bool {
    const VOCABULARIES: [&str; 7] =
        ["core", "applicator", "unevaluated", "validation", "meta-data", "format-annotation", "content"];
    let Some(rest) = absolute.strip_prefix("https://json-schema.org/draft/2020-12/") else {
        return false;
    };
    rest == "schema" || rest.strip_prefix("meta/").is_some_and(|v| VOCABULARIES.contains(&v))
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
    // Strings (the common case: `required`, `type`) by hashing; anything else pairwise.
    if let Some(strings) = items.iter().map(Value::as_str).collect::<Option<Vec<_>>>() {
        let mut seen = HashSet::with_capacity(strings.len());
        return strings.into_iter().all(|s| seen.insert(s));
    }
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
// Regular expressions (`pattern`, `patternProperties` names)

/// Whether the reference's regex engine (a backtracking engine with Rust `regex` syntax)
/// compiles `pattern`. A syntax check only: groups and classes must close, a quantifier
/// needs something repeatable before it (not a lookaround) and a well-formed `{n,m}`,
/// escapes must be known, group names unique, back-references must name existing groups.
pub(crate) fn is_valid_regex(pattern: &str) -> bool {
    let chars: Vec<char> = pattern.chars().collect();
    let mut parser = RegexSyntax { chars: &chars, pos: 0, depth: 0, lookarounds: 0, groups: 0, names: Vec::new(), max_backref: 0 };
    parser.alternation() && parser.pos == chars.len() && parser.max_backref <= parser.groups
}

struct RegexSyntax<'a> {
    chars: &'a [char],
    pos: usize,
    depth: usize,
    /// How many lookarounds enclose the current position.
    lookarounds: usize,
    /// Capture groups seen (numbered and named).
    groups: usize,
    names: Vec<String>,
    /// The highest `\N` back-reference seen.
    max_backref: usize,
}

const MAX_REGEX_NESTING: usize = 63;

/// What a regex sequence ended with so far.
#[derive(Clone, Copy)]
enum Last {
    /// Nothing a quantifier can apply to (start, `|`, `(`, or a lookaround).
    Nothing,
    Atom,
    /// `*`, `+`, `?` or `{n,m}` applied.
    Quantified,
    /// A lazy `?` or possessive `+` after a quantifier.
    Modified,
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
                ('*' | '+' | '?', Last::Atom) => {
                    self.pos += 1;
                    Last::Quantified
                }
                ('+' | '?', Last::Quantified) => {
                    self.pos += 1;
                    Last::Modified
                }
                // Inside a lookaround the engine reads a `{` with nothing before it literally.
                ('{', Last::Nothing) if self.lookarounds > 0 => {
                    self.pos += 1;
                    Last::Atom
                }
                ('*' | '+' | '?', _) | ('{', Last::Nothing) => return false,
                ('{', _) => {
                    if !self.counted_repetition() {
                        return false;
                    }
                    Last::Quantified
                }
                _ => match self.atom() {
                    Some(true) => Last::Atom,
                    Some(false) => Last::Nothing,
                    None => return false,
                },
            };
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

    /// One atom: `Some(repeatable)`, or `None` when it is malformed.
    fn atom(&mut self) -> Option<bool> {
        match self.bump()? {
            '(' => self.group(),
            '[' => self.class().then_some(true),
            '\\' => self.escape().then_some(true),
            _ => Some(true),
        }
    }

    fn group(&mut self) -> Option<bool> {
        // The engine refuses deeper nesting; the limit also bounds this parser's stack.
        if self.depth >= MAX_REGEX_NESTING {
            return None;
        }
        let mut repeatable = true;
        if self.eat('?') {
            match self.bump()? {
                ':' => {}
                '=' | '!' => repeatable = false,
                '<' if self.eat('=') || self.eat('!') => repeatable = false,
                '<' => self.group_name().then_some(())?,
                'P' => (self.eat('<') && self.group_name()).then_some(())?,
                c if is_flag(c) => {
                    while self.peek().is_some_and(is_flag) {
                        self.pos += 1;
                    }
                    if self.eat(')') {
                        return Some(false);
                    }
                    self.eat(':').then_some(())?;
                }
                _ => return None,
            }
        } else {
            self.groups += 1;
        }
        let lookaround = usize::from(!repeatable);
        self.depth += 1;
        self.lookarounds += lookaround;
        let ok = self.alternation() && self.eat(')');
        self.depth -= 1;
        self.lookarounds -= lookaround;
        ok.then_some(repeatable)
    }

    /// `name>` of a named group: a letter or `_` first, unique in the pattern.
    fn group_name(&mut self) -> bool {
        let start = self.pos;
        if !self.peek().is_some_and(|c| c.is_alphabetic() || c == '_') {
            return false;
        }
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.pos += 1;
        }
        let name: String = self.chars.get(start..self.pos).unwrap_or_default().iter().collect();
        if !self.eat('>') || self.names.contains(&name) {
            return false;
        }
        self.names.push(name);
        self.groups += 1;
        true
    }

    fn class(&mut self) -> bool {
        self.eat('^');
        // A `]` right at the start is a literal.
        let mut first = true;
        // The last item, when it can start a range.
        let mut previous = ClassItem::Set;
        loop {
            let Some(c) = self.bump() else {
                return false;
            };
            let item = match c {
                ']' if !first => return true,
                '\\' => match self.class_escape() {
                    Some(item) => item,
                    None => return false,
                },
                '-' if self.peek().is_some_and(|n| n != ']') && !first && previous != ClassItem::RangeDone => {
                    let start = match previous {
                        ClassItem::Char(start) => Some(start),
                        ClassItem::Code => None,
                        // `[\d-z]`: a set cannot start a range.
                        ClassItem::Set | ClassItem::RangeDone => return false,
                    };
                    let end = match self.bump() {
                        Some('\\') => match self.class_escape() {
                            Some(ClassItem::Char(e)) => Some(e),
                            Some(ClassItem::Code) => None,
                            _ => return false,
                        },
                        Some(e) => Some(e),
                        None => return false,
                    };
                    if start.zip(end).is_some_and(|(start, end)| start > end) {
                        return false;
                    }
                    ClassItem::RangeDone
                }
                '[' if self.peek() == Some(':') => {
                    // POSIX class `[:alpha:]`.
                    while let Some(n) = self.bump() {
                        if n == ']' {
                            break;
                        }
                    }
                    ClassItem::Set
                }
                other => ClassItem::Char(other),
            };
            if matches!(item, ClassItem::Set) && self.peek() == Some('-') && self.chars.get(self.pos + 1).is_some_and(|n| *n != ']') {
                return false;
            }
            previous = item;
            first = false;
        }
    }

    /// An escape inside a class; `None` when malformed.
    fn class_escape(&mut self) -> Option<ClassItem> {
        let c = self.bump()?;
        match c {
            'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'p' | 'P' => {
                self.pos -= 1;
                self.escape().then_some(ClassItem::Set)
            }
            'n' => Some(ClassItem::Char('\n')),
            'r' => Some(ClassItem::Char('\r')),
            't' => Some(ClassItem::Char('\t')),
            'f' => Some(ClassItem::Char('\u{c}')),
            'v' => Some(ClassItem::Char('\u{b}')),
            'a' => Some(ClassItem::Char('\u{7}')),
            'x' | 'u' | 'U' | 'c' => {
                self.pos -= 1;
                self.escape().then_some(ClassItem::Code)
            }
            other if other.is_ascii() && !other.is_ascii_alphanumeric() => Some(ClassItem::Char(other)),
            _ => None,
        }
    }

    /// An escape outside a class (the backslash already read).
    fn escape(&mut self) -> bool {
        let Some(c) = self.bump() else {
            return false;
        };
        match c {
            'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'n' | 'r' | 't' | 'f' | 'v' | 'b' | 'B' | 'A' | 'z' => true,
            '1'..='9' => {
                let mut number = c.to_digit(10).map_or(0, |d| d as usize);
                while let Some(d) = self.peek().and_then(|d| d.to_digit(10)) {
                    number = number.saturating_mul(10).saturating_add(d as usize);
                    self.pos += 1;
                }
                self.max_backref = self.max_backref.max(number);
                true
            }
            'x' => self.hex_escape(2),
            'u' => self.hex_escape(4),
            'U' => self.hex_escape(8),
            'c' => self.bump().is_some_and(|l| l.is_ascii_alphabetic()),
            'p' | 'P' => {
                let name: String = if self.eat('{') {
                    let start = self.pos;
                    while self.peek().is_some_and(|n| n != '}') {
                        self.pos += 1;
                    }
                    let name = self.chars.get(start..self.pos).unwrap_or_default().iter().collect();
                    if !self.eat('}') {
                        return false;
                    }
                    name
                } else {
                    match self.bump() {
                        Some(letter) => letter.to_string(),
                        None => return false,
                    }
                };
                is_unicode_property(&name)
            }
            other => other.is_ascii() && !other.is_ascii_alphanumeric(),
        }
    }

    /// `\xhh`, `\uhhhh`, `\Uhhhhhhhh`, or the braced forms `\x{…}` / `\u{…}`.
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

/// One item of a bracket class.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClassItem {
    Char(char),
    /// A character given by code (`\x41`, `\u0041`, `\cA`), not worked out here.
    Code,
    /// A set: `\d`, `\p{L}`, `[:alpha:]`.
    Set,
    /// A range just ended; a `-` now is a literal or a set operation.
    RangeDone,
}

fn is_flag(c: char) -> bool {
    matches!(c, 'i' | 'm' | 's' | 'x' | 'U' | 'u' | 'R' | '-')
}

/// Unicode property names accepted in `\p{…}`: general categories (short and long),
/// common scripts and binary properties; `Name=Value` forms for categories and scripts.
fn is_unicode_property(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "L", "Lu", "Ll", "Lt", "Lm", "Lo", "LC", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P", "Pc", "Pd",
        "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Cs",
        "Co", "Cn", "Letter", "Uppercase_Letter", "Lowercase_Letter", "Titlecase_Letter", "Cased_Letter",
        "Modifier_Letter", "Other_Letter", "Mark", "Nonspacing_Mark", "Spacing_Mark", "Enclosing_Mark", "Number",
        "Decimal_Number", "Letter_Number", "Other_Number", "Punctuation", "Connector_Punctuation",
        "Dash_Punctuation", "Open_Punctuation", "Close_Punctuation", "Initial_Punctuation", "Final_Punctuation",
        "Other_Punctuation", "Symbol", "Math_Symbol", "Currency_Symbol", "Modifier_Symbol", "Other_Symbol",
        "Separator", "Space_Separator", "Line_Separator", "Paragraph_Separator", "Other", "Control", "Format",
        "Surrogate", "Private_Use", "Unassigned", "Any", "ASCII", "Assigned", "Alphabetic", "Alpha", "Lowercase",
        "Uppercase", "White_Space", "Whitespace", "Emoji", "Emoji_Presentation", "Extended_Pictographic",
        "Digit", "Latin", "Greek", "Cyrillic", "Armenian", "Hebrew", "Arabic", "Syriac", "Thaana", "Devanagari",
        "Bengali", "Gurmukhi", "Gujarati", "Tamil", "Telugu", "Kannada", "Malayalam", "Thai", "Lao", "Tibetan",
        "Myanmar", "Georgian", "Hangul", "Ethiopic", "Cherokee", "Khmer", "Mongolian", "Hiragana", "Katakana",
        "Bopomofo", "Han", "Yi", "Common", "Inherited", "Sinhala", "Latn", "Grek", "Cyrl", "Hani", "Hira", "Kana",
        "Arab", "Hebr", "Zyyy",
    ];
    let value = name.split_once('=').map_or(name, |(_, v)| v);
    NAMES.iter().any(|n| n.eq_ignore_ascii_case(value.trim()))
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
const SUBSCHEMA_MAPS: [&str; 6] = ["properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"];
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
    fn new(root: &'a Value) -> Self {
        let base = root
            .get("$id")
            .and_then(Value::as_str)
            .map(|id| id.split('#').next().unwrap_or(id))
            .filter(|id| uri::has_scheme(id));
        Self { root, base, visited: HashSet::new(), ref_depth: 0 }
    }

    fn compile(&mut self, schema: &'a Value) -> Result<(), String> {
        let Some(map) = schema.as_object() else {
            return Ok(());
        };
        for (key, v) in map {
            match key.as_str() {
                "$ref" | "$dynamicRef" => {
                    if let Value::String(reference) = v {
                        self.resolve(reference)?;
                    }
                }
                "pattern" => {
                    if let Value::String(pattern) = v {
                        if !is_valid_regex(pattern) {
                            return Err(format!("{} is not a \"regex\"", compact(v)));
                        }
                    }
                }
                "patternProperties" => {
                    for (name, sub) in v.as_object().into_iter().flatten() {
                        if !is_valid_regex(name) {
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
                if in_registry(&absolute) {
                    return Ok(());
                }
                let why = if under_known_draft(&absolute) {
                    "Retrieving external resources is not supported once the registry is populated".to_owned()
                } else {
                    format!("Retrieval is disabled, cannot fetch {absolute}")
                };
                return Err(format!(
                    "Resource '{absolute}' is not present in a registry and retrieving it failed: {why}"
                ));
            }
        }
        let (target, key) = if fragment.is_empty() || fragment.starts_with('/') {
            let target = lookup_pointer(self.root, fragment).ok_or_else(|| format!("Pointer '{fragment}' does not exist"))?;
            (target, fragment.to_owned())
        } else {
            let target = find_anchor(self.root, fragment).ok_or_else(|| format!("Anchor '{fragment}' does not exist"))?;
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
    if named("$anchor") || named("$dynamicAnchor") {
        return Some(value);
    }
    subschemas(map).into_iter().find_map(|v| find_anchor(v, name))
}
