//! RFC 8785 emission and the strict parser: RFC 8785 Appendix B numbers, the cyberphone
//! `testdata` input/output pairs, the integer-only rule, and each thing the strict parser
//! must refuse.

use receipts::canonical::{
    CanonicalError, MAX_SAFE_INTEGER, StrictJsonError, from_slice_strict, parse_strict,
    to_canonical_vec,
};
use serde_json::Value;

const LIMIT: usize = 1 << 20;

/// Parses `input` strictly and checks its canonical form is `expected`.
fn check(input: &str, expected: &str) {
    let value = parse_strict(input.as_bytes(), LIMIT).expect("vector parses");
    let out = to_canonical_vec(&value).expect("vector canonicalizes");
    assert_eq!(
        String::from_utf8(out).expect("utf-8"),
        expected,
        "input {input}"
    );
}

/// cyberphone/json-canonicalization testdata/{input,output}/arrays.json.
#[test]
fn cyberphone_arrays() {
    check(
        "[\n  56,\n  {\n    \"d\": true,\n    \"10\": null,\n    \"1\": [ ]\n  }\n]",
        r#"[56,{"1":[],"10":null,"d":true}]"#,
    );
}

/// testdata french.json: keys sorted by UTF-16 code units, not by locale.
#[test]
fn cyberphone_french() {
    check(
        "{\n  \"peach\": \"This sorting order\",\n  \"péché\": \"is wrong according to French\",\n  \"pêche\": \"but canonicalization MUST\",\n  \"sin\":   \"ingnore locale\"\n}\n",
        r#"{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ingnore locale"}"#,
    );
}

/// testdata unicode.json: no Unicode normalization.
#[test]
fn cyberphone_unicode() {
    check(
        "{\n  \"Unnormalized Unicode\":\"\\u1e0d\\u0307\"\n}\n",
        "{\"Unnormalized Unicode\":\"\u{1e0d}\u{0307}\"}",
    );
}

/// testdata weird.json: UTF-16 ordering puts U+1F602 (a surrogate pair, 0xD83D…) before
/// U+FB33; U+0080 and U+007F are written raw.
#[test]
fn cyberphone_weird() {
    check(
        "{\n  \"\\u20ac\": \"Euro Sign\",\n  \"1\": \"One\",\n  \"\\u0080\": \"Control\\u007f\",\n  \"\\ud83d\\ude02\": \"Smiley\",\n  \"\\u00f6\": \"Latin Small Letter O With Diaeresis\",\n  \"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\",\n  \"</script>\": \"Browser Challenge\"\n}\n",
        "{\"1\":\"One\",\"</script>\":\"Browser Challenge\",\"\u{80}\":\"Control\u{7f}\",\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\"\u{1f602}\":\"Smiley\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}",
    );
}

/// testdata values.json minus its `numbers` member (floats, which receipts never carry):
/// string escaping and literals.
#[test]
fn cyberphone_values_without_floats() {
    check(
        "{\n  \"escaping\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\",\n  \"literals\": [null, true, false]\n}",
        "{\"escaping\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\",\"literals\":[null,true,false]}",
    );
}

/// testdata structures.json holds `56.0`, a float: our emitter refuses it, naming where.
#[test]
fn cyberphone_structures_float_is_refused() {
    let input = "{\n  \"1\": {\"f\": {\"f\": \"hi\",\"F\": 5} ,\"\\n\": 56.0},\n  \"10\": { },\n  \"\": \"empty\",\n  \"a\": { },\n  \"111\": [ { } ],\n  \"A\": { }\n}";
    let value = parse_strict(input.as_bytes(), LIMIT).expect("parses");
    match to_canonical_vec(&value) {
        Err(CanonicalError::Float { path, value }) => {
            assert_eq!(path, "/1/\n");
            assert_eq!(value, "56.0");
        }
        other => panic!("expected a float error, got {other:?}"),
    }
    // With the float made an integer, the output is testdata/output/structures.json.
    check(
        &input.replace("56.0", "56"),
        r#"{"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}"#,
    );
}

