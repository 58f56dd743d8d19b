//! `review-server eval` (docs/review-service.md, "Measuring the reviewer"): replays labelled
//! cases through the same review as the server ([`crate::cli::review_range`]: agent,
//! verification, passes, minimum severity and budget, nothing posted anywhere), asks a judge
//! model which golden comments the posted findings match ([`agent::judge`]), and writes
//! precision, recall and F1 per case and in total as `results.json` and `results.md`, with
//! progress on stderr. `--compare A.json B.json` prints two runs side by side.

pub mod cases;
pub mod score;

use crate::cli::{LocalRange, chosen_settings, interrupt_signal, review_range};
use crate::config::{Config, EvalArgs};
use crate::run_settings::{provider_settings, review_noise, review_passes, review_verifier};
use agent::{CancellationToken, Catalog};
use anyhow::Context;
use futures::StreamExt;
use review_domain::{ModelSpec, model_cascade};
use score::{
    CaseResult, DroppedResult, EvalResults, FindingResult, GoldenResult, JudgedPair, Score,
};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Judge calls in flight at once.
const JUDGE_CONCURRENCY: usize = 4;

/// Runs `review-server eval`. Errors: a case file that does not parse, cases whose repository
/// or commits are missing (all named, before any model call), a model spec that does not
/// parse or has no key, an interrupt; when some cases' reviews failed, the results are still
/// written and the run ends with an error naming how many.
pub async fn run(config: &Config, args: &EvalArgs) -> anyhow::Result<()> {
    if let Some(pair) = &args.compare {
        let [a, b] = pair.as_slice() else {
            anyhow::bail!("--compare takes two results.json files");
        };
        print!(
            "{}",
            score::compare(
                &read_results(a)?,
                &a.display().to_string(),
                &read_results(b)?,
                &b.display().to_string()
            )
        );
        return Ok(());
    }
    let choices = &args.choices;
    let settings = chosen_settings(choices);
    let model: ModelSpec = model_cascade(choices.model.as_deref(), None, None, &config.agent_model)
        .parse()
        .context("--model")?;
    let judge_model: ModelSpec = model_cascade(
        args.judge_model.as_deref().or(choices.model.as_deref()),
        None,
        None,
        &config.agent_model,
    )
    .parse()
    .context("--judge-model")?;
    let verifier = review_verifier(&settings, &model);
    let providers = provider_settings(config, &settings);
    // Every model the run will call has its key before anything is paid for.
    for spec in [Some(&model), Some(&judge_model), verifier.as_ref()]
        .into_iter()
        .flatten()
    {
        providers.client(&spec.provider)?;
    }
    let defaults = cases::Defaults {
        repo: args.repo.clone(),
        base_ref: args.base_ref.clone(),
        only: args.only.clone(),
    };
    let files = args.cases.clone();
    let loaded = tokio::task::spawn_blocking(move || cases::load(&files, &defaults)).await??;
    if loaded.cases.is_empty() {
        anyhow::bail!("the case files hold no case");
    }
    let started_at = now_rfc3339();
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("eval-results").join(started_at.replace([':', '-'], "")));
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;

    let stop = CancellationToken::new();
    let signal = interrupt_signal()?;
    let on_signal = stop.clone();
    let watcher = tokio::spawn(async move {
        signal.await;
        on_signal.cancel();
    });
    let catalog = Catalog::bundled();
    let total_cases = loaded.cases.len();
    let mut results = Vec::new();
    let mut running_cost = 0.0;
    for (n, case) in loaded.cases.iter().enumerate() {
        eprintln!(
            "[{}/{total_cases}] {}: reviewing {} ({} golden comment(s))",
            n + 1,
            case.id,
            case.title,
            case.golden.len()
        );
        let result = run_case(
            config,
            args,
            case,
            &providers,
            &judge_model,
            &catalog,
            &stop,
        )
        .await;
        if stop.is_cancelled() {
            watcher.abort();
            anyhow::bail!(
                "interrupted by a signal after {n} of {total_cases} cases; nothing was written"
            );
        }
        let s = &result.score;
        running_cost += s.cost + s.judge_cost;
        match &result.error {
            Some(e) => eprintln!("[{}/{total_cases}] {}: failed: {e}", n + 1, case.id),
            None => eprintln!(
                "[{}/{total_cases}] {}: {} posted, {} dropped · TP {} FP {} FN {} · ${:.4} (run ${running_cost:.4})",
                n + 1,
                case.id,
                s.posted,
                s.dropped,
                s.tp,
                s.fp,
                s.fn_,
                s.cost + s.judge_cost
            ),
        }
        results.push(result);
    }
    watcher.abort();
    let mut total = Score::default();
    for r in &results {
        total.add(&r.score);
    }
    let (min_severity, _) = review_noise(&settings);
    let failed = results.iter().filter(|r| r.error.is_some()).count();
    let eval = EvalResults {
        version: 1,
        started_at,
        settings: score::RunSettings {
            model: model.to_string(),
            judge_model: judge_model.to_string(),
            verify_model: verifier.map(|m| m.to_string()),
            passes: review_passes(&settings),
            min_severity: min_severity.to_string(),
            prompt: choices.prompt.clone(),
        },
        cases_run: u32::try_from(results.len()).unwrap_or(u32::MAX),
        cases_failed: u32::try_from(failed).unwrap_or(u32::MAX),
        total: total.with_rates(),
        cases: results,
    };
    let json_path = out_dir.join("results.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&eval)?)
        .with_context(|| format!("writing {}", json_path.display()))?;
    let table = score::markdown(&eval);
    std::fs::write(out_dir.join("results.md"), &table)?;
    print!("{table}");
    eprintln!("results: {} and results.md beside it", json_path.display());
    if failed > 0 {
        anyhow::bail!(
            "{failed} of {total_cases} cases failed; see {}",
            json_path.display()
        );
    }
    Ok(())
}

