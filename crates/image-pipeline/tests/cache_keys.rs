//! The cache key of every recorded query stays what it was: `tests/cache_keys.jsonl` holds
//! queries (every parameter under each of its spellings, edge and invalid values,
//! combinations, three sets of limits, the default box) with the canonical string
//! `TransformSpec`'s `Display` gave for each, or the error `from_query` gave, recorded from the
//! parser before its parameters got one definition each (docs/architecture.md, "Image parameters").
//! A changed key would orphan every cached result of that URL and split the CDN's cache, so a
//! line of the fixture may never change; new lines may be added.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use image_pipeline::{Limits, TransformSpec};
use serde_json::{Value, json};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cache_keys.jsonl");

fn limits(name: &str) -> Limits {
    match name {
        "default" => Limits::default(),
        "avif_off" => Limits {
            avif_max_pixels: 0,
            ..Limits::default()
        },
        "small" => Limits {
            max_output_dimension: 1000,
            ..Limits::default()
        },
        other => panic!("unknown limits {other}"),
    }
}

/// The recorded outcome of one query: `{"key": ...}` or `{"error": ...}`.
fn outcome(
    pairs: &[(String, String)],
    limits_name: &str,
    default_box: Option<(u32, u32)>,
) -> Value {
    let spec = TransformSpec::from_query(
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        &limits(limits_name),
    );
    match spec {
        Ok(mut spec) => {
            if let Some((w, h)) = default_box {
                spec.fit_unsized_into(w, h);
            }
            json!({ "key": spec.to_string() })
        }
        Err(e) => json!({ "error": e.to_string() }),
    }
}

