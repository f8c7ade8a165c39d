//! URI references in schemas (`$id`, `$ref`, `$dynamicRef`): RFC 3986 syntax checked with
//! the reference's messages, and resolution against a base (RFC 3986 §5.2) with the
//! normalization the reference shows in its messages (lower-case scheme, percent-encoded
//! unreserved characters decoded, dot segments removed).

/// Check the syntax of a URI reference.
pub(super) fn check_reference(uri: &str) -> Result<(), String> {
    let invalid = |reason: &str, index: usize| {
        Err(format!(
            "Invalid URI reference '{uri}': {reason} at index {index}"
        ))
    };
    let bytes = uri.as_bytes();
    if let Some(colon) = scheme_end(uri) {
        let scheme = bytes.get(..colon).unwrap_or_default();
        let valid_scheme = scheme.first().is_some_and(u8::is_ascii_alphabetic)
            && scheme
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
        if !valid_scheme {
            return invalid("unexpected character", 0);
        }
    }
    let authority = authority_range(uri);
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
            b'[' | b']' if !authority.as_ref().is_some_and(|r| r.contains(&i)) => {
                return invalid("unexpected character", i)
            }
            b if b.is_ascii_alphanumeric() => {}
            b'-' | b'.' | b'_' | b'~' | b':' | b'/' | b'?' | b'[' | b']' | b'@' | b'!' | b'$'
            | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => {}
            _ => return invalid("unexpected character", i),
        }
        i += 1;
    }
    Ok(())
}

/// Whether a (syntactically valid) reference has a scheme, i.e. is absolute.
pub(super) fn has_scheme(uri: &str) -> bool {
    scheme_end(uri).is_some_and(|i| i > 0)
}

/// The byte index of the `:` ending a scheme, when the reference starts with one.
fn scheme_end(uri: &str) -> Option<usize> {
    let colon = uri.find(':')?;
    uri.find(['/', '?', '#'])
        .is_none_or(|i| colon < i)
        .then_some(colon)
}

/// The byte range of the authority (after `//`), when there is one.
fn authority_range(uri: &str) -> Option<std::ops::Range<usize>> {
    let after_scheme = scheme_end(uri).map_or(0, |i| i + 1);
    let rest = uri.get(after_scheme..)?;
    let start = after_scheme + rest.strip_prefix("//").map(|_| 2)?;
    let len = uri
        .get(start..)?
        .find(['/', '?', '#'])
        .unwrap_or(uri.len() - start);
    Some(start..start + len)
}

/// The parts of a URI reference (fragment dropped).
struct Parts<'a> {
    scheme: Option<&'a str>,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
}

fn parts(uri: &str) -> Parts<'_> {
    let uri = uri.split('#').next().unwrap_or(uri);
    let (scheme, rest) = match scheme_end(uri) {
        Some(i) if i > 0 => (uri.get(..i), uri.get(i + 1..).unwrap_or_default()),
        _ => (None, uri),
    };
    let (authority, rest) = match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find(['/', '?']).unwrap_or(after.len());
            (after.get(..end), after.get(end..).unwrap_or_default())
        }
        None => (None, rest),
    };
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    Parts {
        scheme,
        authority,
        path,
        query,
    }
}

/// Resolve `reference` against the absolute `base`; the result has no fragment.
pub(super) fn resolve(base: &str, reference: &str) -> String {
    let b = parts(base);
    let r = parts(reference);
    let (scheme, authority, path, query);
    if r.scheme.is_some() {
        (scheme, authority, path, query) =
            (r.scheme, r.authority, remove_dot_segments(r.path), r.query);
    } else {
        scheme = b.scheme;
        if r.authority.is_some() {
            (authority, path, query) = (r.authority, remove_dot_segments(r.path), r.query);
        } else {
            authority = b.authority;
            if r.path.is_empty() {
                path = b.path.to_owned();
                query = r.query.or(b.query);
            } else {
                let merged = if r.path.starts_with('/') {
                    r.path.to_owned()
                } else if b.authority.is_some() && b.path.is_empty() {
                    format!("/{}", r.path)
                } else {
                    match b.path.rfind('/') {
                        Some(i) => format!("{}{}", b.path.get(..=i).unwrap_or_default(), r.path),
                        None => r.path.to_owned(),
                    }
                };
                path = remove_dot_segments(&merged);
                query = r.query;
            }
        }
    }
    let mut out = String::new();
    if let Some(s) = scheme {
        out.push_str(&s.to_ascii_lowercase());
        out.push(':');
    }
    if let Some(a) = authority {
        out.push_str("//");
        out.push_str(a);
    }
    out.push_str(&path);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    decode_unreserved(&out)
}

/// An absolute reference in normal form (no fragment).
pub(super) fn normalize(absolute: &str) -> String {
    resolve(absolute, absolute)
}

fn remove_dot_segments(path: &str) -> String {
    let mut output: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    let mut trailing_slash = false;
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "." => trailing_slash = i == last,
            ".." => {
                if output.len() > usize::from(absolute) {
                    output.pop();
                }
                trailing_slash = i == last;
            }
            s => {
                output.push(s);
                trailing_slash = false;
            }
        }
    }
    let mut joined = output.join("/");
    if trailing_slash {
        joined.push('/');
    }
    if absolute && !joined.starts_with('/') {
        joined.insert(0, '/');
    }
    joined
}

/// Decode `%XX` escapes of unreserved characters (`A-Z a-z 0-9 - . _ ~`).
fn decode_unreserved(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let decoded = bytes
                .get(i + 1..i + 3)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~'));
            if let Some(c) = decoded {
                out.push(c);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}
