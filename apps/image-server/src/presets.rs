//! Named parameter sets for resize URLs (docs/image-service.md §4, Presets): `preset=thumb`
//! stands for the parameters an operator wrote under that name in PRESETS_FILE, and with
//! PRESETS_ONLY a URL may name presets and nothing else, which is how an operator stops a
//! flood of arbitrary sizes from busting the cache (imgproxy's `IMGPROXY_ONLY_PRESETS`).
//!
//! The file holds one preset a line, `name = query`, the query written as in a URL:
//!
//! ```text
//! # thumbnails of the gallery
//! thumb = width=200&height=200&fit=cover
//! hero  = width=1600&format=auto&quality=70
//! ```
//!
//! Several presets combine (`preset=thumb,gray` or `preset=thumb&preset=gray`), applied in
//! the order named; parameters of the URL itself come after them and so win.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, bail};
use image_params::Name;
use image_pipeline::{Limits, PipelineError, TransformSpec};

/// The query parameter naming presets.
pub(crate) const PARAM: &str = Name::Preset.as_str();

/// Parameters a presets-only URL may carry besides `preset`: the signature and the version pin
/// are no transformation.
const ALLOWED_WITH_PRESETS_ONLY: [&str; 3] = [PARAM, crate::signing::PARAM, Name::Version.as_str()];

/// The presets of PRESETS_FILE and the PRESETS_ONLY switch.
#[derive(Debug, Clone, Default)]
pub(crate) struct Presets {
    by_name: HashMap<String, Vec<(String, String)>>,
    only: bool,
}

impl Presets {
    /// Reads `path` (PRESETS_FILE; none: no presets). Every preset must parse as a resize
    /// query under `limits`, so a typo stops the server at start instead of failing requests.
    ///
    /// # Errors
    /// The file cannot be read; a line is not `name = query`; a name is not lowercase letters,
    /// digits, `-` and `_`, or comes twice; a query names `preset` or does not parse (the
    /// message names the line and the parameter); PRESETS_ONLY without any preset.
    pub(crate) fn load(path: Option<&Path>, only: bool, limits: &Limits) -> anyhow::Result<Self> {
        let mut by_name = HashMap::new();
        if let Some(path) = path {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading PRESETS_FILE {}", path.display()))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let at = || format!("{}:{}", path.display(), n + 1);
                let Some((name, query)) = line.split_once('=') else {
                    bail!("{}: expected `name = width=200&...`", at());
                };
                let name = name.trim();
                if name.is_empty()
                    || !name.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_'
                    })
                {
                    bail!("{}: preset name {name:?}: use a-z, 0-9, - and _", at());
                }
                let pairs: Vec<(String, String)> =
                    url::form_urlencoded::parse(query.trim().as_bytes())
                        .into_owned()
                        .collect();
                if pairs.iter().any(|(k, _)| k == PARAM) {
                    bail!("{}: a preset cannot name other presets", at());
                }
                TransformSpec::from_query(
                    pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                    limits,
                )
                .with_context(|| format!("{}: preset {name}", at()))?;
                if by_name.insert(name.to_owned(), pairs).is_some() {
                    bail!("{}: preset {name} is defined twice", at());
                }
            }
        }
        if only && by_name.is_empty() {
            bail!(
                "PRESETS_ONLY is set but PRESETS_FILE defines no preset: every URL would be refused"
            );
        }
        Ok(Self { by_name, only })
    }

    /// Number of presets defined.
    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether no preset is defined.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The URL's query with its presets expanded: their parameters first, in the order named,
    /// then the URL's own (which win, being later).
    ///
    /// # Errors
    /// [`PipelineError::BadParam`] (400) naming `preset` for an unknown name, or naming the first
    /// parameter other than `preset`, `signature` and `v` when PRESETS_ONLY is set.
    pub(crate) fn expand(
        &self,
        pairs: Vec<(String, String)>,
    ) -> Result<Vec<(String, String)>, PipelineError> {
        if self.only
            && let Some((key, _)) = pairs
                .iter()
                .find(|(k, _)| !ALLOWED_WITH_PRESETS_ONLY.contains(&k.as_str()))
        {
            return Err(PipelineError::BadParam {
                name: key.clone(),
                reason: "this server takes presets only (PRESETS_ONLY): name a preset with \
                         `preset=...`"
                    .into(),
            });
        }
        if !pairs.iter().any(|(k, _)| k == PARAM) {
            return Ok(pairs);
        }
        let mut expanded = Vec::with_capacity(pairs.len() + 8);
        let mut own = Vec::with_capacity(pairs.len());
        for (key, value) in pairs {
            if key != PARAM {
                own.push((key, value));
                continue;
            }
            for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let preset = self
                    .by_name
                    .get(name)
                    .ok_or_else(|| PipelineError::BadParam {
                        name: PARAM.into(),
                        reason: format!("no preset named {name:?}"),
                    })?;
                expanded.extend(preset.iter().cloned());
            }
        }
        expanded.extend(own);
        Ok(expanded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn presets(text: &str, only: bool) -> anyhow::Result<Presets> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("presets.conf");
        std::fs::write(&path, text).unwrap();
        Presets::load(Some(&path), only, &Limits::default())
    }

    fn pairs(q: &str) -> Vec<(String, String)> {
        url::form_urlencoded::parse(q.as_bytes())
            .into_owned()
            .collect()
    }

    fn name_of(e: PipelineError) -> String {
        match e {
            PipelineError::BadParam { name, .. } => name,
            other => panic!("{other:?}"),
        }
    }

    const FILE: &str = "# gallery\nthumb = width=200&height=200&fit=cover\n\ngray=grayscale=true\n";

    #[test]
    fn presets_expand_in_order_and_the_url_wins() {
        let p = presets(FILE, false).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(
            p.expand(pairs("preset=thumb,gray&width=100")).unwrap(),
            pairs("width=200&height=200&fit=cover&grayscale=true&width=100")
        );
        assert_eq!(
            p.expand(pairs("preset=gray&preset=thumb")).unwrap(),
            pairs("grayscale=true&width=200&height=200&fit=cover")
        );
        assert_eq!(p.expand(pairs("width=5")).unwrap(), pairs("width=5"));
        assert_eq!(
            name_of(p.expand(pairs("preset=nope")).unwrap_err()),
            "preset"
        );
    }

    #[test]
    fn presets_only_refuses_any_other_parameter_by_name() {
        let p = presets(FILE, true).unwrap();
        assert_eq!(
            p.expand(pairs("preset=thumb&v=0123456789abcdef&signature=x"))
                .unwrap(),
            pairs("width=200&height=200&fit=cover&v=0123456789abcdef&signature=x")
        );
        assert_eq!(
            name_of(p.expand(pairs("preset=thumb&width=9999")).unwrap_err()),
            "width"
        );
        assert_eq!(name_of(p.expand(pairs("blur=3")).unwrap_err()), "blur");
    }

    #[test]
    fn a_bad_preset_file_stops_the_server_naming_the_line() {
        for (text, says) in [
            ("thumb width:200", ":1: expected"),
            ("Thumb = width=200", "preset name"),
            ("a = width=0", "preset a"),
            ("a = preset=b", "cannot name other presets"),
            ("a = width=1\na = width=2", "defined twice"),
        ] {
            let e = format!("{:#}", presets(text, false).unwrap_err());
            assert!(e.contains(says), "{text:?}: {e}");
        }
        let e = Presets::load(None, true, &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("PRESETS_ONLY"), "{e}");
    }
}
