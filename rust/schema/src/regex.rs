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
//!
//! Two more bounds keep one pattern's cost linear and small, whatever it holds:
//! - a pattern longer than [`MAX_PATTERN_BYTES`] is refused by both checks unread. The
//!   reference has no such limit (its compiled-size limit refuses long patterns of
//!   ordinary atoms, but 16 MB of verbose-mode white space compile);
//! - fancy-regex's optimizer rewrites each window of three repetitions in a row
//!   (`x*y?x*`) and splices the result into the sequence, moving everything after it: time
//!   quadratic in the repetitions of one sequence (`(a|b)*` 100,000 times: 3.3 s in the
//!   reference, 14 s for 200,000). Before compiling, [`optimizer_moves`] bounds those moves
//!   from fancy-regex's own parse of the pattern; past [`MAX_OPTIMIZER_MOVES`] the pattern is
//!   refused.
//!
//! Both checks stop at once, refusing, when the caller cancelled the conversion
//! ([`deepseek_model::cancel`]). The limits are listed in `docs/compatibility.md`; the
//! verdicts are pinned by `tests/test_schema_regex.py` against tables recorded from the
//! reference.

use std::fmt::Write as _;

use deepseek_model::cancel;
use fancy_regex::Expr;
use regex_syntax::ast::{
    self, parse::Parser, Ast, ClassPerl, ClassPerlKind, ClassSetItem, ErrorKind, LiteralKind,
    SpecialLiteralKind, Visitor,
};

/// Group names (declared or referenced) a pattern may hold; past this many it is refused.
pub(super) const MAX_GROUP_NAMES: usize = 1000;

/// The longest pattern checked, in bytes; a longer one is refused.
pub(super) const MAX_PATTERN_BYTES: usize = 1 << 20;

/// Sequence elements fancy-regex's optimizer may move while rewriting repetitions (about a
/// tenth of a second); a pattern that could make it move more is refused.
pub(super) const MAX_OPTIMIZER_MOVES: u64 = 50_000_000;

/// Whether the reference compiles `pattern` (`pattern`, `patternProperties` names).
pub(super) fn compiles(pattern: &str) -> bool {
    if !within_limits(pattern) {
        return false;
    }
    let Some(translated) = to_rust_syntax(pattern) else {
        return false;
    };
    match Expr::parse_tree(&translated) {
        Ok(tree) if optimizer_moves(&tree.expr) <= MAX_OPTIMIZER_MOVES => {}
        _ => return false,
    }
    !cancel::cancelled() && fancy_regex::RegexBuilder::new(&translated).build().is_ok()
}

/// Whether draft-07's `format: "regex"` accepts `pattern` (ECMA-262 syntax).
pub(super) fn is_ecma_regex(pattern: &str) -> bool {
    within_limits(pattern) && jsonschema_regex::is_valid_ecma_regex(pattern)
}

/// The bounds both checks share: not cancelled, not too long, not too many group names.
fn within_limits(pattern: &str) -> bool {
    !cancel::cancelled()
        && pattern.len() <= MAX_PATTERN_BYTES
        && group_names(pattern) <= MAX_GROUP_NAMES
}

/// An upper bound on the sequence elements fancy-regex's optimizer moves for `expr`.
///
/// Its pass over a sequence (`rewrite_concat_repeat_windows`) looks at each window of three
/// elements; a window it rewrites becomes two elements, spliced in place (every element
/// after it moves), and the scan goes on past them. It rewrites only windows of three
/// repetitions whose outer two are unbounded with equal bodies, after folding nested
/// repetitions (`(?:a*)?` is `a*` then); counting every window of three repetitions whose
/// outer two are or may fold into unbounded ones, with the same skipping, bounds what it
/// does from above.
fn optimizer_moves(expr: &Expr) -> u64 {
    let mut moves = 0u64;
    let mut stack = vec![expr];
    while let Some(node) = stack.pop() {
        if let Expr::Concat(children) = node {
            moves = moves.saturating_add(window_moves(children));
        }
        stack.extend(node.children_iter());
    }
    moves
}

/// The moves of rewriting every window of three repetitions of one sequence, scanned as
/// fancy-regex scans it.
fn window_moves(children: &[Expr]) -> u64 {
    let repeat = |i: usize| matches!(children.get(i), Some(Expr::Repeat { .. }));
    let unbounded = |i: usize| children.get(i).is_some_and(may_be_unbounded);
    let mut len = children.len() as u64;
    let (mut at, mut position, mut moves) = (0usize, 0u64, 0u64);
    while at + 2 < children.len() {
        if unbounded(at) && repeat(at + 1) && unbounded(at + 2) {
            // Three become two: the elements after the window move one place.
            moves = moves.saturating_add(len.saturating_sub(position + 3));
            len -= 1;
            at += 3;
            position += 2;
        } else {
            at += 1;
            position += 1;
        }
    }
    moves
}

/// Whether `expr` is an unbounded repetition, or may become one when nested repetitions are
/// folded (a repetition of one, through capture groups).
fn may_be_unbounded(expr: &Expr) -> bool {
    match expr {
        Expr::Repeat { hi, child, .. } => *hi == usize::MAX || may_be_unbounded(child),
        Expr::Group(inner) => may_be_unbounded(inner),
        _ => false,
    }
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
#[allow(clippy::unwrap_used)]
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
    fn optimizer_moves_table() {
        // (name, pattern, moves): sequences of n elements, each rewrite moving what follows.
        let cases: [(&str, String, u64); 7] = [
            ("no repetition", "abc".repeat(100), 0),
            ("repetitions not three in a row", "a*b".repeat(100), 0),
            (
                "bounded repetitions are never rewritten",
                "a?".repeat(100),
                0,
            ),
            ("one window at the end", "xa*a*a*".to_owned(), 0),
            ("one window, two after it", "a*a*a*xy".to_owned(), 2),
            ("two windows", "a*a*a*a*a*a*".to_owned(), 3),
            (
                "nested sequences add up",
                "(a*a*a*x)(b*b*b*y)".to_owned(),
                2,
            ),
        ];
        for (name, pattern, want) in cases {
            let tree = Expr::parse_tree(&pattern).unwrap();
            assert_eq!(optimizer_moves(&tree.expr), want, "{name}");
        }
        // Quadratic in the repetitions of one sequence: 3k of them, k windows, about k²/2.
        let moves =
            |k: usize| optimizer_moves(&Expr::parse_tree(&"a*".repeat(3 * k)).unwrap().expr);
        assert_eq!(
            moves(1000),
            (0..1000u64).map(|w| 3000 - 3 * w - 3).sum::<u64>()
        );
    }

    #[test]
    fn the_bounds_refuse_before_compiling() {
        let over_budget = "(a|b)*".repeat(20_000);
        let within = "(a|b)*".repeat(2_000);
        assert!(compiles(&within));
        assert!(!compiles(&over_budget));
        // A class of one letter written a million times: both engines take it, at the limit.
        let at_limit = format!("[{}]", "a".repeat(MAX_PATTERN_BYTES - 2));
        assert!(compiles(&at_limit) && is_ecma_regex(&at_limit));
        let long = format!("[{}]", "a".repeat(MAX_PATTERN_BYTES - 1));
        assert!(!compiles(&long) && !is_ecma_regex(&long));
    }

    #[test]
    fn a_cancelled_check_refuses_at_once() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let flag = Arc::new(AtomicBool::new(false));
        cancel::with_flag(&flag, || {
            assert!(compiles("a+") && is_ecma_regex("a+"));
            flag.store(true, Ordering::Relaxed);
            assert!(!compiles("a+") && !is_ecma_regex("a+"));
        });
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
