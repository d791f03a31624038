//! A rule's options, `(key:value; key; ...)`: splitting them, and the
//! quoted values some keywords take.
//!
//! An option ends at a `;` that is neither escaped (`\;`) nor inside a
//! quoted string: a `\` escapes the character after it, in quotes or not,
//! and an unescaped `"` opens or closes a string. (Suricata does not look at
//! quotes, so `msg:"a;b"` is an error there and one option here.) Every
//! option, the last one too, ends with `;`; white space around keywords and
//! values is dropped. Keywords are matched without regard to ASCII case.

/// One option: the keyword (trimmed, as written) and the value after the
/// first `:` (trimmed), if there is a `:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawOption<'a> {
    /// The keyword.
    pub(crate) keyword: &'a str,
    /// The value, if any.
    pub(crate) value: Option<&'a str>,
}

/// An error splitting options: a message, and the keyword if one is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SplitError {
    pub(crate) keyword: Option<String>,
    pub(crate) message: String,
}

/// Splits `body`, the text between a rule's `(` and its last `)`.
pub(crate) fn split(body: &str) -> Result<Vec<RawOption<'_>>, SplitError> {
    let bytes = body.as_bytes();
    let mut options = Vec::new();
    let mut start = 0;
    let mut i = 0;
    let mut quoted = false;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'"' => quoted = !quoted,
            b';' if !quoted => {
                options.push(option(&body[start..i])?);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let rest = body.get(start..).unwrap_or("").trim();
    if quoted {
        let keyword = keyword_of(rest);
        return Err(SplitError {
            keyword: Some(keyword.to_ascii_lowercase()),
            message: format!("unterminated quoted string in `{rest}`"),
        });
    }
    if !rest.is_empty() {
        let keyword = keyword_of(rest);
        return Err(SplitError {
            keyword: Some(keyword.to_ascii_lowercase()),
            message: format!("option `{rest}` does not end with `;`"),
        });
    }
    if options.is_empty() {
        return Err(SplitError {
            keyword: None,
            message: "the rule has no options".to_string(),
        });
    }
    Ok(options)
}

/// The keyword of an option's text.
fn keyword_of(text: &str) -> &str {
    text.split(':').next().unwrap_or(text).trim()
}

/// One option's text (without its `;`).
fn option(text: &str) -> Result<RawOption<'_>, SplitError> {
    let (keyword, value) = match text.split_once(':') {
        Some((k, v)) => (k.trim(), Some(v.trim())),
        None => (text.trim(), None),
    };
    if keyword.is_empty() {
        return Err(SplitError {
            keyword: None,
            message: if text.trim().is_empty() {
                "empty option (`;;`)".to_string()
            } else {
                format!("option `{}` has no keyword", text.trim())
            },
        });
    }
    if !keyword
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    {
        return Err(SplitError {
            keyword: None,
            message: format!("`{keyword}` is not a keyword"),
        });
    }
    Ok(RawOption { keyword, value })
}

/// The text between the quotes of `value`, which must be one quoted string
/// (`"..."`, escapes left as they are) and nothing else.
pub(crate) fn quoted(value: &str) -> Result<&str, String> {
    let bytes = value.as_bytes();
    if bytes.first() != Some(&b'"') {
        return Err(format!(
            "the value must be in double quotes, found `{value}`"
        ));
    }
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'"' => {
                if i + 1 == bytes.len() {
                    return Ok(&value[1..i]);
                }
                return Err(format!(
                    "unescaped `\"` inside the value, or text after its closing quote: `{value}`"
                ));
            }
            _ => {}
        }
        i += 1;
    }
    Err(format!("the value has no closing quote: `{value}`"))
}

/// `!value` (white space allowed after the `!`): whether it was negated,
/// and the rest.
pub(crate) fn negation(value: &str) -> (bool, &str) {
    match value.strip_prefix('!') {
        Some(rest) => (true, rest.trim_start()),
        None => (false, value),
    }
}

/// A `msg`-style string's text: each `\x` becomes `x`.
pub(crate) fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(body: &str) -> Vec<(String, Option<String>)> {
        split(body)
            .unwrap()
            .into_iter()
            .map(|o| (o.keyword.to_string(), o.value.map(str::to_string)))
            .collect()
    }

    fn kv(k: &str, v: Option<&str>) -> (String, Option<String>) {
        (k.to_string(), v.map(str::to_string))
    }

    #[test]
    fn splits_on_unquoted_unescaped_semicolons() {
        assert_eq!(
            keys(r#"msg:"a;b"; content:"x\"y;z"; nocase; reference:url,a\;b; sid : 1 ;  "#),
            vec![
                kv("msg", Some(r#""a;b""#)),
                kv("content", Some(r#""x\"y;z""#)),
                kv("nocase", None),
                kv("reference", Some(r"url,a\;b")),
                kv("sid", Some("1")),
            ]
        );
        assert_eq!(
            keys(r#"content:"a\\"; sid:1;"#),
            vec![kv("content", Some(r#""a\\""#)), kv("sid", Some("1"))]
        );
        assert_eq!(keys("nocase:;"), vec![kv("nocase", Some(""))]);
        assert_eq!(keys("a:b:c;"), vec![kv("a", Some("b:c"))]);
    }

    #[test]
    fn split_errors() {
        let table: &[(&str, Option<&str>, &str)] = &[
            ("msg:\"a\"; sid:1", Some("sid"), "does not end with `;`"),
            ("msg:\"a; sid:1;", Some("msg"), "unterminated quoted string"),
            ("msg:\"a\";; sid:1;", None, "empty option"),
            (" ", None, "no options"),
            ("", None, "no options"),
            (":x; sid:1;", None, "has no keyword"),
            ("a b:1;", None, "is not a keyword"),
        ];
        for (body, kw, want) in table {
            let e = split(body).unwrap_err();
            assert_eq!(e.keyword.as_deref(), *kw, "{body}");
            assert!(e.message.contains(want), "{body}: {}", e.message);
        }
    }

    #[test]
    fn quoted_values() {
        assert_eq!(quoted(r#""abc""#), Ok("abc"));
        assert_eq!(quoted(r#""a\"b""#), Ok(r#"a\"b"#));
        assert_eq!(quoted(r#""a\\""#), Ok(r"a\\"));
        assert_eq!(quoted(r#""""#), Ok(""));
        assert!(quoted("abc").is_err());
        assert!(quoted(r#""abc"#).is_err());
        assert!(quoted(r#""a\""#).is_err());
        assert!(quoted(r#""a"b""#).unwrap_err().contains("unescaped"));
        assert!(quoted(r#""a" x"#).is_err());
        assert!(quoted("").is_err());
        assert!(quoted("\"").is_err());
    }

    #[test]
    fn negations_and_unescaping() {
        assert_eq!(negation("!\"a\""), (true, "\"a\""));
        assert_eq!(negation("! \"a\""), (true, "\"a\""));
        assert_eq!(negation("\"a\""), (false, "\"a\""));
        assert_eq!(unescape(r#"a\"b\;c\\d\:e\q"#), r#"a"b;c\d:eq"#);
        assert_eq!(unescape("end\\"), "end");
    }
}
