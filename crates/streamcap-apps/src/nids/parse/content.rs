//! `content` strings: the text between the quotes to bytes.
//!
//! Outside `|...|`, characters stand for their (UTF-8) bytes, and `\"`,
//! `\;`, `\\` and `\:` for the character after the `\`; any other escape is
//! an error (as in Suricata). Inside `|...|`, pairs of hex digits give bytes;
//! spaces (and tabs) are allowed anywhere, even between the two digits of a
//! byte, as Suricata allows. A content of no byte is an error.

/// Decodes the text between a `content`'s quotes.
pub(crate) fn decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                match bytes.get(i + 1) {
                    Some(&c @ (b'"' | b';' | b'\\' | b':')) => out.push(c),
                    Some(_) => {
                        let c = text
                            .get(i + 1..)
                            .and_then(|s| s.chars().next())
                            .unwrap_or('?');
                        return Err(format!(
                            "`\\{c}` is not an escape (only \\\" \\; \\\\ and \\: are; write other bytes in |hex|)"
                        ));
                    }
                    None => return Err("the content ends with a lone `\\`".to_string()),
                }
                i += 2;
            }
            b'"' => return Err("unescaped `\"` in the content".to_string()),
            b'|' => {
                let end = bytes[i + 1..]
                    .iter()
                    .position(|&b| b == b'|')
                    .map(|p| i + 1 + p)
                    .ok_or_else(|| format!("hex block `{}` has no closing `|`", &text[i..]))?;
                hex_block(&text[i + 1..end], &mut out)?;
                i = end + 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    if out.is_empty() {
        return Err("the content is empty".to_string());
    }
    Ok(out)
}

/// The bytes of a hex block's inside (`41 42`).
fn hex_block(block: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let mut high: Option<u8> = None;
    for c in block.chars() {
        if c == ' ' || c == '\t' {
            continue;
        }
        let Some(d) = c.to_digit(16) else {
            return Err(format!("`{c}` is not a hex digit, in |{block}|"));
        };
        let d = d as u8;
        match high.take() {
            None => high = Some(d),
            Some(h) => out.push(h << 4 | d),
        }
    }
    if high.is_some() {
        return Err(format!("odd number of hex digits in |{block}|"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_text_hex_and_escapes() {
        let table: &[(&str, &[u8])] = &[
            ("abc", b"abc"),
            ("|41 42 43|", b"ABC"),
            ("|414243|", b"ABC"),
            ("a|4 1|c", b"aAc"),
            ("a|41  42|c", b"aABc"),
            ("| 0d 0A |", b"\r\n"),
            ("|ff|", &[0xff]),
            ("a||b", b"ab"),
            ("x|3b|y|3B 3b|", b"x;y;;"),
            (r#"a\"b"#, b"a\"b"),
            (r"a\;b", b"a;b"),
            (r"a\\b", b"a\\b"),
            (r"a\:b", b"a:b"),
            (r"\\", b"\\"),
            ("a;b", b"a;b"),
            (" ab ", b" ab "),
            ("é", "é".as_bytes()),
            ("GET |2f|", b"GET /"),
        ];
        for (text, want) in table {
            assert_eq!(decode(text).as_deref(), Ok(*want), "{text}");
        }
    }

    #[test]
    fn errors() {
        let table: &[(&str, &str)] = &[
            ("", "empty"),
            ("||", "empty"),
            ("a|", "no closing `|`"),
            ("a|41|c|42", "no closing `|`"),
            ("|4G|", "`G` is not a hex digit"),
            ("|41 4|", "odd number"),
            (r"|41\;|", "`\\` is not a hex digit"),
            (r"a\bc", "`\\b` is not an escape"),
            (r"a\|b", "`\\|` is not an escape"),
            (r"a\", "lone"),
            ("a\"b", "unescaped"),
            (r"\é", "`\\é` is not an escape"),
        ];
        for (text, want) in table {
            let e = decode(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
