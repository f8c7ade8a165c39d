//! The two regex verdicts of the reference's JSON-Schema validator, from the engines it uses.
//!
//! - [`compiles`]: a `pattern` or `patternProperties` name is compiled (every draft checked
//!   here, and tool schemas). The ECMA-262 pattern is translated to Rust regex syntax
//!   ([`to_rust_syntax`]) and built by `fancy-regex` with its default limits, so lookaround,
//!   back-references and the compiled-size limit decide as they do in the reference
//!   (`\p{L}{1000}` is too big; `a{1, 2}` and `\p{^L}` are fine).
//! - [`is_ecma_regex`]: draft-07's `format: "regex"`, an ECMA-262 syntax check
//!   (`jsonschema_regex::is_valid_ecma_regex`, the reference's own).
//!
//! Both run in time linear in the pattern. The translation is done here in one pass over
//! `regex-syntax`'s AST because the reference's translator re-parses the pattern once per
//! `\d`, `\w`, `\s` or `\cX` (a 2,000-`\d` pattern costs it a second). The engines keep group
//! names in sorted vectors (each new name shifts the ones after it), so a pattern with more
//! than [`MAX_GROUP_NAMES`] group names is refused without being read further; the
//! reference accepts such patterns after time quadratic in their names (80,000 names: 9.6 s).
//! Both limits are listed in `docs/compatibility.md`; the verdicts are pinned by
//! `tests/test_schema_regex.py` against a table recorded from the reference.

use std::fmt::Write as _;

use regex_syntax::ast::{
    self, parse::Parser, Ast, ClassPerl, ClassPerlKind, ClassSetItem, ErrorKind, LiteralKind,
    SpecialLiteralKind, Visitor,
};

/// Group names (declared or referenced) a pattern may hold; past this many it is refused.
pub(super) const MAX_GROUP_NAMES: usize = 1000;

/// Whether the reference compiles `pattern` (`pattern`, `patternProperties` names).
pub(super) fn compiles(pattern: &str) -> bool {
    if group_names(pattern) > MAX_GROUP_NAMES {
        return false;
    }
    match to_rust_syntax(pattern) {
        Some(translated) => fancy_regex::RegexBuilder::new(&translated).build().is_ok(),
        None => false,
    }
}

/// Whether draft-07's `format: "regex"` accepts `pattern` (ECMA-262 syntax).
pub(super) fn is_ecma_regex(pattern: &str) -> bool {
    group_names(pattern) <= MAX_GROUP_NAMES && jsonschema_regex::is_valid_ecma_regex(pattern)
}

/// How many places in `pattern` may open or name a group by name, counted over the raw text
/// (escapes and classes included, so it never undercounts): `(?<name>`, `(?P<name>`,
/// `(?'name'`, `(?P=name)`, `(?P>name)`, `(?(name)`, `\k<name>`, `\k'name'`, `\g<name>`.
fn group_names(pattern: &str) -> usize {
    let bytes = pattern.as_bytes();
    bytes
        .iter()
        .enumerate()
        .filter(|(i, b)| {
            let rest = bytes.get(i + 1..).unwrap_or_default();
            match b {
                b'(' => {
                    (rest.starts_with(b"?<") && !matches!(rest.get(2), Some(b'=' | b'!')))
                        || [&b"?P"[..], b"?'", b"?("]
                            .iter()
                            .any(|p| rest.starts_with(p))
                }
                b'\\' => matches!(rest, [b'k' | b'g', b'<' | b'\'', ..]),
                _ => false,
            }
        })
        .count()
}

