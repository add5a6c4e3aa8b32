//! Splits a command line into words as bash would, for the commands browsers copy: single
//! quotes, double quotes (with `\"`, `\\`, `\$` and `` \` `` escapes), ANSI-C `$'...'` quotes
//! (Chrome uses them for bodies with newlines or quotes), backslash escapes, and line
//! continuations (a backslash before a newline, also `\r\n`). Nothing is expanded: a `$VAR`
//! stays as written.

/// The words, or an error naming what is unterminated.
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = line.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some('\r') if chars.get(i + 2) == Some(&'\n') => i += 1,
                    Some(&next) => {
                        word.push(next);
                        in_word = true;
                    }
                    None => {}
                }
                i += 2;
                continue;
            }
            '\'' => {
                let end = find(&chars, i + 1, '\'').ok_or("an unterminated ' quote")?;
                word.extend(&chars[i + 1..end]);
                in_word = true;
                i = end + 1;
                continue;
            }
            '$' if chars.get(i + 1) == Some(&'\'') => {
                let (text, end) = ansi_c(&chars, i + 2)?;
                word.push_str(&text);
                in_word = true;
                i = end + 1;
                continue;
            }
            '"' => {
                let mut j = i + 1;
                loop {
                    match chars.get(j) {
                        None => return Err("an unterminated \" quote".into()),
                        Some('"') => break,
                        Some('\\') if matches!(chars.get(j + 1), Some('"' | '\\' | '$' | '`')) => {
                            word.push(chars[j + 1]);
                            j += 2;
                        }
                        Some('\\') if chars.get(j + 1) == Some(&'\n') => j += 2,
                        Some(&other) => {
                            word.push(other);
                            j += 1;
                        }
                    }
                }
                in_word = true;
                i = j + 1;
                continue;
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
        i += 1;
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

fn find(chars: &[char], from: usize, c: char) -> Option<usize> {
    chars[from..].iter().position(|&x| x == c).map(|p| p + from)
}

/// The text of `$'...'` from `from` (just after the quote) and the index of the closing quote.
fn ansi_c(chars: &[char], from: usize) -> Result<(String, usize), String> {
    let mut out = String::new();
    let mut i = from;
    loop {
        match chars.get(i) {
            None => return Err("an unterminated $' quote".into()),
            Some('\'') => return Ok((out, i)),
            Some('\\') => {
                let Some(&e) = chars.get(i + 1) else {
                    return Err("an unterminated $' quote".into());
                };
                i += 2;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'a' => out.push('\u{7}'),
                    'b' => out.push('\u{8}'),
                    'e' | 'E' => out.push('\u{1b}'),
                    'f' => out.push('\u{c}'),
                    'v' => out.push('\u{b}'),
                    '0'..='7' => {
                        let mut n = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            match chars.get(i).and_then(|c| c.to_digit(8)) {
                                Some(d) => {
                                    n = n * 8 + d;
                                    i += 1;
                                }
                                None => break,
                            }
                        }
                        out.push(char::from_u32(n).unwrap_or('\u{fffd}'));
                    }
                    'x' | 'u' | 'U' => {
                        let max = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let mut n = 0u32;
                        let mut read = 0;
                        while read < max {
                            match chars.get(i).and_then(|c| c.to_digit(16)) {
                                Some(d) => {
                                    n = n * 16 + d;
                                    i += 1;
                                    read += 1;
                                }
                                None => break,
                            }
                        }
                        if read == 0 {
                            out.push('\\');
                            out.push(e);
                        } else {
                            out.push(char::from_u32(n).unwrap_or('\u{fffd}'));
                        }
                    }
                    other => {
                        // \\ \' \" \? stand for themselves; bash keeps the backslash otherwise.
                        if !matches!(other, '\\' | '\'' | '"' | '?') {
                            out.push('\\');
                        }
                        out.push(other);
                    }
                }
            }
            Some(&c) => {
                out.push(c);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn quotes_escapes_and_continuations() {
        let table: [(&str, &[&str]); 7] = [
            (
                "curl 'https://a/b?c=1&d=2'",
                &["curl", "https://a/b?c=1&d=2"],
            ),
            ("curl \"a \\\"b\\\" \\$c\"", &["curl", "a \"b\" $c"]),
            (
                "curl a \\\n  -H 'x: y' \\\r\n  -k",
                &["curl", "a", "-H", "x: y", "-k"],
            ),
            (
                "--data-raw $'{\"a\":\"b\\nc\",\"d\":\"it\\'s\"}'",
                &["--data-raw", "{\"a\":\"b\nc\",\"d\":\"it's\"}"],
            ),
            ("a\\ b 'c'\"d\"e", &["a b", "cde"]),
            ("x ''", &["x", ""]),
            ("$'\\x41\\u00e9\\101'", &["A\u{e9}A"]),
        ];
        for (line, want) in table {
            assert_eq!(split(line).unwrap(), want, "{line}");
        }
        assert!(split("curl 'open").unwrap_err().contains("unterminated"));
    }
}
