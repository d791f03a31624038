//! The rules of a file's text: one a line, a `\` at the end of a line
//! (trailing white space allowed after it) joining the next line to the
//! rule, as Suricata does (the `\` is removed and nothing is put in its
//! place). Blank lines and lines whose first non-blank character is `#` are
//! skipped; a comment line never continues. A line ending in `\r` (CRLF
//! files) loses the `\r`.
//!
//! Unlike Suricata, which silently skips a line that starts with a space or
//! a tab, an indented rule is read.

use std::borrow::Cow;

/// The rules in `text`: the line number (1-based) of each one's first line,
/// and its text with continuation lines joined.
pub(crate) fn rules(text: &str) -> Rules<'_> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    Rules {
        lines: text.split('\n').enumerate(),
    }
}

/// The iterator [`rules`] returns.
pub(crate) struct Rules<'t> {
    lines: std::iter::Enumerate<std::str::Split<'t, char>>,
}

/// `line` without a final `\r`.
fn chomp(line: &str) -> &str {
    line.strip_suffix('\r').unwrap_or(line)
}

/// The text before a continuation `\` (and the white space after it), if
/// `line` ends in one.
fn continued(line: &str) -> Option<&str> {
    line.trim_end().strip_suffix('\\')
}

impl<'t> Iterator for Rules<'t> {
    type Item = (usize, Cow<'t, str>);

    fn next(&mut self) -> Option<(usize, Cow<'t, str>)> {
        loop {
            let (i, line) = self.lines.next()?;
            let line = chomp(line);
            let start = line.trim_start();
            if start.is_empty() || start.starts_with('#') {
                continue;
            }
            let Some(head) = continued(line) else {
                return Some((i + 1, Cow::Borrowed(line)));
            };
            let mut rule = head.to_string();
            for (_, next) in self.lines.by_ref() {
                let next = chomp(next);
                match continued(next) {
                    Some(head) => rule.push_str(head),
                    None => {
                        rule.push_str(next);
                        break;
                    }
                }
            }
            return Some((i + 1, Cow::Owned(rule)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<(usize, String)> {
        rules(text).map(|(n, r)| (n, r.into_owned())).collect()
    }

    #[test]
    fn skips_comments_and_blanks_and_joins_continuations() {
        let text = "# comment \\\nalert 1\n\n   \n  # indented comment\nalert 2 \\\n  more \\   \nend\r\nalert 3\\\n\nalert 4\n\talert 5\nalert 6\\";
        assert_eq!(
            all(text),
            vec![
                (2, "alert 1".to_string()),
                (6, "alert 2   more end".to_string()),
                (9, "alert 3".to_string()),
                (11, "alert 4".to_string()),
                (12, "\talert 5".to_string()),
                (13, "alert 6".to_string()),
            ]
        );
    }

    #[test]
    fn a_continued_line_may_look_like_a_comment() {
        // Suricata joins whatever follows a `\`.
        assert_eq!(
            all("alert (a\\\n# b)\n"),
            vec![(1, "alert (a# b)".to_string())]
        );
    }

    #[test]
    fn bom_crlf_and_empty() {
        assert_eq!(all("\u{feff}a\r\n"), vec![(1, "a".to_string())]);
        assert!(all("").is_empty());
        assert!(all("\n\n#\n").is_empty());
    }
}