/// The pattern in Rust regex syntax as the reference translates it, or `None` when the
/// translation fails (which the reference reports as "not a regex"):
///
/// 1. inside classes, ECMA-literal `[`, `&&`, `~~` and `--` are escaped (Rust reads them as
///    nested classes and set operations);
/// 2. `\cX` (X an ASCII letter) becomes the control character it names;
/// 3. if `regex-syntax` then stops at a lookaround or back-reference, the pattern is kept as
///    it stands (with the `\cX` before that point replaced) for `fancy-regex`;
/// 4. otherwise `\d`, `\w`, `\s` and their negations become their ECMA (ASCII, or ECMA
///    white space) classes, and a bell escape `\a` outside a class is an error.
pub(super) fn to_rust_syntax(pattern: &str) -> Option<String> {
    let escaped = escape_class_syntax(pattern);
    let (controls, replaced) = replace_control_escapes(&escaped);
    let tree = match Parser::new().parse(&controls) {
        Ok(tree) => tree,
        Err(error)
            if matches!(
                error.kind(),
                ErrorKind::UnsupportedLookAround | ErrorKind::UnsupportedBackreference
            ) =>
        {
            // `\cX` (3 bytes) became one byte, so an offset past `k` of them moves by `2k`.
            let stop = error.span().start.offset;
            let before = replaced.iter().take_while(|&&at| at < stop).count();
            let mut kept = controls.get(..stop)?.to_owned();
            kept.push_str(escaped.get(stop + 2 * before..)?);
            return Some(kept);
        }
        Err(_) => return None,
    };
    let found = ast::visit(&tree, PerlClasses::default()).ok()?;
    if found.bell {
        return None;
    }
    if found.classes.is_empty() {
        return Some(controls);
    }
    let mut out = String::with_capacity(controls.len() + 16 * found.classes.len());
    let mut copied = 0;
    for class in &found.classes {
        out.push_str(controls.get(copied..class.span.start.offset)?);
        push_ecma_class(&mut out, class);
        copied = class.span.end.offset;
    }
    out.push_str(controls.get(copied..)?);
    // The reference parses its translation again; a failure there is a failure.
    Parser::new().parse(&out).ok()?;
    Some(out)
}

/// The inclusive ranges ECMA-262 `\s` matches: `WhiteSpace` (TAB, VT, FF, SP, NBSP, BOM and
/// every `Zs`) and `LineTerminator` (LF, CR, LS, PS).
const ECMA_WHITE_SPACE: [(u32, u32); 10] = [
    (0x09, 0x0d),
    (0x20, 0x20),
    (0xa0, 0xa0),
    (0x1680, 0x1680),
    (0x2000, 0x200a),
    (0x2028, 0x2029),
    (0x202f, 0x202f),
    (0x205f, 0x205f),
    (0x3000, 0x3000),
    (0xfeff, 0xfeff),
];

fn push_ecma_class(out: &mut String, class: &ClassPerl) {
    out.push_str(if class.negated { "[^" } else { "[" });
    match class.kind {
        ClassPerlKind::Digit => out.push_str("0-9"),
        ClassPerlKind::Word => out.push_str("A-Za-z0-9_"),
        ClassPerlKind::Space => {
            for (start, end) in ECMA_WHITE_SPACE {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\x{{{start:x}}}-\\x{{{end:x}}}");
            }
        }
    }
    out.push(']');
}

/// Every Perl class (`\d`, `\W`, …) in or out of a bracketed class, in pattern order, and
/// whether a bell escape stands outside a class.
#[derive(Default)]
struct PerlClasses {
    classes: Vec<ClassPerl>,
    bell: bool,
}

impl Visitor for PerlClasses {
    type Output = Self;
    type Err = ();

    fn finish(mut self) -> Result<Self, ()> {
        self.classes.sort_by_key(|c| c.span.start.offset);
        Ok(self)
    }

    fn visit_post(&mut self, ast: &Ast) -> Result<(), ()> {
        match ast {
            Ast::ClassPerl(class) => self.classes.push((**class).clone()),
            Ast::Literal(literal)
                if literal.kind == LiteralKind::Special(SpecialLiteralKind::Bell) =>
            {
                self.bell = true;
            }
            _ => {}
        }
        Ok(())
    }

    fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), ()> {
        if let ClassSetItem::Perl(class) = item {
            self.classes.push(class.clone());
        }
        Ok(())
    }
}

/// Replace each `\cX` (X an ASCII letter, the backslash not itself escaped) by the control
/// character it names. Returns the new pattern and the byte offsets (in it) of the
/// replacements.
fn replace_control_escapes(pattern: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(pattern.len());
    let mut replaced = Vec::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(next) = chars.next() else {
            out.push(c);
            break;
        };
        let letter = chars.peek().copied().filter(char::is_ascii_alphabetic);
        match (next, letter) {
            ('c', Some(letter)) => {
                chars.next();
                replaced.push(out.len());
                out.push(char::from(letter as u8 % 32));
            }
            _ => {
                out.push(c);
                out.push(next);
            }
        }
    }
    (out, replaced)
}

