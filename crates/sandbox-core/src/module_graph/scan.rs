//! The lexical half of [`super`]: source text with its comments and literals blanked, paths
//! and `use` trees read from it, function bodies measured by brace matching, and the strongly
//! connected components of a graph.

/// Parses a path (or `use` tree) starting at `at`: `a::b::{c, d::e}` gives `[a,b,c]`,
/// `[a,b,d,e]`. Returns where it stopped.
pub(super) fn parse_tree(
    code: &str,
    at: usize,
    prefix: &mut Vec<String>,
    leaves: &mut Vec<Vec<String>>,
) -> usize {
    let bytes = code.as_bytes();
    let mut i = skip_ws(bytes, at);
    let pushed = prefix.len();
    loop {
        if i < bytes.len() && bytes[i] == b'{' {
            i += 1;
            loop {
                i = skip_ws(bytes, i);
                if i >= bytes.len() || bytes[i] == b'}' {
                    i += 1;
                    break;
                }
                i = parse_tree(code, i, prefix, leaves);
                i = skip_ws(bytes, i);
                if i < bytes.len() && bytes[i] == b',' {
                    i += 1;
                }
            }
            prefix.truncate(pushed);
            return i;
        }
        let end = ident_end(bytes, i);
        if end == i {
            if i < bytes.len() && bytes[i] == b'*' {
                i += 1;
            }
            break;
        }
        prefix.push(code[i..end].to_owned());
        i = end;
        if code[i..].starts_with("::") {
            i = skip_ws(bytes, i + 2);
            continue;
        }
        break;
    }
    if !prefix.is_empty() {
        leaves.push(prefix.clone());
    }
    prefix.truncate(pushed);
    i
}

/// `(name, line, lines)` of every `fn` with a body.
pub(super) fn function_spans(code: &str) -> Vec<(String, usize, usize)> {
    let bytes = code.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !word_at(bytes, i, "fn") {
            i += 1;
            continue;
        }
        let name_start = skip_ws(bytes, i + 2);
        let name_end = ident_end(bytes, name_start);
        if name_end == name_start || name_start == i + 2 {
            i += 2;
            continue;
        }
        // The signature ends at the body's `{` or a `;` (no body).
        let mut j = name_end;
        while j < bytes.len() && bytes[j] != b'{' && bytes[j] != b';' {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'{' {
            let mut depth = 0usize;
            let mut k = j;
            while k < bytes.len() {
                match bytes[k] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                k += 1;
            }
            let first = line_of(code, i);
            let last = line_of(code, k.min(bytes.len()));
            spans.push((
                code[name_start..name_end].to_owned(),
                first,
                last - first + 1,
            ));
        }
        i = name_end;
    }
    spans
}

pub(super) fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

pub(super) fn ident_end(bytes: &[u8], at: usize) -> usize {
    let mut i = at;
    if i < bytes.len() && bytes[i] == b'r' && bytes.get(i + 1) == Some(&b'#') {
        i += 2;
    }
    while i < bytes.len() && is_ident(bytes[i]) {
        i += 1;
    }
    if i == at + 2 && bytes.get(at + 1) == Some(&b'#') {
        return at;
    }
    i
}

/// Whether the identifier `word` starts at `at` (not inside a longer identifier).
pub(super) fn word_at(bytes: &[u8], at: usize, word: &str) -> bool {
    bytes[at..].starts_with(word.as_bytes())
        && (at == 0 || !is_ident(bytes[at - 1]))
        && bytes.get(at + word.len()).is_none_or(|&b| !is_ident(b))
}

pub(super) fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && bytes[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// `text` with every comment and the inside of every string and char literal replaced by
/// spaces (line breaks kept), so that what is left is code.
pub(super) fn blank_non_code(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to.min(bytes.len())] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        if b == b'/' && next == Some(b'/') {
            let end = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b == b'/' && next == Some(b'*') {
            let mut depth = 0usize;
            let mut j = i;
            while j < bytes.len() {
                if bytes[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if bytes[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some((start, hashes)) = raw_string_at(bytes, i) {
            let mut closing = vec![b'"'];
            closing.extend(std::iter::repeat_n(b'#', hashes));
            let end = bytes[start..]
                .windows(closing.len())
                .position(|w| w == closing.as_slice())
                .map_or(bytes.len(), |p| start + p + closing.len());
            blank(&mut out, start, end.saturating_sub(closing.len()));
            i = end;
        } else if b == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if b == b'\'' {
            // A char literal ('a', '\n', '\u{1F600}', '"'), else a lifetime or label.
            if next == Some(b'\\') {
                // The escaped char is at `i + 2`; the closing quote comes after it.
                let end = bytes[(i + 3).min(bytes.len())..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map_or(bytes.len(), |p| i + 3 + p);
                blank(&mut out, i + 1, end);
                i = end + 1;
            } else if let Some(c) = text[i + 1..].chars().next() {
                let after = i + 1 + c.len_utf8();
                if bytes.get(after) == Some(&b'\'') {
                    blank(&mut out, i + 1, after);
                    i = after + 1;
                } else {
                    i += 1;
                }
            } else {
                i += 1;
            }
        } else if is_ident(b) {
            // Skip the whole identifier, so `br` or `r` inside one never starts a raw string.
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

/// At a raw (byte) string `r#"`/`br"`: the offset after its opening quote and its `#` count.
pub(super) fn raw_string_at(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    if at > 0 && is_ident(bytes[at - 1]) {
        return None;
    }
    let mut i = at;
    if bytes.get(i) == Some(&b'b') {
        i += 1;
    }
    if bytes.get(i) != Some(&b'r') {
        return None;
    }
    i += 1;
    let mut hashes = 0;
    while bytes.get(i) == Some(&b'#') {
        hashes += 1;
        i += 1;
    }
    (bytes.get(i) == Some(&b'"')).then_some((i + 1, hashes))
}

/// Tarjan's algorithm: the strongly connected components of a graph given as successor lists.
pub(super) fn strongly_connected(successors: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        successors: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        groups: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.successors[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(wi) if s.on_stack[w] => s.low[v] = s.low[v].min(wi),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                group.push(w);
                if w == v {
                    break;
                }
            }
            s.groups.push(group);
        }
    }
    let n = successors.len();
    let mut state = State {
        successors,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        groups: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.groups
}

pub(super) fn line_of(code: &str, at: usize) -> usize {
    code[..at].bytes().filter(|&b| b == b'\n').count() + 1
}
