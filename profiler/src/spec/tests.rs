use super::*;

#[test]
fn defaults_are_the_papers_best() {
    let s = parse_spec("multihash").unwrap();
    assert_eq!(s.model, Model::MultiHash(MultiHashOptions::BEST));
    assert_eq!((s.interval, s.threshold), (10_000, 0.01));
    let s = parse_spec("stratified").unwrap();
    assert_eq!(
        s.to_string(),
        "stratified:sampler=H[P_256]_2048,second=A_16,interval=10000,threshold=1%,kinds=all,seed=1"
    );
}

#[test]
fn capacity_is_what_each_model_can_tell_apart() {
    let cap = |s: &str| {
        let s = parse_spec(s).unwrap();
        s.model.capacity(s.interval)
    };
    assert_eq!(cap("perfect"), None);
    assert_eq!(cap("multihash"), Some(512));
    assert_eq!(cap("multihash:tables=1,entries=64"), Some(64));
    assert_eq!(cap("singlehash"), Some(2048));
    assert_eq!(cap("stratified"), Some(39));
    assert_eq!(cap("stratified:sampler=CR_100,interval=1000"), Some(10));
    assert_eq!(cap("tagged:entries=512"), Some(512));
    assert_eq!(cap("rap:eps=5%"), Some(20));
    assert_eq!(cap("conte"), Some(1024));
}

#[test]
fn issue_example_parses() {
    let s = parse_spec(
        "multihash:tables=4,entries=2048,threshold=1%,interval=10000,cu=on,reset=off,retain=on",
    )
    .unwrap();
    assert_eq!(s.threshold_count(), 100);
    let s = parse_spec("multihash:interval=1000000,threshold=0.1%").unwrap();
    assert_eq!(s.threshold_count(), 1000);
}

#[test]
fn every_default_round_trips() {
    for name in MODEL_NAMES {
        let s = parse_spec(name).unwrap();
        let text = s.to_string();
        let again = parse_spec(&text).unwrap();
        assert_eq!(again.to_string(), text);
        assert_eq!(again, s, "{text}");
    }
}

#[test]
fn errors_name_the_key_and_list_valid_ones() {
    let e = parse_spec("multihash:tabels=4").unwrap_err().to_string();
    assert!(
        e.contains("tabels") && e.contains("tables") && e.contains("retain"),
        "{e}"
    );
    let e = parse_spec("multihash:cu=maybe").unwrap_err().to_string();
    assert!(e.contains("`cu`") && e.contains("on or off"), "{e}");
    let e = parse_spec("stratified:sampler=H[Q_2]_4")
        .unwrap_err()
        .to_string();
    assert!(e.contains("H[P_256]_2048"), "{e}");
    let e = parse_spec("nosuch").unwrap_err().to_string();
    assert!(e.contains("multihash") && e.contains("conte"), "{e}");
    let e = parse_spec("conte:kinds=value").unwrap_err().to_string();
    assert!(e.contains("edge"), "{e}");
}

#[test]
fn sampler_expressions_nest() {
    for text in ["R_10", "P_10", "CR_10", "H[P_256]_2048", "H[H[CR_4]_8]_16"] {
        assert_eq!(SamplerExpr::parse(text).unwrap().to_string(), text);
    }
    assert!(SamplerExpr::parse("H[P_0]_4").is_none());
    assert!(SamplerExpr::parse("H[P_4").is_none());
}

#[test]
fn several_specs_split_on_semicolons() {
    let v = parse_specs("multihash:tables=2,entries=1024; rap:eps=10%;perfect").unwrap();
    assert_eq!(v.len(), 3);
    assert_eq!(v[1].model.name(), "rap");
}

fn split(values: &[&str]) -> Vec<String> {
    split_spec_list(values).unwrap()
}

