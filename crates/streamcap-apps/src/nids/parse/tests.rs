//! Whole rules and files: every keyword, every rejection, duplicates, line
//! numbers, Suricata's own rule files, and 10,000 generated rules.

use super::*;
use crate::nids::rule::*;
use std::time::Instant;

const H: &str = "alert tcp any any -> any any";

fn one(text: &str) -> Result<Rule, RuleError> {
    let mut p = parse_rules(text, "t.rules", &Vars::default());
    assert_eq!(p.rules.len() + p.errors.len(), 1, "{text}: {p:?}");
    match p.errors.pop() {
        Some(e) => Err(e),
        None => Ok(p.rules.remove(0)),
    }
}

fn rule(options: &str) -> Rule {
    let text = format!("{H} ({options})");
    one(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn contents(r: &Rule) -> Vec<&Content> {
    r.matches
        .iter()
        .filter_map(|m| match m {
            PayloadMatch::Content(c) => Some(c),
            PayloadMatch::Pcre(_) => None,
        })
        .collect()
}

fn content(r: &Rule) -> &Content {
    contents(r)[0]
}

#[test]
fn every_keyword() {
    let r = rule(r#"msg:"a \"quoted\" \; msg\\"; content:"abc"; sid:7;"#);
    assert_eq!(r.msg, r#"a "quoted" ; msg\"#);
    assert_eq!((r.sid, r.rev, r.gid), (7, 0, 1));
    assert_eq!(r.classtype, None);
    assert_eq!(r.priority, None);
    assert_eq!(r.source.line, 1);
    assert_eq!(&*r.source.file, "t.rules");

    let r = rule(
        r#"content:"|41 42|c\:\;"; nocase; offset:1; depth:10; fast_pattern; sid:1; rev:3; gid:2;"#,
    );
    let c = content(&r);
    assert_eq!(c.pattern, b"ABc:;");
    assert!(c.nocase && c.fast_pattern && !c.negated && !c.is_relative());
    assert_eq!((c.offset, c.depth), (Some(1), Some(10)));
    assert_eq!((r.rev, r.gid), (3, 2));

    let r = rule(r#"content:"a"; content:!"bc"; distance:-1; within:5; sid:1;"#);
    let cs = contents(&r);
    assert_eq!(cs.len(), 2);
    assert!(!cs[0].negated && cs[1].negated);
    assert_eq!((cs[1].distance, cs[1].within), (Some(-1), Some(5)));
    assert!(cs[1].is_relative());

    let r = rule(r#"content: ! "x"; sid:1;"#);
    assert!(content(&r).negated);

    for fp in ["fast_pattern:only", "fast_pattern:0,2", "fast_pattern:"] {
        assert!(
            content(&rule(&format!(r#"content:"abc"; {fp}; sid:1;"#))).fast_pattern,
            "{fp}"
        );
    }

    let r = rule(r#"content:"GET"; pcre:"/^\/x/Ri"; pcre:!"/y/"; content:"z"; sid:1;"#);
    let kinds: Vec<&str> = r
        .matches
        .iter()
        .map(|m| match m {
            PayloadMatch::Content(_) => "content",
            PayloadMatch::Pcre(_) => "pcre",
        })
        .collect();
    assert_eq!(kinds, ["content", "pcre", "pcre", "content"]);
    let PayloadMatch::Pcre(p) = &r.matches[1] else {
        unreachable!()
    };
    assert!(p.relative && !p.negated && p.regex.is_match(b"/X").unwrap());
    let PayloadMatch::Pcre(p) = &r.matches[2] else {
        unreachable!()
    };
    assert!(p.negated && !p.relative);

    // A modifier after a pcre applies to the content before it.
    let r = rule(r#"content:"a"; pcre:"/b/"; nocase; sid:1;"#);
    assert!(content(&r).nocase);

    let r = rule("flow:established,to_server; sid:1;");
    assert!(r.flow.established);
    assert_eq!(r.flow.direction, Some(FlowDirection::ToServer));
    assert!(r.matches.is_empty());

    let r = rule("classtype:trojan-activity; priority:2; sid:1;");
    assert_eq!(r.classtype.as_deref(), Some("trojan-activity"));
    assert_eq!(r.priority, Some(2));
    // Any case; kept in the table's spelling.
    let r = rule("classtype:Trojan-Activity; sid:1;");
    assert_eq!(r.classtype.as_deref(), Some("trojan-activity"));
    // Repeated: the highest priority (lowest number) wins, as Suricata.
    let r =
        rule("classtype:misc-activity; classtype:trojan-activity; classtype:bad-unknown; sid:1;");
    assert_eq!(r.classtype.as_deref(), Some("trojan-activity"));
    // Repeated priority: the last.
    assert_eq!(rule("priority:1; priority:255; sid:1;").priority, Some(255));

    let r = rule(
        "reference:url,example.com/a\\;b; reference: cve,2020-1234 ; metadata:created_at 2020_01_01, updated_at 2021_02_02; metadata:x y; sid:1;",
    );
    assert_eq!(r.references, ["url,example.com/a\\;b", "cve,2020-1234"]);
    assert_eq!(
        r.metadata,
        ["created_at 2020_01_01, updated_at 2021_02_02", "x y"]
    );

    // Keywords in any case; white space anywhere it may be; no msg.
    let r = rule(r#" CONTENT : "abc" ;NoCase;  SID : 5 ;  "#);
    assert!(content(&r).nocase);
    assert_eq!((r.sid, r.msg.as_str()), (5, ""));
    // `nocase:;` is `nocase;`.
    assert!(content(&rule(r#"content:"a"; nocase:; sid:1;"#)).nocase);
    // A `;` or `)` inside quotes ends nothing.
    assert_eq!(rule(r#"msg:"a;b)"; content:"c;d)"; sid:1;"#).msg, "a;b)");
    assert_eq!(content(&rule(r#"content:"c;d)"; sid:1;"#)).pattern, b"c;d)");
    // depth equal to the length, within equal to the length, distance 0 on
    // the first content (as Suricata).
    assert_eq!(
        content(&rule(r#"content:"abc"; depth:3; sid:1;"#)).depth,
        Some(3)
    );
    assert_eq!(
        content(&rule(r#"content:"abc"; distance:0; within:3; sid:1;"#)).within,
        Some(3)
    );
}

#[test]
fn headers_in_rules() {
    let r =
        one("drop udp [$HOME_NET,!192.168.1.1] $HTTP_PORTS <> !$HOME_NET [1024:,!8080] (sid:1;)")
            .unwrap();
    assert_eq!(r.header.action, Action::Drop);
    assert_eq!(r.header.proto, RuleProto::Udp);
    assert!(r.header.bidirectional);
    assert!(r.header.src.contains("10.1.2.3".parse().unwrap()));
    assert!(!r.header.src.contains("192.168.1.1".parse().unwrap()));
    assert!(r.header.dst.contains("8.8.8.8".parse().unwrap()));
    assert!(r.header.dst_ports.contains(1024) && !r.header.dst_ports.contains(8080));
    assert_eq!(r.header.src_ports, PortSpec::Range(80, 80));
    let r = one("alert ip [1.2.3.4,[5.6.7.0/24,!5.6.7.8]] any -> any any(sid:1;)").unwrap();
    assert_eq!(r.header.src.to_string(), "[1.2.3.4,[5.6.7.0/24,!5.6.7.8]]");
}

#[test]
fn every_rejection_names_file_line_and_keyword() {
    // (options or whole rule, keyword at fault, part of the message).
    let table: &[(&str, Option<&str>, &str)] = &[
        // Unsupported keywords.
        (
            r#"content:"a"; http.uri; sid:1;"#,
            Some("http.uri"),
            "keyword `http.uri` is not supported",
        ),
        (
            r#"content:"a"; http_header; sid:1;"#,
            Some("http_header"),
            "not supported",
        ),
        (
            r#"content:"a"; byte_test:1,>,2,0; sid:1;"#,
            Some("byte_test"),
            "not supported",
        ),
        (
            r#"flowbits:set,x; sid:1;"#,
            Some("flowbits"),
            "not supported",
        ),
        (
            r#"threshold:type limit,track by_src,count 1,seconds 60; sid:1;"#,
            Some("threshold"),
            "not supported",
        ),
        (r#"dsize:>10; sid:1;"#, Some("dsize"), "not supported"),
        (
            r#"content:"a"; isdataat:1,relative; sid:1;"#,
            Some("isdataat"),
            "not supported",
        ),
        (
            r#"tls.sni; content:"a"; sid:1;"#,
            Some("tls.sni"),
            "not supported",
        ),
        (
            r#"dns.query; content:"a"; sid:1;"#,
            Some("dns.query"),
            "not supported",
        ),
        (
            r#"app-layer-protocol:http; sid:1;"#,
            Some("app-layer-protocol"),
            "not supported",
        ),
        (
            r#"file_data; content:"a"; sid:1;"#,
            Some("file_data"),
            "not supported",
        ),
        (
            r#"content:"a"; rawbytes; sid:1;"#,
            Some("rawbytes"),
            "not supported",
        ),
        (
            r#"BYTE_JUMP:1,0; sid:1;"#,
            Some("byte_jump"),
            "not supported",
        ),
        // sid, rev, gid.
        (r#"content:"a";"#, Some("sid"), "no `sid`"),
        (r#"msg:"a";"#, Some("sid"), "no `sid`"),
        ("sid:0;", Some("sid"), "from 1 to 4294967295, found `0`"),
        ("sid:4294967296;", Some("sid"), "found `4294967296`"),
        ("sid:x;", Some("sid"), "found `x`"),
        (r#"sid:"1";"#, Some("sid"), "found `\"1\"`"),
        ("sid;", Some("sid"), "needs a value"),
        ("sid:1; sid:2;", Some("sid"), "twice"),
        ("sid:1; rev:0;", Some("rev"), "found `0`"),
        ("sid:1; rev:1; rev:2;", Some("rev"), "twice"),
        ("sid:1; gid:1; gid:1;", Some("gid"), "twice"),
        ("sid:1; gid:-1;", Some("gid"), "found `-1`"),
        // msg.
        ("msg:a b; sid:1;", Some("msg"), "double quotes"),
        (r#"msg:""; sid:1;"#, Some("msg"), "empty"),
        (r#"msg:"a"; msg:"b"; sid:1;"#, Some("msg"), "twice"),
        (
            r#"msg:"a"b"; sid:1;"#,
            Some("msg"),
            "unterminated quoted string",
        ),
        (
            r#"msg:"a" x; sid:1;"#,
            Some("msg"),
            "text after its closing quote",
        ),
        // content.
        ("content:abc; sid:1;", Some("content"), "double quotes"),
        (r#"content:""; sid:1;"#, Some("content"), "empty"),
        (
            r#"content:"a\bc"; sid:1;"#,
            Some("content"),
            "`\\b` is not an escape",
        ),
        (
            r#"content:"a|4G|"; sid:1;"#,
            Some("content"),
            "not a hex digit",
        ),
        (r#"content:"|41 4|"; sid:1;"#, Some("content"), "odd number"),
        (
            r#"content:"a|41"; sid:1;"#,
            Some("content"),
            "no closing `|`",
        ),
        ("content; sid:1;", Some("content"), "needs a value"),
        (r#"content:"a"b"c"; sid:1;"#, Some("content"), "unescaped"),
        // Modifiers.
        (
            "nocase; sid:1;",
            Some("nocase"),
            "needs a content before it",
        ),
        (
            r#"pcre:"/a/"; nocase; sid:1;"#,
            Some("nocase"),
            "needs a content before it",
        ),
        (
            r#"content:"a"; nocase; nocase; sid:1;"#,
            Some("nocase"),
            "twice",
        ),
        (
            r#"content:"a"; nocase:1; sid:1;"#,
            Some("nocase"),
            "takes no value",
        ),
        ("depth:3; sid:1;", Some("depth"), "needs a content"),
        (
            r#"content:"abc"; depth:2; sid:1;"#,
            Some("depth"),
            "depth 2 is less than the content's length 3",
        ),
        (
            r#"content:"abc"; depth:0; sid:1;"#,
            Some("depth"),
            "less than",
        ),
        (
            r#"content:"abc"; depth:3; depth:4; sid:1;"#,
            Some("depth"),
            "twice",
        ),
        (
            r#"content:"abc"; offset:-1; sid:1;"#,
            Some("offset"),
            "from 0 to 65535",
        ),
        (
            r#"content:"abc"; offset:70000; sid:1;"#,
            Some("offset"),
            "from 0 to 65535",
        ),
        (
            r#"content:"abc"; offset:1; offset:2; sid:1;"#,
            Some("offset"),
            "twice",
        ),
        (
            r#"content:"abc"; offset:1; distance:2; sid:1;"#,
            Some("distance"),
            "cannot be used with `offset` or `depth`",
        ),
        (
            r#"content:"abc"; depth:5; within:5; sid:1;"#,
            Some("within"),
            "cannot be used with",
        ),
        (
            r#"content:"abc"; within:3; depth:5; sid:1;"#,
            Some("depth"),
            "cannot be used with `distance` or `within`",
        ),
        (
            r#"content:"abc"; distance:1; offset:5; sid:1;"#,
            Some("offset"),
            "cannot be used with",
        ),
        (
            r#"content:"abc"; within:2; sid:1;"#,
            Some("within"),
            "within 2 is less than the content's length 3",
        ),
        (
            r#"content:"abc"; within:-5; sid:1;"#,
            Some("within"),
            "less than",
        ),
        (
            r#"content:"a"; distance:1; distance:2; sid:1;"#,
            Some("distance"),
            "twice",
        ),
        (
            r#"content:"a"; distance:70000; sid:1;"#,
            Some("distance"),
            "from -65535 to 65535",
        ),
        (
            r#"content:"a"; within:x; sid:1;"#,
            Some("within"),
            "found `x`",
        ),
        (
            r#"content:"abc"; fast_pattern; content:"d"; fast_pattern; sid:1;"#,
            Some("fast_pattern"),
            "more than one content",
        ),
        (
            r#"content:"abc"; fast_pattern:1,5; sid:1;"#,
            Some("fast_pattern"),
            "past the content's length",
        ),
        (
            r#"content:"abc"; fast_pattern:chop; sid:1;"#,
            Some("fast_pattern"),
            "found `chop`",
        ),
        (
            "fast_pattern; sid:1;",
            Some("fast_pattern"),
            "needs a content",
        ),
        (
            r#"content:"a"; content:"b"; distance:0; fast_pattern:only; sid:1;"#,
            Some("fast_pattern"),
            "`fast_pattern:only` cannot be used",
        ),
        (
            r#"content:"abc"; fast_pattern:only; offset:1; sid:1;"#,
            Some("fast_pattern"),
            "cannot be used",
        ),
        (
            r#"content:!"abc"; fast_pattern:only; sid:1;"#,
            Some("fast_pattern"),
            "negated",
        ),
        // pcre.
        (
            r#"pcre:"/a/U"; sid:1;"#,
            Some("pcre"),
            "modifier `U` selects an HTTP buffer",
        ),
        (r#"pcre:"/a/H"; sid:1;"#, Some("pcre"), "`H`"),
        (
            r#"pcre:"/a/A"; sid:1;"#,
            Some("pcre"),
            "`A` (anchored) is not supported",
        ),
        (
            r#"pcre:"/a/q"; sid:1;"#,
            Some("pcre"),
            "unknown pcre modifier `q`",
        ),
        (r#"pcre:"/a(/"; sid:1;"#, Some("pcre"), "does not compile"),
        (
            r#"pcre:"/a/R"; sid:1;"#,
            Some("pcre"),
            "needs a content or pcre before it",
        ),
        (r#"pcre:"abc"; sid:1;"#, Some("pcre"), "expected"),
        // flow.
        (
            "flow:established; flow:to_server; sid:1;",
            Some("flow"),
            "twice",
        ),
        (
            "flow:only_stream; sid:1;",
            Some("flow"),
            "`only_stream` is not supported",
        ),
        ("flow:no_stream; sid:1;", Some("flow"), "not supported"),
        (
            "flow:to_server,to_client; sid:1;",
            Some("flow"),
            "direction is given twice",
        ),
        ("flow:bogus; sid:1;", Some("flow"), "unknown flow option"),
        ("flow:; sid:1;", Some("flow"), "needs a value"),
        // Metadata keywords.
        (
            "classtype:no-such-class; sid:1;",
            Some("classtype"),
            "unknown classtype `no-such-class`",
        ),
        ("priority:0; sid:1;", Some("priority"), "from 1 to 255"),
        ("priority:256; sid:1;", Some("priority"), "from 1 to 255"),
        (
            "reference:url; sid:1;",
            Some("reference"),
            "expected `type,value`",
        ),
        (
            "reference:,x; sid:1;",
            Some("reference"),
            "expected `type,value`",
        ),
        ("metadata; sid:1;", Some("metadata"), "needs a value"),
        // Option syntax.
        (r#"msg:"a"; sid:1"#, Some("sid"), "does not end with `;`"),
        (
            r#"msg:"a; sid:1;"#,
            Some("msg"),
            "unterminated quoted string",
        ),
        ("sid:1;;", None, "empty option"),
        ("", None, "no options"),
        ("  ", None, "no options"),
    ];
    for (options, keyword, want) in table {
        let text = format!("# a comment first\n\n{H} ({options})\n");
        let mut p = parse_rules(&text, "my.rules", &Vars::default());
        assert!(p.rules.is_empty(), "{options}: loaded");
        assert_eq!(p.errors.len(), 1, "{options}");
        let e = p.errors.remove(0);
        assert_eq!(e.keyword.as_deref(), *keyword, "{options}: {e}");
        assert!(e.message.contains(want), "{options}: {e}");
        assert_eq!(e.source.line, 3, "{options}");
        let shown = e.to_string();
        assert!(shown.starts_with("my.rules:3: "), "{shown}");
        if let Some(k) = keyword {
            assert!(shown.contains(k), "{shown}");
        }
    }
}

#[test]
fn header_rejections() {
    let table: &[(&str, Option<&str>, &str)] = &[
        (
            "reject tcp any any -> any any (sid:1;)",
            Some("reject"),
            "action `reject` is not supported",
        ),
        (
            "alert http any any -> any any (sid:1;)",
            Some("http"),
            "protocol `http` is not supported",
        ),
        (
            "alert tcp-pkt any any -> any any (sid:1;)",
            Some("tcp-pkt"),
            "not supported",
        ),
        ("alert tcp any any -> any any", None, "no options"),
        (
            "alert tcp any any -> any any (sid:1;) # trailing",
            None,
            "does not end with `)`",
        ),
        (
            "alert tcp any any -> any any (sid:1;",
            None,
            "does not end with `)`",
        ),
        (
            "alert tcp any any <- any any (sid:1;)",
            None,
            "not a direction",
        ),
        (
            "alert tcp !any any -> any any (sid:1;)",
            None,
            "holds no address",
        ),
        (
            "alert tcp any any -> any [80,!80] (sid:1;)",
            None,
            "holds no port",
        ),
        (
            "alert tcp $NOPE any -> any any (sid:1;)",
            None,
            "undefined variable `$NOPE`",
        ),
        ("(sid:1;)", None, "has 0 fields"),
    ];
    for (text, keyword, want) in table {
        let e = one(text).unwrap_err();
        assert_eq!(e.keyword.as_deref(), *keyword, "{text}: {e}");
        assert!(e.message.contains(want), "{text}: {e}");
    }
}

#[test]
fn files_continuations_line_numbers_and_other_rules() {
    let text = "\
# alert tcp any any -> any any (sid:100;)
alert tcp any any -> any any (msg:\"one\"; \\
    content:\"ab\\
cd\"; \\
    sid:1;)

alert tcp any any -> any any (content:\"x\"; http_uri; sid:2;)
\t
   alert udp any any -> any 53 (msg:\"three\"; sid:3;)\r
alert tcp any any -> any any (msg:\"four\"; \\
  dsize:1; sid:4;)
alert tcp any any -> any any (sid:5;)
";
    let p = parse_rules(text, "f.rules", &Vars::default());
    let loaded: Vec<(u32, usize)> = p.rules.iter().map(|r| (r.sid, r.source.line)).collect();
    assert_eq!(loaded, [(1, 2), (3, 9), (5, 12)]);
    assert_eq!(content(&p.rules[0]).pattern, b"abcd");
    let errors: Vec<(usize, Option<&str>)> = p
        .errors
        .iter()
        .map(|e| (e.source.line, e.keyword.as_deref()))
        .collect();
    assert_eq!(errors, [(7, Some("http_uri")), (10, Some("dsize"))]);
}

#[test]
fn duplicates_keep_the_higher_rev() {
    let text = "\
alert tcp any any -> any any (sid:1; rev:1;)
alert tcp any any -> any any (sid:1; rev:1;)
alert tcp any any -> any any (sid:1; gid:5; rev:1;)
alert tcp any any -> any any (sid:2; rev:1;)
alert tcp any any -> any any (sid:2; rev:3;)
alert tcp any any -> any any (sid:2; rev:2;)
";
    let p = parse_rules(text, "d.rules", &Vars::default());
    let kept: Vec<(u32, u32, u32, usize)> = p
        .rules
        .iter()
        .map(|r| (r.gid, r.sid, r.rev, r.source.line))
        .collect();
    assert_eq!(kept, [(1, 1, 1, 1), (5, 1, 1, 3), (1, 2, 3, 5)]);
    let lines: Vec<usize> = p.errors.iter().map(|e| e.source.line).collect();
    assert_eq!(lines, [2, 4, 6]);
    for e in &p.errors {
        assert_eq!(e.keyword.as_deref(), Some("sid"));
        assert!(e.message.contains("duplicate of gid 1 sid"), "{e}");
    }
    assert!(
        p.errors[0].message.contains("at d.rules:1 (rev 1)"),
        "{}",
        p.errors[0]
    );
    assert!(
        p.errors[1]
            .message
            .contains("d.rules:5 has a higher rev (3 > 1)"),
        "{}",
        p.errors[1]
    );
    assert!(
        p.errors[2].message.contains("at d.rules:5 (rev 3)"),
        "{}",
        p.errors[2]
    );

    // Across files.
    let mut all = parse_rules(
        "alert tcp any any -> any any (sid:9; rev:1;)\n",
        "a",
        &Vars::default(),
    );
    all.extend(parse_rules(
        "alert tcp any any -> any any (sid:9; rev:2;)\nalert tcp any any -> any any (sid:10;)\n",
        "b",
        &Vars::default(),
    ));
    let kept: Vec<String> = all.rules.iter().map(|r| r.source.to_string()).collect();
    assert_eq!(kept, ["b:1", "b:2"]);
    assert_eq!(all.errors.len(), 1);
    assert_eq!(all.errors[0].source.to_string(), "a:1");
}

#[test]
fn user_vars_and_classifications_are_used() {
    let mut vars = Vars::default();
    vars.set("HOME_NET", "[10.0.0.0/8]").unwrap();
    vars.set("WEB_PORTS", "[80,8080]").unwrap();
    vars.classifications =
        crate::nids::Classifications::parse("config classification: my-class,Mine,2\n", "c")
            .unwrap();
    let p = parse_rules(
        "alert tcp $EXTERNAL_NET any -> $HOME_NET $WEB_PORTS (classtype:my-class; sid:1;)\nalert tcp any any -> any any (classtype:trojan-activity; sid:2;)\n",
        "u.rules",
        &vars,
    );
    assert_eq!(p.rules.len(), 1);
    let h = &p.rules[0].header;
    assert!(h.dst.contains("10.9.9.9".parse().unwrap()));
    assert!(!h.dst.contains("192.168.1.1".parse().unwrap()));
    assert!(h.src.contains("192.168.1.1".parse().unwrap()));
    assert!(h.dst_ports.contains(8080));
    assert_eq!(p.errors.len(), 1);
    assert_eq!(p.errors[0].keyword.as_deref(), Some("classtype"));
}

#[test]
fn adversarial_inputs_do_not_panic() {
    let deep = format!(
        "alert tcp {}1.2.3.4{} any -> any any (sid:1;)",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let nots = format!(
        "alert tcp {}1.2.3.4 any -> any any (sid:1;)",
        "!".repeat(10_000)
    );
    let many = format!(
        "alert tcp [{}] any -> any any (sid:1;)",
        vec!["$HOME_NET"; 50_000].join(",")
    );
    let texts = [
        deep.as_str(),
        nots.as_str(),
        many.as_str(),
        "alert",
        "(",
        ")",
        "alert tcp any any -> any any (",
        "alert tcp any any -> any any ()",
        "alert tcp any any -> any any (\\",
        "alert tcp any any -> any any (content:\"\\",
        "alert tcp any any -> any any (content:\"|\"; sid:1;)",
        "alert tcp any any -> any any (pcre:\"/\"; sid:1;)",
        "alert tcp any any -> any any (pcre:\"//\"; sid:1;)",
        "alert tcp any any -> any any (pcre:\"/(?<=a+)b/\"; sid:1;)",
        "alert tcp any any -> any any (msg:\"é\\é\"; content:\"é|é|\"; sid:1;)",
        "alert tcp é é -> é é (sid:1;)",
        "alert tcp [1.2.3.4,]] any -> any any (sid:1;)",
        "alert tcp any 1:2:3 -> any any (sid:1;)",
        "\u{feff}\r\n\\\n\\",
    ];
    for text in texts {
        let p = parse_rules(text, "x", &Vars::default());
        let lines = text.lines().count().max(1);
        for e in &p.errors {
            assert!((1..=lines).contains(&e.source.line), "{e}");
        }
    }
    let p = parse_rules(&deep, "x", &Vars::default());
    assert!(
        p.errors[0].message.contains("nested more than"),
        "{}",
        p.errors[0]
    );
    let p = parse_rules(&many, "x", &Vars::default());
    assert!(
        p.errors[0].message.contains("more than 100000 elements"),
        "{}",
        p.errors[0]
    );
}

#[test]
fn a_file_that_is_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latin1.rules");
    let mut bytes = b"alert tcp any any -> any any (msg:\"caf".to_vec();
    bytes.extend_from_slice(b"\xe9\"; sid:1;)\nalert tcp any any -> any any (sid:2;)\n");
    std::fs::write(&path, bytes).unwrap();
    let p = load_rule_file(&path, &Vars::default()).unwrap();
    assert_eq!(p.rules.len(), 1);
    assert_eq!(p.rules[0].sid, 2);
    assert!(p.errors[0].message.contains("not UTF-8"));
    assert!(p.errors[0]
        .to_string()
        .starts_with(&format!("{}:1: ", path.display())));
    assert!(load_rule_file(&dir.path().join("missing"), &Vars::default()).is_err());
}

/// Suricata's own rule files, where installed: nothing panics, every error
/// names a line of its file, and the counts are printed (most rules use
/// app-layer keywords and are rejected, as expected).
#[test]
fn suricatas_rule_files() {
    let mut files = Vec::new();
    for dir in ["/etc/suricata/rules", "/usr/share/suricata/rules"] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            files.extend(
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "rules")),
            );
        }
    }
    if files.is_empty() {
        eprintln!("skipped: no Suricata rule files installed");
        return;
    }
    files.sort();
    let vars = Vars::default();
    let (mut loaded, mut rejected) = (0, 0);
    let mut reasons: HashMap<String, usize> = HashMap::new();
    for f in &files {
        let p = load_rule_file(f, &vars).unwrap();
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let lines = text.lines().count();
        for e in &p.errors {
            assert!((1..=lines).contains(&e.source.line), "{e}");
            let why = e
                .keyword
                .clone()
                .unwrap_or_else(|| e.message.chars().take(40).collect());
            *reasons.entry(why).or_default() += 1;
        }
        loaded += p.rules.len();
        rejected += p.errors.len();
    }
    let mut reasons: Vec<(String, usize)> = reasons.into_iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    eprintln!(
        "{} Suricata rule files: {loaded} rules loaded, {rejected} rejected; most common reasons: {:?}",
        files.len(),
        &reasons[..reasons.len().min(12)]
    );
    assert!(loaded + rejected > 0);
}

/// `n` varied rules (headers with variables, lists and negations; contents
/// with hex, escapes and modifiers; pcres; flows; metadata), with distinct
/// sids.
fn generated_rules(n: usize) -> String {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |m: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % m as u64) as usize
    };
    let actions = ["alert", "alert", "alert", "drop", "pass"];
    let protos = ["tcp", "tcp", "tcp", "udp", "icmp", "ip"];
    let addrs = [
        "any",
        "$HOME_NET",
        "$EXTERNAL_NET",
        "!$HOME_NET",
        "[$HOME_NET,!192.168.1.1]",
        "10.0.0.0/8",
        "[1.2.3.4,[5.6.7.0/24,!5.6.7.8]]",
        "2001:db8::/32",
        "$HTTP_SERVERS",
    ];
    let ports = [
        "any",
        "any",
        "80",
        "$HTTP_PORTS",
        "1024:",
        ":1023",
        "[80,443,8000:8100]",
        "!22",
        "$FILE_DATA_PORTS",
    ];
    let words = [
        "GET",
        "POST",
        "admin",
        "passwd",
        "cmd.exe",
        "User-Agent",
        "evil",
        "select",
        "union",
        "shell",
    ];
    let classes = [
        "trojan-activity",
        "web-application-attack",
        "misc-activity",
        "attempted-admin",
    ];
    let mut out = String::new();
    for i in 0..n {
        let mut opts = format!(
            "msg:\"generated rule {i} \\\"{}\\\"\"; ",
            words[next(words.len())]
        );
        if next(5) > 0 {
            opts.push_str("flow:established,to_server; ");
        }
        let contents = 1 + next(3);
        for c in 0..contents {
            let w = words[next(words.len())];
            let neg = if c > 0 && next(8) == 0 { "!" } else { "" };
            opts.push_str(&format!(
                "content:{neg}\"{w}|20 {:02x}|{i}\\;\"; ",
                next(256)
            ));
            if next(2) == 0 {
                opts.push_str("nocase; ");
            }
            if c == 0 {
                if next(3) == 0 {
                    opts.push_str(&format!("offset:{}; depth:{}; ", next(10), 40 + next(100)));
                }
                if next(2) == 0 {
                    opts.push_str("fast_pattern; ");
                }
            } else if next(2) == 0 {
                opts.push_str(&format!(
                    "distance:{}; within:{}; ",
                    next(20),
                    40 + next(50)
                ));
            }
        }
        if next(4) == 0 {
            opts.push_str(&format!(
                "pcre:\"/{}[0-9]{{{},}}\\s+x{i}/Ri\"; ",
                words[next(words.len())],
                1 + next(5)
            ));
        }
        opts.push_str(&format!("classtype:{}; ", classes[next(classes.len())]));
        if next(3) == 0 {
            opts.push_str(&format!("reference:url,example.com/{i}; "));
        }
        opts.push_str(&format!(
            "metadata:created_at 2024_01_{:02}; sid:{}; rev:{};",
            1 + next(28),
            1_000_000 + i,
            1 + next(9)
        ));
        let continued = if next(10) == 0 { " \\\n    " } else { " " };
        out.push_str(&format!(
            "{} {} {} {} {} {} {} ({opts}{continued})\n",
            actions[next(actions.len())],
            protos[next(protos.len())],
            addrs[next(addrs.len())],
            ports[next(ports.len())],
            if next(10) == 0 { "<>" } else { "->" },
            addrs[next(addrs.len())],
            ports[next(ports.len())],
        ));
        if next(20) == 0 {
            out.push_str("# a comment line\n\n");
        }
    }
    out
}

#[test]
fn ten_thousand_generated_rules_all_parse() {
    let text = generated_rules(10_000);
    let p = parse_rules(&text, "gen.rules", &Vars::default());
    assert!(p.errors.is_empty(), "{}", p.errors[0]);
    assert_eq!(p.rules.len(), 10_000);
    let pcres = p
        .rules
        .iter()
        .flat_map(|r| &r.matches)
        .filter(|m| matches!(m, PayloadMatch::Pcre(_)))
        .count();
    assert!(pcres > 1000, "{pcres}");
}

/// The time to parse 10,000 generated rules (run with `--ignored
/// --nocapture`; meaningful in an optimized build).
#[test]
#[ignore]
fn parse_speed() {
    let text = generated_rules(10_000);
    let vars = Vars::default();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let p = parse_rules(&text, "gen.rules", &vars);
        let s = t.elapsed().as_secs_f64();
        assert_eq!(p.rules.len(), 10_000);
        best = best.min(s);
    }
    eprintln!(
        "parsed 10,000 rules ({} bytes) in {:.1} ms (best of 5)",
        text.len(),
        best * 1e3
    );
}
