//! Rename detection as `git diff` does it by default (`diff.renames=true`, 50% similarity).
//!
//! gix has its own rename tracker, but its similarity measure differs from git's, which changes
//! both which pairs count as renames and the printed `similarity index`. This is a port of
//! git's `diffcore-rename.c` (exact renames, then same-basename pairs at 75%, then the best of
//! a 4-candidates-per-destination matrix) and `diffcore-delta.c` (the span-hash similarity).

use std::collections::HashMap;
use std::rc::Rc;

use gix::ObjectId;

use crate::GitError;
use crate::diff::{Blobs, FilePair, MAX_SCORE, Side, is_binary};

/// `-M50%`, git's default minimum similarity (`DEFAULT_RENAME_SCORE`).
const MIN_SCORE: i32 = 30000;
/// `diff.renameLimit` default for `git diff`.
const RENAME_LIMIT: usize = 1000;
/// `NUM_CANDIDATE_PER_DST`.
const CANDIDATES: usize = 4;
/// `HASHBASE` of diffcore-delta.c.
const HASHBASE: u32 = 107927;

/// The span-hash fingerprint of a blob (hash value -> byte count), sorted by hash.
struct Fingerprint {
    size: usize,
    spans: Vec<(u32, u64)>,
}

fn fingerprint(data: &[u8]) -> Fingerprint {
    let is_text = !is_binary(data);
    let mut counts: HashMap<u32, u64> = HashMap::new();
    let (mut accum1, mut accum2, mut n) = (0u32, 0u32, 0u64);
    let mut i = 0;
    while i < data.len() {
        let c = data[i];
        i += 1;
        // Ignore CR in CRLF sequences of text.
        if is_text && c == b'\r' && i < data.len() && data[i] == b'\n' {
            continue;
        }
        let old_1 = accum1;
        accum1 = (accum1 << 7) ^ (accum2 >> 25);
        accum2 = (accum2 << 7) ^ (old_1 >> 25);
        accum1 = accum1.wrapping_add(u32::from(c));
        n += 1;
        if n < 64 && c != b'\n' {
            continue;
        }
        let hash = accum1.wrapping_add(accum2.wrapping_mul(0x61)) % HASHBASE;
        *counts.entry(hash).or_default() += n;
        n = 0;
        accum1 = 0;
        accum2 = 0;
    }
    if n > 0 {
        let hash = accum1.wrapping_add(accum2.wrapping_mul(0x61)) % HASHBASE;
        *counts.entry(hash).or_default() += n;
    }
    let mut spans: Vec<(u32, u64)> = counts.into_iter().collect();
    spans.sort_unstable();
    Fingerprint {
        size: data.len(),
        spans,
    }
}

/// Bytes of `dst` that also occur in `src` (diffcore_count_changes' `src_copied`).
fn copied(src: &Fingerprint, dst: &Fingerprint) -> u64 {
    let dst_counts: HashMap<u32, u64> = dst.spans.iter().copied().collect();
    src.spans
        .iter()
        .map(|(hash, count)| (*count).min(dst_counts.get(hash).copied().unwrap_or(0)))
        .sum()
}

/// Lazily computed fingerprints, by object id.
struct Prints<'b> {
    blobs: &'b mut dyn Blobs,
    cache: HashMap<ObjectId, Rc<Fingerprint>>,
}

