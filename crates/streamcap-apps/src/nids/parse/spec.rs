//! The grammar address and port specs share: `any`, a single value (an
//! address or network, a port or range: the kind's own syntax), `!spec`,
//! lists `[a, b, [c, !d]]` (nested), and `$NAME` variables, expanded as
//! they are met.
//!
//! Nesting is bounded ([`MAX_DEPTH`] levels of lists, negations and
//! variables together), and so is the size of a spec after expansion
//! ([`MAX_NODES`]), so neither a deep text nor variables that use each
//! other many times can exhaust the stack or memory.

use crate::nids::vars::{Expanded, Resolver, VarKind};

/// The deepest nesting of lists, negations and variables in one spec.
pub(crate) const MAX_DEPTH: usize = 32;

/// The most nodes a spec may have after its variables are expanded.
pub(crate) const MAX_NODES: usize = 100_000;

/// What differs between address and port specs.
pub(crate) trait Kind {
    /// The spec type.
    type Spec: Clone;
    /// `address` or `port`, for messages.
    const NOUN: &'static str;
    /// The variables of this kind.
    const VAR_KIND: VarKind;
    /// `any`.
    fn any() -> Self::Spec;
    /// `!inner`.
    fn not(inner: Self::Spec) -> Self::Spec;
    /// `[items]`.
    fn list(items: Vec<Self::Spec>) -> Self::Spec;
    /// A single value, trimmed, not `any`.
    fn value(text: &str) -> Result<Self::Spec, String>;
    /// Where the resolver keeps expanded variables of this kind.
    fn cache<'r>(
        r: &'r mut Resolver<'_>,
    ) -> &'r mut std::collections::HashMap<String, Expanded<Self::Spec>>;
}

/// Parses `text` as a spec of kind `K`, starting at nesting level `depth`
/// (above zero inside a variable).
pub(crate) fn parse<K: Kind>(
    text: &str,
    env: &mut Resolver<'_>,
    depth: usize,
) -> Result<Expanded<K::Spec>, String> {
    let mut p = Parser {
        text,
        pos: 0,
        nodes: 0,
        deepest: depth,
    };
    let spec = p.spec::<K>(env, depth)?;
    p.skip_ws();
    if p.pos < text.len() {
        return Err(format!(
            "unexpected `{}` after {} `{}`",
            &text[p.pos..],
            K::NOUN,
            text[..p.pos].trim()
        ));
    }
    Ok(Expanded {
        spec,
        nodes: p.nodes,
        height: p.deepest - depth,
    })
}

/// The message for nesting deeper than [`MAX_DEPTH`].
pub(crate) fn too_deep() -> String {
    format!("lists, negations and variables are nested more than {MAX_DEPTH} deep")
}

/// A cursor over a spec's text.
struct Parser<'t> {
    text: &'t str,
    pos: usize,
    nodes: usize,
    /// The deepest level reached, variables included.
    deepest: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn add_nodes(&mut self, n: usize) -> Result<(), String> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES {
            Err(format!(
                "the spec has more than {MAX_NODES} elements once its variables are expanded"
            ))
        } else {
            Ok(())
        }
    }

    fn spec<K: Kind>(&mut self, env: &mut Resolver<'_>, depth: usize) -> Result<K::Spec, String> {
        if depth > MAX_DEPTH {
            return Err(too_deep());
        }
        self.deepest = self.deepest.max(depth);
        self.skip_ws();
        self.add_nodes(1)?;
        match self.peek() {
            Some(b'!') => {
                self.pos += 1;
                let inner = self.spec::<K>(env, depth + 1)?;
                Ok(K::not(inner))
            }
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    if self.peek() == Some(b']') && items.is_empty() {
                        return Err(format!("empty {} list `[]`", K::NOUN));
                    }
                    items.push(self.spec::<K>(env, depth + 1)?);
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(K::list(items));
                        }
                        Some(_) => {
                            return Err(format!(
                                "expected `,` or `]` in {} list, found `{}`",
                                K::NOUN,
                                &self.text[self.pos..]
                            ))
                        }
                        None => return Err(format!("{} list has no closing `]`", K::NOUN)),
                    }
                }
            }
            Some(b'$') => {
                self.pos += 1;
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                {
                    self.pos += 1;
                }
                let name = &self.text[start..self.pos];
                if name.is_empty() {
                    return Err("`$` without a variable name".to_string());
                }
                let done = env.resolve::<K>(name, depth + 1)?;
                self.add_nodes(done.nodes)?;
                self.deepest = self.deepest.max(depth + 1 + done.height);
                Ok(done.spec)
            }
            _ => {
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|b| !matches!(b, b',' | b']' | b'[') && !b.is_ascii_whitespace())
                {
                    self.pos += 1;
                }
                let value = &self.text[start..self.pos];
                if value.is_empty() {
                    return Err(match self.peek() {
                        None => format!("expected {} {}", article(K::NOUN), K::NOUN),
                        Some(_) => format!(
                            "expected {} {}, found `{}`",
                            article(K::NOUN),
                            K::NOUN,
                            &self.text[self.pos..]
                        ),
                    });
                }
                if value.eq_ignore_ascii_case("any") {
                    Ok(K::any())
                } else {
                    K::value(value)
                }
            }
        }
    }
}

/// `an address`, `a port`.
fn article(noun: &str) -> &'static str {
    if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}
