//! Writes the fuzz targets' seed inputs (`fuzz/README.md`): `fuzz_seeds FIXTURES OUT`, with
//! FIXTURES the crate's `tests/fixtures` and OUT the `fuzz` folder. Every seed is a small real
//! photo (lake.jpg and iphone.heic cut down) in one of the source formats and layouts the
//! pipeline decodes differently.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark or tool run by hand: a failure ends it with its message"
)]

use image_pipeline::{Limits, OutputFormat, TransformSpec, samples};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fixtures = std::path::Path::new(&args[1]);
    let out = std::path::Path::new(&args[2]);
    let lake = std::fs::read(fixtures.join("lake.jpg")).unwrap();
    let heic = std::fs::read(fixtures.join("iphone.heic")).unwrap();
    let limits = Limits::default();
    let small = |source: &[u8], query: &str, format: OutputFormat| {
        let pairs = query.split('&').filter_map(|p| p.split_once('='));
        let spec = TransformSpec::from_query(pairs, &limits).unwrap();
        image_pipeline::transform(source, &spec, format, None, &limits)
            .unwrap()
            .bytes
    };
    let jpeg = small(
        &lake,
        "width=96&height=64&fit=cover&quality=85",
        OutputFormat::Jpeg,
    );
    let rgba = image_pipeline::decode_to_rgba(&jpeg, u64::MAX).unwrap();
    let mut translucent = rgba.clone();
    for (x, _, px) in translucent.enumerate_pixels_mut() {
        px.0[3] = u8::try_from(x * 255 / 95).unwrap_or(255);
    }
    let icc = samples::heif_icc_profile(&heic).expect("iphone.heic has a profile");
    let seeds: Vec<(&str, Vec<u8>)> = vec![
        ("jpeg_baseline.jpg", jpeg.clone()),
        (
            "jpeg_progressive.jpg",
            small(&lake, "width=80&progressive=true", OutputFormat::Jpeg),
        ),
        ("jpeg_exif6.jpg", samples::with_exif_orientation(&jpeg, 6)),
        ("jpeg_icc.jpg", samples::with_icc_profile(&jpeg, &icc)),
        ("png_rgba.png", samples::png(&translucent)),
        ("png_rgb.png", small(&lake, "width=72", OutputFormat::Png)),
        ("png_icc.png", samples::png_with_icc(&rgba, &icc)),
        ("png_bomb.png", samples::png_bomb(2048, 2048)),
        ("gif.gif", samples::gif(&rgba)),
        (
            "webp_lossy.webp",
            small(&lake, "width=90", OutputFormat::Webp),
        ),
        ("webp_lossless_alpha.webp", samples::webp(&translucent)),
        (
            "webp_animated.webp",
            samples::animated_webp(&rgba, &translucent),
        ),
        ("heic.heic", samples::heic(&rgba, false)),
        ("heic_alpha.heic", samples::heic(&translucent, true)),
        (
            "heic_grey.heic",
            samples::heic_grey(&image::DynamicImage::ImageRgba8(rgba.clone()).to_luma8()),
        ),
        ("avif.avif", small(&lake, "width=48", OutputFormat::Avif)),
    ];
    let corpus = out.join("corpus/transform");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::create_dir_all(out.join("seeds")).unwrap();
    // The first byte picks the transformation and the output format (fuzz_targets/transform.rs).
    for (pick, (name, bytes)) in seeds.iter().enumerate() {
        let mut input = vec![u8::try_from(pick * 5).unwrap()];
        input.extend_from_slice(bytes);
        std::fs::write(corpus.join(name), input).unwrap();
    }
    std::fs::write(
        out.join("seeds/query_source.jpg"),
        samples::with_exif_orientation(&jpeg, 6),
    )
    .unwrap();
    let mark = image::imageops::thumbnail(&translucent, 32, 32);
    std::fs::write(out.join("seeds/watermark.png"), samples::png(&mark)).unwrap();
    let queries = out.join("corpus/query");
    std::fs::create_dir_all(&queries).unwrap();
    for (i, q) in [
        "width=120&height=80&fit=cover&position=entropy&format=jpeg&quality=70",
        "cropLeft=10&cropTop=5&cropWidth=40&cropHeight=30&width=100&enlarge=true",
        "width=200&height=200&fit=contain&background=00ff0080&rotate=45&format=png",
        "height=90&flip=true&flop=true&blur=2&sharpen=true&grayscale=true",
        "width=150&watermark=mark.png&watermarkPosition=top-left&watermarkOpacity=0.7&watermarkScale=0.5",
        "w=64&h=64&fit=outside&gravity=south_west&bg=fff&q=1&progressive=true&format=auto",
    ]
    .iter()
    .enumerate()
    {
        std::fs::write(queries.join(format!("q{i}")), q).unwrap();
    }
}
