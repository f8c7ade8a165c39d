//! Regular-expression syntax for `pattern` and `patternProperties` names, as the
//! reference's regex engine (a backtracking engine with Rust `regex` syntax) accepts it:
//! groups and classes must close and nest at most 63 deep, a quantifier needs something
//! repeatable before it (not a lookaround) and a well-formed `{n,m}`, escapes must be
//! known, group names unique, and back-references must name existing groups. Only the
//! syntax is checked; nothing is compiled or matched.

/// Whether the reference's regex engine accepts `pattern`.
pub(super) fn is_valid_regex(pattern: &str) -> bool {
    let chars: Vec<char> = pattern.chars().collect();
    let mut parser = RegexSyntax {
        chars: &chars,
        pos: 0,
        depth: 0,
        lookarounds: 0,
        groups: 0,
        names: Vec::new(),
        max_backref: 0,
    };
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
        let name: String = self
            .chars
            .get(start..self.pos)
            .unwrap_or_default()
            .iter()
            .collect();
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
                '-' if self.peek().is_some_and(|n| n != ']')
                    && !first
                    && previous != ClassItem::RangeDone =>
                {
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
            if matches!(item, ClassItem::Set)
                && self.peek() == Some('-')
                && self.chars.get(self.pos + 1).is_some_and(|n| *n != ']')
            {
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
            other if other.is_ascii() && !other.is_ascii_alphanumeric() => {
                Some(ClassItem::Char(other))
            }
            _ => None,
        }
    }

    /// An escape outside a class (the backslash already read).
    fn escape(&mut self) -> bool {
        let Some(c) = self.bump() else {
            return false;
        };
        match c {
            'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'n' | 'r' | 't' | 'f' | 'v' | 'b' | 'B' | 'A'
            | 'z' => true,
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
                    let name = self
                        .chars
                        .get(start..self.pos)
                        .unwrap_or_default()
                        .iter()
                        .collect();
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
        "L",
        "Lu",
        "Ll",
        "Lt",
        "Lm",
        "Lo",
        "LC",
        "M",
        "Mn",
        "Mc",
        "Me",
        "N",
        "Nd",
        "Nl",
        "No",
        "P",
        "Pc",
        "Pd",
        "Ps",
        "Pe",
        "Pi",
        "Pf",
        "Po",
        "S",
        "Sm",
        "Sc",
        "Sk",
        "So",
        "Z",
        "Zs",
        "Zl",
        "Zp",
        "C",
        "Cc",
        "Cf",
        "Cs",
        "Co",
        "Cn",
        "Letter",
        "Uppercase_Letter",
        "Lowercase_Letter",
        "Titlecase_Letter",
        "Cased_Letter",
        "Modifier_Letter",
        "Other_Letter",
        "Mark",
        "Nonspacing_Mark",
        "Spacing_Mark",
        "Enclosing_Mark",
        "Number",
        "Decimal_Number",
        "Letter_Number",
        "Other_Number",
        "Punctuation",
        "Connector_Punctuation",
        "Dash_Punctuation",
        "Open_Punctuation",
        "Close_Punctuation",
        "Initial_Punctuation",
        "Final_Punctuation",
        "Other_Punctuation",
        "Symbol",
        "Math_Symbol",
        "Currency_Symbol",
        "Modifier_Symbol",
        "Other_Symbol",
        "Separator",
        "Space_Separator",
        "Line_Separator",
        "Paragraph_Separator",
        "Other",
        "Control",
        "Format",
        "Surrogate",
        "Private_Use",
        "Unassigned",
        "Any",
        "ASCII",
        "Assigned",
        "Alphabetic",
        "Alpha",
        "Lowercase",
        "Uppercase",
        "White_Space",
        "Whitespace",
        "Emoji",
        "Emoji_Presentation",
        "Extended_Pictographic",
        "Digit",
        "Latin",
        "Greek",
        "Cyrillic",
        "Armenian",
        "Hebrew",
        "Arabic",
        "Syriac",
        "Thaana",
        "Devanagari",
        "Bengali",
        "Gurmukhi",
        "Gujarati",
        "Tamil",
        "Telugu",
        "Kannada",
        "Malayalam",
        "Thai",
        "Lao",
        "Tibetan",
        "Myanmar",
        "Georgian",
        "Hangul",
        "Ethiopic",
        "Cherokee",
        "Khmer",
        "Mongolian",
        "Hiragana",
        "Katakana",
        "Bopomofo",
        "Han",
        "Yi",
        "Common",
        "Inherited",
        "Sinhala",
        "Latn",
        "Grek",
        "Cyrl",
        "Hani",
        "Hira",
        "Kana",
        "Arab",
        "Hebr",
        "Zyyy",
    ];
    let value = name.split_once('=').map_or(name, |(_, v)| v);
    NAMES.iter().any(|n| n.eq_ignore_ascii_case(value.trim()))
}
