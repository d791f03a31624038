//! `pcre:"/pattern/modifiers"` (quotes optional, `!` before it negates).
//!
//! The pattern is everything between the first and the last `/`, passed to
//! PCRE2 as written (so `\/`, `\"` and `\;` are PCRE2's escapes of those
//! characters). It is compiled on bytes (no UTF mode), with JIT where
//! available. Modifiers:
//!
//! | modifier | meaning |
//! |---|---|
//! | `i` `s` `m` `x` | caseless, dot matches newline, multi-line, extended |
//! | `R` | relative to the previous match ([`Pcre::relative`]); needs a `content` or `pcre` before it |
//! | `B` `O` | accepted and ignored (raw buffer; match-limit override) |
//! | `A` `E` `G` | rejected: anchored, dollar-end-only and ungreedy have no switch in the `pcre2` crate's builder |
//! | `U` `I` `P` `Q` `H` `D` `M` `C` `S` `Y` `V` `W` | rejected: HTTP buffers are not inspected |
//! | anything else | rejected |

use crate::nids::rule::Pcre;
use pcre2::bytes::RegexBuilder;

/// Parses and compiles a `pcre` value; `after_match` tells whether a
/// `content` or `pcre` comes before it in the rule.
pub(crate) fn parse(value: &str, after_match: bool) -> Result<Pcre, String> {
    let (negated, rest) = super::options::negation(value);
    let body = if rest.starts_with('"') {
        super::options::quoted(rest)?
    } else {
        rest
    };
    let (pattern, modifiers) = match (body.find('/'), body.rfind('/')) {
        (Some(0), Some(last)) if last > 0 => (&body[1..last], &body[last + 1..]),
        _ => return Err(format!("expected \"/pattern/modifiers\", found `{value}`")),
    };
    let mut builder = RegexBuilder::new();
    builder.jit_if_available(true);
    let mut relative = false;
    for m in modifiers.chars() {
        match m {
            'i' => {
                builder.caseless(true);
            }
            's' => {
                builder.dotall(true);
            }
            'm' => {
                builder.multi_line(true);
            }
            'x' => {
                builder.extended(true);
            }
            'R' => relative = true,
            'B' | 'O' => {}
            'A' | 'E' | 'G' => {
                return Err(format!(
                    "pcre modifier `{m}` ({}) is not supported",
                    match m {
                        'A' => "anchored",
                        'E' => "dollar matches only at the end",
                        _ => "ungreedy",
                    }
                ))
            }
            'U' | 'I' | 'P' | 'Q' | 'H' | 'D' | 'M' | 'C' | 'S' | 'Y' | 'V' | 'W' => {
                return Err(format!(
                    "pcre modifier `{m}` selects an HTTP buffer, which is not inspected"
                ))
            }
            _ => return Err(format!("unknown pcre modifier `{m}`")),
        }
    }
    if relative && !after_match {
        return Err("pcre with `R` (relative) needs a content or pcre before it".to_string());
    }
    let regex = builder
        .build(pattern)
        .map_err(|e| format!("`/{pattern}/` does not compile: {e}"))?;
    Ok(Pcre {
        pattern: pattern.to_string(),
        modifiers: modifiers.to_string(),
        relative,
        negated,
        regex,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modifiers_and_forms() {
        let p = parse(r#""/ab\/c/ismxBO""#, false).unwrap();
        assert_eq!(p.pattern, r"ab\/c");
        assert_eq!(p.modifiers, "ismxBO");
        assert!(!p.relative && !p.negated);
        assert!(p.regex.is_match(b"xxAB/C").unwrap());

        let p = parse(r#"!"/^GET/R""#, true).unwrap();
        assert!(p.negated && p.relative);
        let p = parse("/abc/", false).unwrap();
        assert!(p.regex.is_match(b"abc").unwrap());
        assert!(!p.regex.is_match(b"ABC").unwrap());
        // The last slash ends the pattern.
        let p = parse(r#""/a/b/i""#, false).unwrap();
        assert_eq!((p.pattern.as_str(), p.modifiers.as_str()), ("a/b", "i"));
        // Escaped quote and semicolon reach PCRE2 as escapes.
        let p = parse(r#""/a\"b\;c/""#, false).unwrap();
        assert!(p.regex.is_match(b"a\"b;c").unwrap());
        // Bytes, not UTF-8.
        let p = parse(r#""/\xff\x00/""#, false).unwrap();
        assert!(p.regex.is_match(&[1, 0xff, 0]).unwrap());
        let p = parse(r#""/a.b/s""#, false).unwrap();
        assert!(p.regex.is_match(b"a\nb").unwrap());
        let p = parse(r#""/^b$/m""#, false).unwrap();
        assert!(p.regex.is_match(b"a\nb\nc").unwrap());
        let p = parse(r#""/a b # comment/x""#, false).unwrap();
        assert!(p.regex.is_match(b"ab").unwrap());
    }

    #[test]
    fn errors() {
        let table: &[(&str, bool, &str)] = &[
            (r#""/abc/A""#, false, "`A` (anchored)"),
            (r#""/abc/E""#, false, "`E`"),
            (r#""/abc/G""#, false, "`G` (ungreedy)"),
            (r#""/abc/U""#, false, "`U` selects an HTTP buffer"),
            (r#""/abc/iW""#, false, "`W` selects an HTTP buffer"),
            (r#""/abc/Z""#, false, "unknown pcre modifier `Z`"),
            (r#""/abc/ ""#, false, "unknown pcre modifier ` `"),
            (r#""/abc/R""#, false, "needs a content or pcre before it"),
            (r#""/ab(c/""#, false, "does not compile"),
            (r#""abc""#, false, "expected"),
            (r#""/abc""#, false, "expected"),
            (r#""/""#, false, "expected"),
            (r#""/abc/"#, false, "no closing quote"),
            ("", false, "expected"),
        ];
        for (value, after, want) in table {
            let e = parse(value, *after).unwrap_err();
            assert!(e.contains(want), "{value}: {e}");
        }
    }
}