impl Prints<'_> {
    fn get(&mut self, side: &Side) -> Result<Rc<Fingerprint>, GitError> {
        if let Some(print) = self.cache.get(&side.id) {
            return Ok(print.clone());
        }
        let print = Rc::new(fingerprint(&self.blobs.get(side)?));
        self.cache.insert(side.id, print.clone());
        Ok(print)
    }

    /// git's estimate_similarity: a score in `0..=MAX_SCORE`, 0 when sizes differ too much.
    fn similarity(&mut self, src: &Side, dst: &Side, minimum: i32) -> Result<i32, GitError> {
        if !src.is_regular() || !dst.is_regular() {
            return Ok(0);
        }
        let (src_print, dst_print) = (self.get(src)?, self.get(dst)?);
        let max_size = src_print.size.max(dst_print.size) as f64;
        let delta = src_print.size.abs_diff(dst_print.size) as f64;
        if max_size * (MAX_SCORE - f64::from(minimum)) < delta * MAX_SCORE {
            return Ok(0);
        }
        if dst_print.size == 0 {
            return Ok(0);
        }
        let copied = copied(&src_print, &dst_print) as f64;
        Ok((copied * MAX_SCORE / max_size) as i32)
    }
}

fn basename(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// A candidate of the similarity matrix (`struct diff_score`); `dst == None` is an empty slot.
#[derive(Clone, Copy)]
struct Candidate {
    dst: Option<usize>,
    src: usize,
    score: i32,
    name_score: i32,
}

/// git's score_compare: better candidates sort first, empty slots last.
fn compare(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a.dst, b.dst) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        _ if a.score == b.score => b.name_score.cmp(&a.name_score),
        _ => b.score.cmp(&a.score),
    }
}

