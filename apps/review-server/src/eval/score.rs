//! The eval's numbers (docs/review-service.md, "Measuring the reviewer"): which golden comments
//! the posted findings match, the counts and the rates from them, the results file
//! (`results.json`), its markdown table, and two runs side by side.
//!
//! A golden comment matched by at least one posted finding is a true positive, one matched by
//! none a false negative; a posted finding that matches no golden comment is a false positive
//! (a second finding on an already matched comment is neither). precision = TP / (TP + FP),
//! recall = TP / (TP + FN), F1 = 2·TP / (2·TP + FP + FN); a rate whose denominator is 0 is
//! `null`. Totals add the counts of all cases first (micro average).

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

use super::cases::GoldenComment;

/// Counts and rates of one case or of the whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// Golden comments.
    pub golden: u32,
    /// Inline findings posted (after verification and the minimum severity).
    pub posted: u32,
    /// Candidates verification dropped.
    pub dropped: u32,
    /// Findings posted unverified (the verifier could not decide).
    pub unverified: u32,
    /// Golden comments matched.
    pub tp: u32,
    /// Posted findings matching no golden comment.
    pub fp: u32,
    /// Golden comments not matched.
    #[serde(rename = "fn")]
    pub fn_: u32,
    /// TP / (TP + FP); null when nothing was posted.
    pub precision: Option<f64>,
    /// TP / (TP + FN); null when there is no golden comment.
    pub recall: Option<f64>,
    /// 2·TP / (2·TP + FP + FN); null when all three are 0.
    pub f1: Option<f64>,
    /// The review's tokens (review pass and verification).
    pub tokens: i64,
    /// The review's cost, USD.
    pub cost: f64,
    /// The judge's tokens.
    pub judge_tokens: i64,
    /// The judge's cost, USD.
    pub judge_cost: f64,
    /// Wall time, minutes (review and judging).
    pub minutes: f64,
}

fn ratio(num: u32, den: u32) -> Option<f64> {
    (den > 0).then(|| f64::from(num) / f64::from(den))
}

impl Score {
    /// Fills precision, recall and F1 from the counts.
    pub fn with_rates(mut self) -> Self {
        self.precision = ratio(self.tp, self.tp + self.fp);
        self.recall = ratio(self.tp, self.tp + self.fn_);
        self.f1 = ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn_);
        self
    }

    /// Adds another score's counts, tokens, costs and minutes (rates are left to
    /// [`Score::with_rates`]).
    pub fn add(&mut self, other: &Score) {
        self.golden += other.golden;
        self.posted += other.posted;
        self.dropped += other.dropped;
        self.unverified += other.unverified;
        self.tp += other.tp;
        self.fp += other.fp;
        self.fn_ += other.fn_;
        self.tokens += other.tokens;
        self.cost += other.cost;
        self.judge_tokens += other.judge_tokens;
        self.judge_cost += other.judge_cost;
        self.minutes += other.minutes;
    }
}

/// The counts from the judge's matrix: `matched[g][f]` says finding `f` matches golden comment
/// `g`. Returns (TP, FP, FN).
pub fn count(matched: &[Vec<bool>], findings: usize) -> (u32, u32, u32) {
    let tp = matched.iter().filter(|row| row.iter().any(|m| *m)).count();
    let fp = (0..findings)
        .filter(|f| {
            !matched
                .iter()
                .any(|row| row.get(*f).copied().unwrap_or(false))
        })
        .count();
    let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    (n(tp), n(fp), n(matched.len() - tp))
}

/// A posted finding and the golden comments it matched (indexes into the case's `golden`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingResult {
    pub path: String,
    pub line: i64,
    pub severity: String,
    pub body: String,
    pub matches: Vec<usize>,
}

/// A candidate verification dropped, with the verifier's reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DroppedResult {
    pub path: String,
    pub line: i64,
    pub severity: String,
    pub body: String,
    pub reason: String,
}

/// A golden comment and the posted findings that matched it (indexes into `findings`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldenResult {
    #[serde(flatten)]
    pub golden: GoldenComment,
    pub matched_by: Vec<usize>,
}