fn read_results(path: &Path) -> anyhow::Result<EvalResults> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a results.json of review-server eval",
            path.display()
        )
    })
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// Reviews one case, then judges every (golden comment, posted finding) pair. A failed review
/// is a result with `error` set and every golden comment a false negative.
async fn run_case(
    config: &Config,
    args: &EvalArgs,
    case: &cases::Case,
    providers: &agent::ProviderSettings,
    judge_model: &ModelSpec,
    catalog: &Catalog,
    stop: &CancellationToken,
) -> CaseResult {
    let started = Instant::now();
    let range = LocalRange {
        repo: case.repo.clone(),
        base: case.base.clone(),
        head: case.head.clone(),
        title: Some(case.title.clone()),
    };
    let cancelled = stop.cancelled();
    tokio::pin!(cancelled);
    let mut result = CaseResult {
        id: case.id.clone(),
        title: case.title.clone(),
        url: case.url.clone(),
        language: case.language.clone(),
        error: None,
        score: Score {
            golden: count(case.golden.len()),
            ..Score::default()
        },
        session_id: None,
        findings: Vec::new(),
        dropped_findings: Vec::new(),
        golden_comments: case
            .golden
            .iter()
            .map(|g| GoldenResult {
                golden: g.clone(),
                matched_by: Vec::new(),
            })
            .collect(),
        judgements: Vec::new(),
    };
    let done = match review_range(config, &range, &args.choices, cancelled.as_mut()).await {
        Ok(done) => done,
        Err(e) => {
            result.error = Some(format!("{e:#}"));
            result.score.fn_ = result.score.golden;
            result.score.minutes = started.elapsed().as_secs_f64() / 60.0;
            result.score = result.score.clone().with_rates();
            return result;
        }
    };
    let outcome = &done.outcome;
    result.session_id = Some(done.session_id.clone());
    result.findings = done
        .poster
        .inline_comments()
        .into_iter()
        .map(|c| FindingResult {
            path: c.path,
            line: c.line,
            severity: c.severity.to_string(),
            body: c.body,
            matches: Vec::new(),
        })
        .collect();
    result.dropped_findings = done
        .poster
        .dropped
        .lock()
        .map(|d| d.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|(c, reason)| DroppedResult {
            path: c.path,
            line: c.line,
            severity: c.severity.to_string(),
            body: c.body,
            reason,
        })
        .collect();
    result.score.posted = count(result.findings.len());
    result.score.dropped = count(result.dropped_findings.len());
    result.score.unverified = outcome.unverified;
    result.score.tokens = outcome.tokens;
    result.score.cost = outcome.cost;

    // Every pair, golden-major, a few calls at a time; answers come back in order.
    let pairs: Vec<(usize, usize)> = (0..case.golden.len())
        .flat_map(|g| (0..result.findings.len()).map(move |f| (g, f)))
        .collect();
    let texts: Vec<String> = result.findings.iter().map(candidate_text).collect();
    let judged: Vec<_> = futures::stream::iter(pairs.iter().map(|&(g, f)| {
        let golden = case.golden[g].comment.as_str();
        let candidate = texts[f].as_str();
        async move {
            (
                g,
                f,
                agent::judge::judge(providers, judge_model, golden, candidate).await,
            )
        }
    }))
    .buffered(JUDGE_CONCURRENCY)
    .collect()
    .await;
    let mut matched = vec![vec![false; result.findings.len()]; case.golden.len()];
    for (g, f, judgement) in judged {
        let pair = match judgement {
            Ok(j) => {
                result.score.judge_tokens += j.usage.total();
                result.score.judge_cost += catalog.cost(judge_model, &j.usage);
                if j.matched() {
                    matched[g][f] = true;
                }
                JudgedPair {
                    golden: g,
                    finding: f,
                    prompt: j.prompt,
                    answer: j.answer,
                    matched: j.verdict.as_ref().map(|v| v.matched),
                    confidence: j.verdict.as_ref().map(|v| v.confidence),
                    reasoning: j.verdict.map(|v| v.reasoning),
                    error: j.error,
                }
            }
            Err(e) => JudgedPair {
                golden: g,
                finding: f,
                prompt: String::new(),
                answer: String::new(),
                matched: None,
                confidence: None,
                reasoning: None,
                error: Some(e.to_string()),
            },
        };
        result.judgements.push(pair);
    }
    for (g, row) in matched.iter().enumerate() {
        for (f, m) in row.iter().enumerate() {
            if *m {
                result.golden_comments[g].matched_by.push(f);
                result.findings[f].matches.push(g);
            }
        }
    }
    let (tp, fp, fn_) = score::count(&matched, result.findings.len());
    (result.score.tp, result.score.fp, result.score.fn_) = (tp, fp, fn_);
    result.score.minutes = started.elapsed().as_secs_f64() / 60.0;
    result.score = result.score.clone().with_rates();
    result
}

/// A finding as the judge reads it: `path:line (severity): body`.
fn candidate_text(f: &FindingResult) -> String {
    format!("{}:{} ({}): {}", f.path, f.line, f.severity, f.body)
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