#[test]
fn lists_split_where_a_model_name_starts_a_part() {
    // Every list form the help texts and README show.
    assert_eq!(
        split(&["multihash,stratified,rap:eps=1%"]),
        ["multihash", "stratified", "rap:eps=1%"]
    );
    assert_eq!(
        split(&["perfect,multihash:interval=10"]),
        ["perfect", "multihash:interval=10"]
    );
    assert_eq!(
        split(&["multihash,stratified,rap,conte"]),
        ["multihash", "stratified", "rap", "conte"]
    );
    assert_eq!(
        split(&["perfect,multihash,multihash:tables=1,entries=512"]),
        ["perfect", "multihash", "multihash:tables=1,entries=512"]
    );
    assert_eq!(
        split(&[
            "multihash:tables=4,entries=2048,perfect",
            "rap:eps=1%;conte"
        ]),
        [
            "multihash:tables=4,entries=2048",
            "perfect",
            "rap:eps=1%",
            "conte"
        ]
    );
    assert_eq!(
        split(&["none,perfect:interval=1000,threshold=5%, stratified"]),
        ["none", "perfect:interval=1000,threshold=5%", "stratified"]
    );
    assert_eq!(
        split(&["multihash:tables=1,entries=512,reset=on"]),
        ["multihash:tables=1,entries=512,reset=on"]
    );
    assert_eq!(
        split(&["multihash:interval=10000,threshold=1%"]),
        ["multihash:interval=10000,threshold=1%"]
    );
    // A key right after a bare model name belongs to it.
    assert_eq!(split(&["perfect,interval=1000"]), ["perfect:interval=1000"]);
    assert_eq!(
        split(&["stratified:sampler=H[P_256]_2048,second=A_16,tagged"]),
        ["stratified:sampler=H[P_256]_2048,second=A_16", "tagged"]
    );
    for (list, n) in [
        ("multihash,stratified,rap:eps=1%", 3),
        ("perfect,multihash:interval=10", 2),
        (
            "multihash:tables=4,entries=2048,threshold=1%,interval=10000",
            1,
        ),
    ] {
        assert_eq!(parse_specs(list).unwrap().len(), n, "{list}");
    }
}

#[test]
fn list_errors_say_what_is_wrong() {
    let e = split_spec_list(&["multihash,multihsh"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown model `multihsh`") && e.contains("perfect"),
        "{e}"
    );
    let e = split_spec_list(&["tables=4,multihash"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("before any model"), "{e}");
    let e = split_spec_list(&[" ; , "]).unwrap_err().to_string();
    assert!(e.contains("no spec"), "{e}");
}

#[test]
fn limits_are_checked_against_what_the_model_builds() {
    for bad in [
        // 17 tables would be clamped to 16, giving 69632 counters a table.
        "multihash:tables=17,entries=1114112",
        "multihash:tables=17",
        "multihash:tables=1,entries=65537",
        "multihash:accumulator=65535",
        "multihash:threshold=0.001%",
        "singlehash:entries=131072",
        // 16 GiB of entries.
        "tagged:entries=1073741824,ways=16384",
        "tagged:entries=2097152,ways=32",
        "conte:entries=2097152",
        "conte:history=16",
        "stratified:sampler=H[H[P_2]_2048]_1024",
        "rap:buffer=2097152",
    ] {
        let e = parse_spec(bad).expect_err(bad).to_string();
        assert!(e.contains("bad profiler spec"), "{bad}: {e}");
    }
    // The largest configurations build and run.
    for good in [
        "multihash:tables=16,entries=1048576",
        "multihash:tables=1,entries=65536,accumulator=65534",
        "multihash:threshold=0.002%,accumulator=100",
        "singlehash:entries=65536",
        "tagged:entries=1048576,ways=16",
        "tagged:entries=1048576,ways=1048576",
        "conte:entries=1048576,history=15",
        "stratified:sampler=H[H[P_2]_1024]_1024",
        "rap:buffer=1048576",
    ] {
        let spec = parse_spec(good).expect(good);
        let mut m = spec.build();
        for i in 0..1000u64 {
            m.observe(crate::Tuple::edge(i % 7, i % 3));
        }
        m.end_interval();
    }
}