/// One judged pair as the judge saw and answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgedPair {
    /// Index into the case's golden comments.
    pub golden: usize,
    /// Index into the case's findings.
    pub finding: usize,
    pub prompt: String,
    pub answer: String,
    /// The judge's decision; null when its call failed or its answer did not parse (counted
    /// as no match).
    #[serde(rename = "match")]
    pub matched: Option<bool>,
    pub confidence: Option<f64>,
    pub reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub id: String,
    pub title: String,
    pub url: String,
    #[serde(default)]
    pub language: Option<String>,
    /// Why the case has no review (its golden comments then count as false negatives).
    #[serde(default)]
    pub error: Option<String>,
    #[serde(flatten)]
    pub score: Score,
    /// The review's transcript (`review-server session export <id>`).
    #[serde(default)]
    pub session_id: Option<String>,
    pub findings: Vec<FindingResult>,
    pub dropped_findings: Vec<DroppedResult>,
    pub golden_comments: Vec<GoldenResult>,
    pub judgements: Vec<JudgedPair>,
}

/// What the run varied, for reading two runs side by side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub model: String,
    pub judge_model: String,
    /// The verifier's model; null: verification off.
    pub verify_model: Option<String>,
    pub passes: u32,
    pub min_severity: String,
    /// The focus given with `--prompt`; null: the built-in one.
    pub prompt: Option<String>,
}

/// The whole run: `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalResults {
    /// Format version, 1.
    pub version: u32,
    /// RFC 3339 UTC.
    pub started_at: String,
    pub settings: RunSettings,
    /// Cases run and cases whose review failed.
    pub cases_run: u32,
    pub cases_failed: u32,
    pub total: Score,
    pub cases: Vec<CaseResult>,
}

fn rate(r: Option<f64>) -> String {
    r.map_or_else(|| "—".to_owned(), |v| format!("{v:.3}"))
}

/// The run as markdown: the settings, then a table of the cases and the total.
pub fn markdown(results: &EvalResults) -> String {
    let s = &results.settings;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Eval {}\n\nModel {} · verification {} · passes {} · minimum severity {} · focus {} · judge {}\n",
        results.started_at,
        s.model,
        s.verify_model.as_deref().unwrap_or("off"),
        s.passes,
        s.min_severity,
        s.prompt.as_deref().map_or("built-in", |_| "--prompt"),
        s.judge_model
    );
    let _ = writeln!(
        out,
        "| case | golden | posted | dropped | TP | FP | FN | precision | recall | F1 | tokens | cost | minutes |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let row = |out: &mut String, name: &str, c: &Score| {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | ${:.4} | {:.2} |",
            c.golden,
            c.posted,
            c.dropped,
            c.tp,
            c.fp,
            c.fn_,
            rate(c.precision),
            rate(c.recall),
            rate(c.f1),
            c.tokens,
            c.cost,
            c.minutes
        );
    };
    for case in &results.cases {
        let name = match &case.error {
            Some(_) => format!("{} (failed)", case.id),
            None => case.id.clone(),
        };
        row(&mut out, &name, &case.score);
    }
    row(&mut out, "**total**", &results.total);
    let _ = writeln!(
        out,
        "\n{} cases, {} failed · judge: {} tokens, ${:.4}",
        results.cases_run,
        results.cases_failed,
        results.total.judge_tokens,
        results.total.judge_cost
    );
    for case in results.cases.iter().filter(|c| c.error.is_some()) {
        let _ = writeln!(
            out,
            "- {} failed: {}",
            case.id,
            case.error.as_deref().unwrap_or_default()
        );
    }
    out
}