/// Replaces deletion/addition pairs in the path-sorted queue by renames, as git does.
pub(crate) fn detect_renames(
    queue: Vec<FilePair>,
    blobs: &mut dyn Blobs,
) -> Result<Vec<FilePair>, GitError> {
    let sources: Vec<(usize, Side)> = queue
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            FilePair::Deleted(s) => Some((i, s.clone())),
            _ => None,
        })
        .collect();
    let dests: Vec<(usize, Side)> = queue
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            FilePair::Added(s) => Some((i, s.clone())),
            _ => None,
        })
        .collect();
    if sources.is_empty() || dests.is_empty() {
        return Ok(queue);
    }
    let mut src_used = vec![false; sources.len()];
    // For each destination: (source index, score).
    let mut matched: Vec<Option<(usize, i32)>> = vec![None; dests.len()];

    // 1. Exact renames: same blob; prefer an unused source with the same basename.
    for (d, (_, dst)) in dests.iter().enumerate() {
        let mut best: Option<(usize, u8)> = None;
        for (s, (_, src)) in sources.iter().enumerate() {
            if src_used[s] || src.id != dst.id {
                continue;
            }
            if (!src.is_regular() || !dst.is_regular()) && src.kind != dst.kind {
                continue;
            }
            let score = 1 + u8::from(basename(&src.path) == basename(&dst.path));
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((s, score));
                if score == 2 {
                    break;
                }
            }
        }
        if let Some((s, _)) = best {
            src_used[s] = true;
            matched[d] = Some((s, MAX_SCORE as i32));
        }
    }

    let mut prints = Prints {
        blobs,
        cache: HashMap::new(),
    };

    // 2. Sources and destinations whose basename is unique on both sides pair up at 75%.
    let remaining_src = |used: &[bool]| -> Vec<usize> {
        (0..sources.len()).filter(|&s| !used[s]).collect::<Vec<_>>()
    };
    let srcs = remaining_src(&src_used);
    if !srcs.is_empty() && matched.iter().any(Option::is_none) {
        let basename_score = MIN_SCORE + (0.5 * (MAX_SCORE - f64::from(MIN_SCORE))) as i32;
        let mut src_by_name: HashMap<&[u8], Option<usize>> = HashMap::new();
        for &s in &srcs {
            src_by_name
                .entry(basename(&sources[s].1.path))
                .and_modify(|v| *v = None)
                .or_insert(Some(s));
        }
        let mut dst_by_name: HashMap<&[u8], Option<usize>> = HashMap::new();
        for (d, (_, dst)) in dests.iter().enumerate() {
            if matched[d].is_none() {
                dst_by_name
                    .entry(basename(&dst.path))
                    .and_modify(|v| *v = None)
                    .or_insert(Some(d));
            }
        }
        for &s in &srcs {
            let name = basename(&sources[s].1.path);
            let Some(dst_slot) = dst_by_name.get(name) else {
                continue;
            };
            let (Some(Some(src_index)), Some(d)) = (src_by_name.get(name), *dst_slot) else {
                continue;
            };
            if matched[d].is_some() {
                continue;
            }
            let score = prints.similarity(&sources[*src_index].1, &dests[d].1, basename_score)?;
            if score < basename_score {
                continue;
            }
            matched[d] = Some((*src_index, score));
            src_used[*src_index] = true;
        }
    }

    // 3. The matrix: each remaining destination keeps its 4 best sources, then the best
    //    pairs overall are taken greedily.
    let srcs = remaining_src(&src_used);
    let open_dests: Vec<usize> = (0..dests.len()).filter(|&d| matched[d].is_none()).collect();
    let limit_ok = open_dests.len() * srcs.len() <= RENAME_LIMIT * RENAME_LIMIT;
    if !srcs.is_empty() && !open_dests.is_empty() && limit_ok {
        let mut matrix: Vec<Candidate> = Vec::with_capacity(open_dests.len() * CANDIDATES);
        for &d in &open_dests {
            prints.blobs.interrupted()?;
            let empty = Candidate {
                dst: None,
                src: 0,
                score: 0,
                name_score: 0,
            };
            let mut slots = [empty; CANDIDATES];
            for &s in &srcs {
                let (src, dst) = (&sources[s].1, &dests[d].1);
                let candidate = Candidate {
                    dst: Some(d),
                    src: s,
                    score: prints.similarity(src, dst, MIN_SCORE)?,
                    name_score: i32::from(basename(&src.path) == basename(&dst.path)),
                };
                // record_if_better: replace the worst slot if strictly better.
                let mut worst = 0;
                for i in 1..CANDIDATES {
                    if compare(&slots[i], &slots[worst]).is_gt() {
                        worst = i;
                    }
                }
                if compare(&slots[worst], &candidate).is_gt() {
                    slots[worst] = candidate;
                }
            }
            matrix.extend_from_slice(&slots);
        }
        matrix.sort_by(compare);
        for candidate in matrix {
            let Some(d) = candidate.dst else { break };
            if candidate.score < MIN_SCORE {
                break;
            }
            if matched[d].is_some() || src_used[candidate.src] {
                continue;
            }
            matched[d] = Some((candidate.src, candidate.score));
            src_used[candidate.src] = true;
        }
    }

    // Rebuild the queue: a rename takes its destination's place; its deletion disappears.
    let renamed_at: HashMap<usize, (usize, i32)> = dests
        .iter()
        .zip(&matched)
        .filter_map(|((qi, _), m)| m.map(|m| (*qi, m)))
        .collect();
    let used_at: std::collections::HashSet<usize> = sources
        .iter()
        .zip(&src_used)
        .filter_map(|((qi, _), used)| used.then_some(*qi))
        .collect();
    let mut out = Vec::with_capacity(queue.len());
    for (qi, pair) in queue.into_iter().enumerate() {
        match pair {
            FilePair::Added(new) => match renamed_at.get(&qi) {
                Some(&(s, score)) => out.push(FilePair::Renamed {
                    old: sources[s].1.clone(),
                    new,
                    score,
                }),
                None => out.push(FilePair::Added(new)),
            },
            FilePair::Deleted(_) if used_at.contains(&qi) => {}
            other => out.push(other),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_content_copies_everything() {
        let a = fingerprint(b"one\ntwo\nthree\n");
        assert_eq!(copied(&a, &a), 14);
    }

    #[test]
    fn crlf_counts_like_lf_in_text() {
        let lf = fingerprint(b"one\ntwo\n");
        let crlf = fingerprint(b"one\r\ntwo\r\n");
        assert_eq!(copied(&lf, &crlf), 8);
    }
}