#[test]
fn every_recorded_query_keeps_its_canonical_key_and_its_error() {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let pairs: Vec<(String, String)> = case["query"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap().to_owned(),
                    p[1].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let default_box = case["box"]
            .as_array()
            .map(|b| (b[0].as_u64().unwrap() as u32, b[1].as_u64().unwrap() as u32));
        let got = outcome(&pairs, case["limits"].as_str().unwrap(), default_box);
        let want = json!({ "key": case.get("key"), "error": case.get("error") });
        let got_pair = json!({ "key": got.get("key"), "error": got.get("error") });
        if got_pair != want {
            wrong.push(format!("{line}\n  now: {got}"));
        }
        checked += 1;
    }
    assert!(checked >= 300, "only {checked} recorded queries");
    assert!(
        wrong.is_empty(),
        "{} changed:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Writes the fixture from the current parser. Run only to ADD queries (with
/// `RECORD_CACHE_KEYS=1 cargo test -p image-pipeline --test cache_keys -- --ignored`), then
/// check with `git diff` that no existing line changed.
#[test]
#[ignore = "records the fixture"]
fn record() {
    if std::env::var_os("RECORD_CACHE_KEYS").is_none() {
        return;
    }
    let mut out = String::new();
    for (limits_name, default_box, pairs) in queries() {
        let mut case = outcome(&pairs, limits_name, default_box);
        case["limits"] = json!(limits_name);
        case["box"] = json!(default_box.map(|(w, h)| [w, h]));
        case["query"] = json!(pairs.iter().map(|(k, v)| [k, v]).collect::<Vec<_>>());
        out.push_str(&case.to_string());
        out.push('\n');
    }
    std::fs::write(FIXTURE, out).unwrap();
}

type Case = (&'static str, Option<(u32, u32)>, Vec<(String, String)>);

fn one(k: &str, v: &str) -> Vec<(String, String)> {
    vec![(k.to_owned(), v.to_owned())]
}

fn many(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Every spelling of every parameter with its edge values, then combinations.
fn queries() -> Vec<Case> {
    let pixels = [
        "1", "0", "400", "8192", "8193", "533.3333", "-3.5", "abc", "", " 12 ", "1e3",
    ];
    let ratio = [
        "2", "0", "0.5", "1", "5", "5.01", "abc", "NaN", "inf", "1.333333",
    ];
    let switch = [
        "", "true", "1", "yes", "on", "false", "0", "no", "off", "maybe", "TRUE",
    ];
    let table: Vec<(&[&str], &[&str])> = vec![
        (&["width", "w", "Width", "WIDTH"], &pixels),
        (&["height", "h", "Height"], &pixels),
        (&["min_width", "minWidth", "min-width", "minwidth"], &pixels),
        (&["min_height", "minHeight"], &pixels),
        (&["dpr", "DPR"], &ratio),
        (&["zoom"], &ratio),
        (
            &["format", "f", "Format"],
            &[
                "webp", "JPG", "jpeg", "jpg", "png", "avif", "AVIF", "auto", "gif", "blurhash",
                "lqip", "bmp", "",
            ],
        ),
        (
            &["quality", "q"],
            &["1", "0", "80", "100", "101", "50.5", "", " 7 ", "-1"],
        ),
        (
            &["rotate"],
            &[
                "0", "90", "180", "270", "360", "360.5", "-1", "45", "180.25", "0.1", "", "1e2",
            ],
        ),
        (&["sharpen"], &switch),
        (&["flip"], &switch),
        (&["flop"], &switch),
        (&["grayscale", "greyscale", "Grayscale"], &switch),
        (&["enlarge"], &switch),
        (&["progressive"], &switch),
        (
            &["keep_copyright", "keepCopyright", "keep-copyright"],
            &switch,
        ),
        (&["animated"], &switch),
        (&["lqip"], &switch),
        (
            &["frame"],
            &["0", "3", "100000", "100001", "-1", "2.4", "x"],
        ),
        (
            &["trim"],
            &[
                "", "true", "false", "0", "10", "255", "256", "lots", "1", "on",
            ],
        ),
        (
            &["padding"],
            &[
                "10",
                "1,2",
                "1,2,3",
                "1,2,3,4",
                "0",
                "0,0",
                "1,2,3,4,5",
                "-1",
                "9000",
                "8192",
                "8193",
                "",
                "1,,2",
            ],
        ),
        (
            &["pixelate"],
            &["0", "1", "2", "8", "256", "257", "3.6", ""],
        ),
        (
            &["max_bytes", "maxBytes"],
            &[
                "99",
                "100",
                "20000",
                "2147483648",
                "2147483649",
                "lots",
                "",
                "1e4",
            ],
        ),
        (
            &["blurhash_x", "blurhashX"],
            &["0", "1", "4", "9", "10", "x"],
        ),
        (&["blurhash_y", "blurhashY"], &["0", "1", "3", "9", "10"]),
        (
            &["blur"],
            &["0", "0.3", "1", "100", "100.1", "-1", "x", "33.333333333"],
        ),
        (
            &["fit", "Fit"],
            &[
                "inside", "cover", "contain", "fill", "outside", "COVER", "crop", "",
            ],
        ),
        (
            &["position", "gravity"],
            &[
                "centre",
                "center",
                "north",
                "top",
                "northeast",
                "right_top",
                "top-right",
                "North East",
                "east",
                "right",
                "southeast",
                "bottom_right",
                "south",
                "bottom",
                "southwest",
                "left-bottom",
                "west",
                "left",
                "northwest",
                "top left",
                "entropy",
                "attention",
                "middle",
                "",
            ],
        ),
        (
            &["background", "bg"],
            &[
                "fff",
                "#fff",
                "ffffff",
                "#10203040",
                "102030",
                "12345",
                "ggg",
                "",
                "FFF",
            ],
        ),
        (&["cropLeft", "crop_left"], &["0", "10", "x"]),
        (&["cropWidth"], &["10"]),
        (
            &["watermark", "watermarkImage", "watermark_image"],
            &["logo.png", "a,b.png", "a&b|c%d.png", ""],
        ),
        (
            &["watermarkText", "watermark_text"],
            &["hi", "a,b|c", "", "bell\u{7}", "caf\u{e9} 100%", "a&b"],
        ),
        (&["unknown", "v", "preset", "signature"], &["1", ""]),
    ];
    let mut out: Vec<Case> = Vec::new();
    for (names, values) in &table {
        for name in *names {
            for value in *values {
                out.push(("default", None, one(name, value)));
            }
        }
    }
    // Watermark placement needs a mark.
    for (name, values) in [
        (
            "watermarkPosition",
            &[
                "top-left",
                "northwest",
                "entropy",
                "attention",
                "centre",
                "south",
                "x",
                "",
            ][..],
        ),
        ("watermark_position", &["bottom-right", "north"][..]),
        (
            "watermarkOpacity",
            &["0", "0.3", "1", "1.5", "-0.1", "x", "0.333333"][..],
        ),
        ("watermark_opacity", &["0.75"][..]),
        (
            "watermarkScale",
            &["0", "0.1", "1", "1.01", "x", "0.123456789"][..],
        ),
        ("watermark_scale", &["0.5"][..]),
    ] {
        for value in values {
            out.push((
                "default",
                None,
                many(&[("watermark", "l.png"), (name, value)]),
            ));
            out.push((
                "default",
                None,
                many(&[("watermarkText", "hi"), (name, value)]),
            ));
            out.push(("default", None, one(name, value)));
        }
    }
    // Crop rectangles, complete and not.
    for crop in [
        &[
            ("cropLeft", "1"),
            ("cropTop", "2"),
            ("cropWidth", "3"),
            ("cropHeight", "4"),
        ][..],
        &[
            ("crop_left", "1"),
            ("crop_top", "2"),
            ("crop_width", "3"),
            ("crop_height", "4"),
        ][..],
        &[("cropWidth", "10"), ("cropHeight", "20")][..],
        &[("cropLeft", "1"), ("cropWidth", "3")][..],
        &[("cropTop", "1")][..],
        &[("cropWidth", "0"), ("cropHeight", "4")][..],
        &[("cropWidth", "4"), ("cropHeight", "0")][..],
        &[("cropWidth", "4"), ("cropHeight", "4294967295")][..],
        &[("cropWidth", "4"), ("cropHeight", "4294967296")][..],
        &[("cropLeft", "-1"), ("cropWidth", "4"), ("cropHeight", "4")][..],
        &[
            ("cropLeft", "2.5"),
            ("cropWidth", "4.4"),
            ("cropHeight", "4.6"),
        ][..],
    ] {
        out.push(("default", None, many(crop)));
    }
    // Placeholders, formats against limits, ratios against sizes.
    for pairs in [
        &[
            ("format", "blurhash"),
            ("blurhash_x", "9"),
            ("blurhashY", "1"),
        ][..],
        &[
            ("format", "blurhash"),
            ("blurhash_x", "4"),
            ("blurhash_y", "3"),
        ][..],
        &[("format", "blurhash"), ("blurhash_x", "10")][..],
        &[("format", "webp"), ("blurhash_x", "2")][..],
        &[("lqip", "true"), ("width", "400")][..],
        &[("lqip", "1"), ("format", "png")][..],
        &[("format", "png"), ("lqip", "1")][..],
        &[("lqip", "false"), ("format", "png")][..],
        &[("lqip", "true"), ("lqip", "false")][..],
        &[("width", "400"), ("dpr", "2")][..],
        &[("dpr", "2"), ("width", "400")][..],
        &[("width", "400"), ("dpr", "5.01")][..],
        &[("width", "2048"), ("dpr", "4")][..],
        &[("width", "2000"), ("dpr", "4.1")][..],
        &[("height", "333"), ("dpr", "1.5")][..],
        &[("width", "100"), ("zoom", "2")][..],
        &[("width", "100"), ("dpr", "2"), ("zoom", "1.5")][..],
        &[("width", "5000"), ("zoom", "2")][..],
        &[("width", "1"), ("height", "1"), ("dpr", "0.1")][..],
        &[("zoom", "0.5"), ("height", "10")][..],
        &[("width", "0"), ("dpr", "x")][..],
        &[("dpr", "x"), ("width", "0")][..],
        &[("width", "10"), ("width", "20")][..],
        &[("quality", "50"), ("q", "60")][..],
        &[("watermark", "l.png"), ("watermarkText", "hi")][..],
        &[("watermarkText", "hi"), ("watermark", "")][..],
        &[("watermark", "l.png"), ("watermark", "")][..],
        &[("trim", "40"), ("width", "100")][..],
        &[("padding", "8000"), ("width", "100")][..],
    ] {
        out.push(("default", None, many(pairs)));
    }
    for limits_name in ["avif_off", "small"] {
        for pairs in [
            &[("format", "avif")][..],
            &[("format", "auto")][..],
            &[("format", "webp")][..],
            &[("width", "1000")][..],
            &[("width", "1001")][..],
            &[("height", "500"), ("dpr", "2")][..],
            &[("height", "500"), ("dpr", "2.01")][..],
            &[("padding", "1000")][..],
            &[("padding", "1,1001")][..],
            &[("min_width", "1001")][..],
            &[("zoom", "3"), ("width", "400")][..],
        ] {
            out.push((limits_name, None, many(pairs)));
        }
    }
    // The default box of a request with no size, and of one with a size or a zoom.
    for default_box in [(1920, 1080), (0, 500), (640, 0), (0, 0)] {
        for pairs in [
            &[][..],
            &[("width", "300")][..],
            &[("height", "300")][..],
            &[("zoom", "2")][..],
            &[("fit", "cover"), ("enlarge", "1")][..],
            &[("rotate", "90"), ("format", "jpeg")][..],
        ] {
            out.push(("default", Some(default_box), many(pairs)));
        }
    }
    // Combinations: a deterministic walk over valid values of many parameters at once.
    let pool: &[(&str, &[&str])] = &[
        ("width", &["1", "320", "640.4", "8192"]),
        ("h", &["1", "240", "8192"]),
        ("dpr", &["1", "1.5", "2", "3"]),
        (
            "format",
            &["webp", "jpg", "png", "avif", "auto", "gif", "blurhash"],
        ),
        ("q", &["1", "60", "80", "100"]),
        ("rotate", &["0", "90", "45.5", "360"]),
        ("flip", &["", "1", "false"]),
        ("flop", &["true", "0"]),
        ("greyscale", &["1", "off"]),
        ("sharpen", &["on", "no"]),
        ("blur", &["0", "0.5", "2", "100"]),
        ("fit", &["cover", "contain", "fill", "outside", "inside"]),
        (
            "gravity",
            &["north", "entropy", "attention", "bottom-left", "center"],
        ),
        ("bg", &["fff", "00000000", "#123456"]),
        ("enlarge", &["", "false"]),
        ("progressive", &["1", "0"]),
        ("keep_copyright", &["true", "false"]),
        ("animated", &["false", "true"]),
        ("frame", &["0", "7"]),
        ("zoom", &["0.25", "2"]),
        ("min_width", &["10", "300"]),
        ("minHeight", &["10", "200"]),
        ("max_bytes", &["100", "50000"]),
        ("trim", &["", "0", "25"]),
        ("padding", &["4", "1,2", "0,5,0,5"]),
        ("pixelate", &["1", "4", "32"]),
        ("blurhashX", &["3", "9"]),
        ("blurhash_y", &["1", "5"]),
        ("watermark", &["wm/logo.png", "x,y.png"]),
        ("watermarkText", &["© Studio", "hello, world"]),
        ("watermark_position", &["top-left", "east", "south"]),
        ("watermarkOpacity", &["0.2", "1"]),
        ("watermark_scale", &["0.5", "1"]),
        ("cropLeft", &["5"]),
        ("cropTop", &["6"]),
        ("cropWidth", &["100"]),
        ("cropHeight", &["80"]),
        ("lqip", &["true", "false"]),
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(seed >> 33).unwrap() % n
    };
    for _ in 0..300 {
        let count = 2 + next(6);
        let mut pairs = Vec::new();
        for _ in 0..count {
            let (name, values) = pool[next(pool.len())];
            pairs.push((name.to_owned(), values[next(values.len())].to_owned()));
        }
        let default_box = (next(3) == 0).then_some((1920, 1080));
        out.push(("default", default_box, pairs));
    }
    // quality=auto and format=best (added with them; every line above is as recorded before).
    for q in [
        &[("quality", "auto")][..],
        &[("q", "AUTO")],
        &[("quality", "auto"), ("quality", "70")],
        &[("quality", "70"), ("quality", "auto")],
        &[("format", "best")],
        &[("f", "BEST"), ("q", "auto")],
        &[("format", "best"), ("quality", "70")],
        &[
            ("format", "webp"),
            ("quality", "auto"),
            ("max_bytes", "5000"),
        ],
        &[("width", "400"), ("format", "auto"), ("quality", "auto")],
        &[("quality", "autom")],
    ] {
        out.push(("default", None, many(q)));
    }
    out
}