/// RFC 8785 Appendix B: IEEE 754 bit patterns and their JSON text. Checked against the
/// `serde_json_canonicalizer` crate (the reference our own writer is tested against); our
/// own emitter refuses every one of them that is a float, and accepts the integers below
/// 2^53.
#[test]
fn rfc8785_appendix_b_numbers() {
    const TABLE: &[(u64, &str)] = &[
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0xffefffffffffffff, "-1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"),
        (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
        (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"),
        (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"),
        (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"),
        (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ];
    for &(bits, expected) in TABLE {
        let x = f64::from_bits(bits);
        let text = serde_json_canonicalizer::to_string(&x).expect("finite");
        assert_eq!(text, expected, "bits {bits:016x}");
        assert!(
            matches!(to_canonical_vec(&x), Err(CanonicalError::Float { .. })),
            "bits {bits:016x} must be refused as a float"
        );
    }
    // NaN and Infinity (7fffffffffffffff, 7ff0000000000000) have no JSON form at all.
    assert!(serde_json_canonicalizer::to_string(&f64::from_bits(0x7fffffffffffffff)).is_err());
    assert!(serde_json_canonicalizer::to_string(&f64::from_bits(0x7ff0000000000000)).is_err());
}

#[test]
fn integers_below_2_pow_53_only() {
    assert_eq!(
        to_canonical_vec(&MAX_SAFE_INTEGER).expect("fits"),
        b"9007199254740991"
    );
    assert_eq!(
        to_canonical_vec(&-(MAX_SAFE_INTEGER as i64)).expect("fits"),
        b"-9007199254740991"
    );
    assert_eq!(to_canonical_vec(&0u8).expect("fits"), b"0");
    for big in [MAX_SAFE_INTEGER + 1, u64::MAX] {
        match to_canonical_vec(&serde_json::json!({"a": [big]})) {
            Err(CanonicalError::IntegerOutOfRange { path, value }) => {
                assert_eq!(path, "/a/0");
                assert_eq!(value, big.to_string());
            }
            other => panic!("{big}: {other:?}"),
        }
    }
    assert!(matches!(
        to_canonical_vec(&i64::MIN),
        Err(CanonicalError::IntegerOutOfRange { .. })
    ));
    // JSON pointer escaping of the path.
    match to_canonical_vec(&serde_json::json!({"a/b~c": 1.5})) {
        Err(CanonicalError::Float { path, .. }) => assert_eq!(path, "/a~1b~0c"),
        other => panic!("{other:?}"),
    }
}

fn refuse(input: &[u8], expected: StrictJsonError) {
    assert_eq!(
        parse_strict(input, LIMIT).unwrap_err(),
        expected,
        "input {:?}",
        String::from_utf8_lossy(input)
    );
}

#[test]
fn strict_parser_refuses_duplicate_keys() {
    refuse(
        br#"{"a":1,"a":2}"#,
        StrictJsonError::DuplicateKey {
            path: String::new(),
            key: "a".into(),
        },
    );
    // Equal only after unescaping.
    refuse(
        br#"{"a":1,"\u0061":2}"#,
        StrictJsonError::DuplicateKey {
            path: String::new(),
            key: "a".into(),
        },
    );
    // At depth, inside an array.
    refuse(
        br#"{"x":[{"k":{}},{"k":1,"k":1}]}"#,
        StrictJsonError::DuplicateKey {
            path: "/x/1".into(),
            key: "k".into(),
        },
    );
    // Same key in sibling objects is fine.
    assert!(parse_strict(br#"[{"k":1},{"k":2}]"#, LIMIT).is_ok());
}

#[test]
fn strict_parser_refuses_bad_text() {
    refuse(
        b"{\"a\":\"\xff\"}",
        StrictJsonError::InvalidUtf8 { offset: 6 },
    );
    refuse(
        br#"["\ud800"]"#,
        StrictJsonError::LoneSurrogate { offset: 2 },
    );
    refuse(
        br#"["\udc00\ud800"]"#,
        StrictJsonError::LoneSurrogate { offset: 2 },
    );
    refuse(
        br#"["\ud800\u0041"]"#,
        StrictJsonError::LoneSurrogate { offset: 2 },
    );
    refuse(
        br#"{"\ud83d":1}"#,
        StrictJsonError::LoneSurrogate { offset: 2 },
    );
}

#[test]
fn strict_parser_size_and_grammar() {
    assert_eq!(
        parse_strict(b"[1] ", 3).unwrap_err(),
        StrictJsonError::TooLarge { size: 4, limit: 3 }
    );
    assert!(parse_strict(b"[1] ", 4).is_ok());
    for bad in [
        &b"{\"a\":1,}"[..],
        b"[1,]",
        b"01",
        b"1.",
        b"-",
        b"1e",
        b"[1] [2]",
        b"\"a\tb\"",
        b"\"\\x\"",
        b"tru",
        b"{\"a\" 1}",
        b"\xef\xbb\xbf{}",
        b"",
        b"NaN",
    ] {
        assert!(
            matches!(
                parse_strict(bad, LIMIT),
                Err(StrictJsonError::Syntax { .. })
            ),
            "{:?} must be a syntax error",
            String::from_utf8_lossy(bad)
        );
    }
    let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
    assert!(matches!(
        parse_strict(deep.as_bytes(), LIMIT),
        Err(StrictJsonError::TooDeep { .. })
    ));
    let ok_deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    assert!(parse_strict(ok_deep.as_bytes(), LIMIT).is_ok());
    // Surrogate pairs and escapes decode.
    let value = parse_strict(br#"{"s":"\ud83d\ude02\n\/"}"#, LIMIT).expect("valid");
    assert_eq!(value["s"], Value::String("\u{1f602}\n/".into()));
}

#[test]
fn from_slice_strict_types() {
    #[derive(serde::Deserialize, Debug)]
    struct Point {
        #[allow(dead_code)]
        x: u32,
    }
    assert!(from_slice_strict::<Point>(br#"{"x":1}"#, LIMIT).is_ok());
    assert!(matches!(
        from_slice_strict::<Point>(br#"{"x":1,"x":2}"#, LIMIT),
        Err(StrictJsonError::DuplicateKey { .. })
    ));
    assert!(matches!(
        from_slice_strict::<Point>(br#"{"y":1}"#, LIMIT),
        Err(StrictJsonError::Shape { .. })
    ));
}

mod properties {
    use proptest::prelude::*;
    use receipts::canonical::{parse_strict, to_canonical_vec};
    use serde_json::Value;

    /// JSON values with integer numbers only, nested a few levels.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-(1i64 << 53) + 1..(1i64 << 53)).prop_map(Value::from),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever serde_json writes, the strict parser reads back to the same value, and
        /// canonical output is a fixed point.
        #[test]
        fn strict_parser_reads_what_serde_json_writes(value in json_value()) {
            let text = serde_json::to_string_pretty(&value).expect("json");
            prop_assert_eq!(&parse_strict(text.as_bytes(), usize::MAX).expect("strict"), &value);
            let canonical = to_canonical_vec(&value).expect("integers only");
            let again = parse_strict(&canonical, usize::MAX).expect("strict");
            prop_assert_eq!(to_canonical_vec(&again).expect("canonical"), canonical);
        }

        /// Arbitrary bytes never panic the parser, and whatever it accepts serde_json
        /// accepts too.
        #[test]
        fn strict_parser_never_panics(bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..64),
            prop::collection::vec(prop::sample::select(b"{}[]\":,0123456789-+.eEtrufalsnd \\u".to_vec()), 0..48),
        ]) {
            if parse_strict(&bytes, usize::MAX).is_ok() {
                prop_assert!(serde_json::from_slice::<Value>(&bytes).is_ok());
            }
        }
    }
}

#[derive(serde::Serialize)]
struct Measured {
    name: &'static str,
    inner: Inner,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Inner {
    score_ratio: f64,
    runs: Vec<f64>,
    by_key: std::collections::BTreeMap<String, f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reading: Option<Reading>,
}

#[derive(serde::Serialize)]
enum Reading {
    Value(f64),
    Pair { low: f64, high: f64 },
}

fn measured(score_ratio: f64) -> Measured {
    Measured {
        name: "m",
        inner: Inner {
            score_ratio,
            runs: Vec::new(),
            by_key: Default::default(),
            reading: None,
        },
    }
}

fn non_finite(result: Result<Vec<u8>, CanonicalError>) -> (String, String, String) {
    match result {
        Err(e @ CanonicalError::NonFinite { .. }) => {
            let message = e.to_string();
            let CanonicalError::NonFinite { path, value } = e else {
                unreachable!()
            };
            (path, value, message)
        }
        other => panic!("expected a non-finite error, got {other:?}"),
    }
}

/// serde_json writes NaN and ±Infinity as `null`; the canonical emitter refuses them with
/// the JSON pointer of the field (serialized names, map keys escaped, enum variants as
/// keys), where before it emitted `null` silently.
#[test]
fn nan_and_infinity_are_refused_naming_the_field() {
    assert_eq!(
        non_finite(to_canonical_vec(&measured(f64::NAN))),
        (
            "/inner/scoreRatio".to_owned(),
            "NaN".to_owned(),
            "non-finite float `NaN` at `/inner/scoreRatio`: JSON has no such number, payloads \
             carry integers only"
                .to_owned()
        )
    );
    let (path, value, _) = non_finite(to_canonical_vec(&measured(f64::INFINITY)));
    assert_eq!(
        (path.as_str(), value.as_str()),
        ("/inner/scoreRatio", "Infinity")
    );

    let mut m = measured(f64::NEG_INFINITY);
    m.inner.score_ratio = 1.0;
    m.inner.runs = vec![0.0, f64::NEG_INFINITY];
    let (path, value, _) = non_finite(to_canonical_vec(&m));
    assert_eq!(
        (path.as_str(), value.as_str()),
        ("/inner/runs/1", "-Infinity")
    );

    let mut m = measured(1.0);
    m.inner.by_key.insert("a/b~c".into(), f32::NAN);
    let (path, value, _) = non_finite(to_canonical_vec(&m));
    assert_eq!(
        (path.as_str(), value.as_str()),
        ("/inner/byKey/a~1b~0c", "NaN")
    );

    let mut m = measured(1.0);
    m.inner.reading = Some(Reading::Value(f64::NAN));
    let (path, _, _) = non_finite(to_canonical_vec(&m));
    assert_eq!(path, "/inner/reading/Value");
    m.inner.reading = Some(Reading::Pair {
        low: 1.0,
        high: f64::INFINITY,
    });
    let (path, _, _) = non_finite(to_canonical_vec(&m));
    assert_eq!(path, "/inner/reading/Pair/high");

    assert_eq!(
        non_finite(to_canonical_vec(&f64::NAN)),
        (
            String::new(),
            "NaN".to_owned(),
            "non-finite float `NaN` at ``: JSON has no such number, payloads carry integers only"
                .to_owned()
        )
    );
    // A finite float is still refused as a float, at the same path.
    match to_canonical_vec(&measured(0.5)) {
        Err(CanonicalError::Float { path, value }) => {
            assert_eq!(
                (path.as_str(), value.as_str()),
                ("/inner/scoreRatio", "0.5")
            );
        }
        other => panic!("{other:?}"),
    }
    // Without floats a struct emits as before.
    #[derive(serde::Serialize)]
    struct Plain {
        a: u32,
        b: Option<Vec<i64>>,
    }
    assert_eq!(
        to_canonical_vec(&Plain {
            a: 1,
            b: Some(vec![-2])
        })
        .expect("integers"),
        br#"{"a":1,"b":[-2]}"#
    );
}