/// Two runs side by side: their settings and totals with B − A, then F1 per case present in
/// both.
pub fn compare(a: &EvalResults, a_name: &str, b: &EvalResults, b_name: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| | A: {a_name} | B: {b_name} | B − A |\n|---|---|---|---|"
    );
    let text = |out: &mut String, name: &str, x: &str, y: &str| {
        let mark = if x == y { "" } else { "changed" };
        let _ = writeln!(out, "| {name} | {x} | {y} | {mark} |");
    };
    let (sa, sb) = (&a.settings, &b.settings);
    text(&mut out, "model", &sa.model, &sb.model);
    let verify = |s: &RunSettings| s.verify_model.clone().unwrap_or_else(|| "off".into());
    text(&mut out, "verification", &verify(sa), &verify(sb));
    text(
        &mut out,
        "passes",
        &sa.passes.to_string(),
        &sb.passes.to_string(),
    );
    text(
        &mut out,
        "minimum severity",
        &sa.min_severity,
        &sb.min_severity,
    );
    let focus = |s: &RunSettings| s.prompt.clone().unwrap_or_else(|| "built-in".into());
    text(&mut out, "focus", &focus(sa), &focus(sb));
    text(&mut out, "judge", &sa.judge_model, &sb.judge_model);
    text(
        &mut out,
        "cases",
        &a.cases_run.to_string(),
        &b.cases_run.to_string(),
    );
    let num = |out: &mut String, name: &str, x: Option<f64>, y: Option<f64>, digits: usize| {
        let show = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| format!("{v:.digits$}"));
        let delta = match (x, y) {
            (Some(x), Some(y)) => format!("{:+.digits$}", y - x),
            _ => "—".to_owned(),
        };
        let _ = writeln!(out, "| {name} | {} | {} | {delta} |", show(x), show(y));
    };
    let (ta, tb) = (&a.total, &b.total);
    num(&mut out, "precision", ta.precision, tb.precision, 3);
    num(&mut out, "recall", ta.recall, tb.recall, 3);
    num(&mut out, "F1", ta.f1, tb.f1, 3);
    let c = |v: u32| Some(f64::from(v));
    num(&mut out, "TP", c(ta.tp), c(tb.tp), 0);
    num(&mut out, "FP", c(ta.fp), c(tb.fp), 0);
    num(&mut out, "FN", c(ta.fn_), c(tb.fn_), 0);
    num(&mut out, "posted", c(ta.posted), c(tb.posted), 0);
    num(&mut out, "dropped", c(ta.dropped), c(tb.dropped), 0);
    let t = |v: i64| Some(v as f64);
    num(&mut out, "tokens", t(ta.tokens), t(tb.tokens), 0);
    num(&mut out, "cost (USD)", Some(ta.cost), Some(tb.cost), 4);
    num(&mut out, "minutes", Some(ta.minutes), Some(tb.minutes), 1);
    let both: Vec<(&CaseResult, &CaseResult)> = a
        .cases
        .iter()
        .filter_map(|x| b.cases.iter().find(|y| y.id == x.id).map(|y| (x, y)))
        .collect();
    if !both.is_empty() {
        let _ = writeln!(
            out,
            "\n| case | F1 A | F1 B | TP/FP/FN A | TP/FP/FN B |\n|---|---|---|---|---|"
        );
        for (x, y) in both {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {}/{}/{} | {}/{}/{} |",
                x.id,
                rate(x.score.f1),
                rate(y.score.f1),
                x.score.tp,
                x.score.fp,
                x.score.fn_,
                y.score.tp,
                y.score.fp,
                y.score.fn_
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_the_matrix() {
        // Golden 0 matched by findings 0 and 2; golden 1 by none; finding 1 matches nothing.
        let matched = vec![vec![true, false, true], vec![false, false, false]];
        assert_eq!(count(&matched, 3), (1, 1, 1));
        assert_eq!(count(&[], 2), (0, 2, 0));
        assert_eq!(count(&[vec![], vec![]], 0), (0, 0, 2));
    }

    #[test]
    fn rates_are_null_without_a_denominator() {
        let s = Score {
            tp: 1,
            fp: 2,
            fn_: 1,
            ..Score::default()
        }
        .with_rates();
        assert_eq!(
            (s.precision, s.recall, s.f1),
            (Some(1.0 / 3.0), Some(0.5), Some(0.4))
        );
        let none = Score::default().with_rates();
        assert_eq!((none.precision, none.recall, none.f1), (None, None, None));
    }
}