/// Where a class item stands for the hyphen rules of [`escape_class_syntax`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Item {
    /// Nothing yet, or a range just ended.
    Start,
    /// An atom that may open a range.
    Atom,
    /// A range hyphen, waiting for the range's end.
    RangeEnd,
}

/// An atom was read: it ends a pending range, or may open one.
fn atom(item: &mut Item) {
    *item = if *item == Item::RangeEnd {
        Item::Start
    } else {
        Item::Atom
    };
}

/// ECMA reads `[`, `&&`, `~~` and `--` inside a class as literals, Rust as syntax: escape
/// them. A hyphen after an atom that may open a range (and not before `]`) stays a range
/// hyphen; `--` after a class escape (`[\w--z]`) is two literal hyphens.
fn escape_class_syntax(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut in_class = false;
    // At the class's first position, where `^` negates.
    let mut first = false;
    let mut item = Item::Start;
    // The last atom was a class escape (`\d`, `\s`, `\w` and negations).
    let mut after_class_escape = false;
    let mut chars = pattern.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        if c == '\\' {
            out.push(c);
            if let Some((_, e)) = chars.next() {
                out.push(e);
                if in_class {
                    atom(&mut item);
                    after_class_escape = matches!(e, 'd' | 'D' | 's' | 'S' | 'w' | 'W');
                    first = false;
                }
            }
            continue;
        }
        if !in_class {
            if c == '[' {
                in_class = true;
                first = true;
                item = Item::Start;
                after_class_escape = false;
            }
            out.push(c);
            continue;
        }
        match c {
            '[' => {
                out.push_str("\\[");
                atom(&mut item);
                after_class_escape = false;
                first = false;
                continue;
            }
            ']' => {
                in_class = false;
                item = Item::Start;
                after_class_escape = false;
                out.push(c);
                continue;
            }
            '^' if first => {
                first = false;
                out.push(c);
                continue;
            }
            '-' if after_class_escape && next == Some('-') => {
                chars.next();
                out.push_str("\\-\\-");
                atom(&mut item);
                after_class_escape = false;
                first = false;
                continue;
            }
            '-' if item == Item::Atom && next.is_some_and(|n| n != ']') => {
                item = Item::RangeEnd;
                after_class_escape = false;
                out.push(c);
                continue;
            }
            '&' | '~' if next == Some(c) => {
                chars.next();
                out.push('\\');
                out.push(c);
                out.push('\\');
                out.push(c);
                // The pair counts as two atoms (so a following `-` may open a range).
                atom(&mut item);
            }
            '-' if pattern.as_bytes().get(at.wrapping_sub(1)) == Some(&b'-')
                || next == Some('-') =>
            {
                out.push_str("\\-");
            }
            _ => out.push(c),
        }
        atom(&mut item);
        after_class_escape = false;
        first = false;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translation_table() {
        let cases: [(&str, &str, Option<&str>); 14] = [
            ("plain text is kept", "abc", Some("abc")),
            ("digits are ASCII", r"\d\D", Some("[0-9][^0-9]")),
            ("word is ASCII", r"\w", Some("[A-Za-z0-9_]")),
            (
                "a class escape in a class nests",
                r"[\d.]",
                Some("[[0-9].]"),
            ),
            (
                "white space is ECMA's",
                r"\s",
                Some(
                    r"[\x{9}-\x{d}\x{20}-\x{20}\x{a0}-\x{a0}\x{1680}-\x{1680}\x{2000}-\x{200a}\x{2028}-\x{2029}\x{202f}-\x{202f}\x{205f}-\x{205f}\x{3000}-\x{3000}\x{feff}-\x{feff}]",
                ),
            ),
            ("a control escape", r"\cA\cz", Some("\u{1}\u{1a}")),
            (
                "an escaped backslash is not a control escape",
                r"\\cA",
                Some(r"\\cA"),
            ),
            ("a control escape needs a letter", r"\c1", None),
            ("a bell outside a class fails", r"\a", None),
            ("a bell inside a class is kept", r"[\a]", Some(r"[\a]")),
            (
                "a lookaround stops the translation",
                r"\cA(?=\d)\cB",
                Some("\u{1}(?=\\d)\\cB"),
            ),
            (
                "ECMA class literals are escaped",
                "[[&&~~]",
                Some(r"[\[\&\&\~\~]"),
            ),
            (
                "a hyphen pair after a class escape",
                r"[\w--z]",
                Some(r"[[A-Za-z0-9_]\-\-z]"),
            ),
            ("unparsable stays unparsable", "(", None),
        ];
        for (name, pattern, want) in cases {
            assert_eq!(to_rust_syntax(pattern).as_deref(), want, "{name}");
        }
    }

    /// Our one-pass translation gives the string the reference's translator (the
    /// `jsonschema-regex` crate, re-parsing per change) gives, on every pair of these pieces.
    #[test]
    fn translation_equals_the_reference_translator_on_piece_pairs() {
        let pieces = [
            "a", "-", "^", "$", ".", "|", "(", ")", "[", "]", "{", "}", "{2}", "{2,3}", "*", "+?",
            r"\d", r"\D", r"\w", r"\W", r"\s", r"\S", r"\cA", r"\cj", r"\c1", r"\c", r"\a", r"\\",
            r"\-", r"\[", r"\]", r"\b", r"\p{L}", r"\x41", r"\1", r"\k<n>", "[a", "[^", "[]", "&&",
            "~~", "--", "-a", "a-", "[\\d-", "[\\w--", "(?=", "(?<=", "(?<n>", "(?:", "(?i)",
            "(?x)", " ", "#", "\n", "é",
        ];
        let mut compared = 0;
        for a in pieces {
            for b in pieces {
                for pattern in [
                    format!("{a}{b}"),
                    format!("[{a}{b}]"),
                    format!("{a}[{b}]{a}"),
                ] {
                    // Known difference: a `\cJ` inside a verbose-mode comment (compatibility.md).
                    if pattern.contains('#') && pattern.to_ascii_lowercase().contains(r"\cj") {
                        continue;
                    }
                    let reference = jsonschema_regex::to_rust_regex(&pattern)
                        .ok()
                        .map(std::borrow::Cow::into_owned);
                    assert_eq!(to_rust_syntax(&pattern), reference, "{pattern:?}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 9000);
    }

    #[test]
    fn group_name_counting_table() {
        let cases: [(&str, &str, usize); 8] = [
            ("a named group", "(?<a>x)", 1),
            ("lookbehinds are not names", "(?<=a)(?<!b)", 0),
            ("python forms", "(?P<a>x)(?P=a)(?P>a)", 3),
            ("quoted form and conditional", "(?'a'x)(?(a)y)", 2),
            ("references", r"\k<a>\k'a'\g<a>", 3),
            ("escaped parens still count", r"\(?<a>", 1),
            ("plain groups do not", "(a)(?:b)", 0),
            ("nothing", "", 0),
        ];
        for (name, pattern, want) in cases {
            assert_eq!(group_names(pattern), want, "{name}");
        }
    }

    #[test]
    fn verdicts_table() {
        // (name, pattern, compiles, is_ecma_regex)
        let cases: [(&str, &str, bool, bool); 12] = [
            (
                "a spaced count is fine in Rust syntax",
                "a{1, 2}",
                true,
                false,
            ),
            ("a negated property", r"\p{^L}", true, false),
            ("lookahead with a hex-digit class", r"(?=\h)", true, false),
            ("too big once compiled", r"\p{L}{1000}", false, true),
            ("nested counts too big", "(a{1000}){1000}", false, true),
            ("a count past u32", "a{4294967296}", false, true),
            ("duplicate names", "(?<a>x)(?<a>y)", false, false),
            ("a back-reference before its group", r"\1(a)", true, true),
            (
                "a back-reference to a missing group",
                r"(a)\2",
                false,
                false,
            ),
            ("ECMA control escape", r"\cA", true, true),
            ("possessive is not ECMA", "a++", true, false),
            ("unclosed", "(", false, false),
        ];
        for (name, pattern, compiled, ecma) in cases {
            assert_eq!(
                (compiles(pattern), is_ecma_regex(pattern)),
                (compiled, ecma),
                "{name}"
            );
        }
    }

    #[test]
    fn too_many_group_names_are_refused_by_both_checks() {
        let names = |n: usize| -> String { (0..n).map(|i| format!("(?<n{i}>x)")).collect() };
        let at_limit = names(MAX_GROUP_NAMES);
        assert!(compiles(&at_limit) && is_ecma_regex(&at_limit));
        let past = names(MAX_GROUP_NAMES + 1);
        assert!(!compiles(&past) && !is_ecma_regex(&past));
    }
}
