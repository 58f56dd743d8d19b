//! `git patch-id --stable`, computed from a diff's text (a port of git's `builtin/patch-id.c`).
//!
//! Per file, every diff line from `diff --git` on is hashed with whitespace removed, except
//! `index` lines, hunk headers and `\ No newline` markers; a binary file contributes its two
//! abbreviated object ids instead. Each file's SHA-1 is added bytewise (little-endian, with
//! carry) into the result, so the order of files does not matter.

use sha1::{Digest, Sha1};

use crate::ctype::is_git_space;

/// `git patch-id --stable` of a unified diff as `git diff` prints it: the 40-hex id, or `None`
/// when the diff holds nothing to hash (an empty diff).
///
/// Same as `git diff base...head | git patch-id --stable | cut -d' ' -f1`, for the first patch
/// in `diff`. Non-UTF-8 diffs: use [`patch_id_bytes`].
pub fn patch_id(diff: &str) -> Option<String> {
    patch_id_bytes(diff.as_bytes())
}

/// [`patch_id`] over raw bytes, for diffs of non-UTF-8 content.
pub fn patch_id_bytes(diff: &[u8]) -> Option<String> {
    let mut result = [0u8; 20];
    let mut ctx = Sha1::new();
    let (mut before, mut after) = (-1i64, -1i64);
    let mut is_binary = false;
    let (mut pre_id, mut post_id): (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
    let mut patch_len = 0usize;

    for line in diff.split_inclusive(|&b| b == b'\n') {
        // C string semantics: git stops reading a line at a NUL byte.
        let line = line.split(|&b| b == 0).next().unwrap_or(line);
        if line.starts_with(b"\\ ") && line.len() > 12 {
            continue;
        }
        if patch_len == 0 && !line.starts_with(b"diff ") {
            continue;
        }
        if before == -1 {
            if line.starts_with(b"GIT binary patch") || line.starts_with(b"Binary files") {
                is_binary = true;
                before = 0;
                ctx.update(&pre_id);
                ctx.update(&post_id);
                flush(&mut result, &mut ctx);
                continue;
            } else if let Some(rest) = line.strip_prefix(b"index ") {
                if let Some(dots) = find(rest, b"..") {
                    let post = &rest[dots + 2..];
                    let end = find(post, b" ").unwrap_or(post.len().saturating_sub(1));
                    pre_id = rest[..dots].to_vec();
                    post_id = post[..end].to_vec();
                }
                continue;
            } else if line.starts_with(b"--- ") {
                before = 1;
                after = 1;
            } else if !line.first().is_some_and(u8::is_ascii_alphabetic) {
                break;
            }
        }
        if is_binary {
            if line.starts_with(b"diff ") {
                is_binary = false;
                before = -1;
            }
            continue;
        }
        if before == 0 && after == 0 {
            if line.starts_with(b"@@ -") {
                if let Some((b, a)) = scan_hunk_header(line) {
                    before = b;
                    after = a;
                }
                continue;
            }
            if !line.starts_with(b"diff ") {
                break;
            }
            flush(&mut result, &mut ctx);
            before = -1;
            after = -1;
        }
        match line.first() {
            Some(b'-') => before -= 1,
            Some(b'+') => after -= 1,
            Some(b' ') => {
                before -= 1;
                after -= 1;
            }
            _ => {}
        }
        let stripped: Vec<u8> = line.iter().copied().filter(|&b| !is_git_space(b)).collect();
        patch_len += stripped.len();
        ctx.update(&stripped);
    }
    flush(&mut result, &mut ctx);
    (patch_len > 0).then(|| hex::encode(result))
}

/// Adds the digest of `ctx` to `result` bytewise with carry, and restarts `ctx`.
fn flush(result: &mut [u8; 20], ctx: &mut Sha1) {
    let digest = std::mem::take(ctx).finalize();
    let mut carry = 0u16;
    for (r, d) in result.iter_mut().zip(digest.iter()) {
        carry += u16::from(*r) + u16::from(*d);
        *r = carry as u8;
        carry >>= 8;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The line counts of `@@ -a,b +c,d @@` (a missing count means 1), as patch-id.c reads them.
fn scan_hunk_header(line: &[u8]) -> Option<(i64, i64)> {
    fn number(s: &[u8]) -> (i64, usize) {
        let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
        let value = s[..n].iter().fold(0i64, |acc, d| {
            acc.saturating_mul(10).saturating_add(i64::from(d - b'0'))
        });
        (value, n)
    }
    let mut q = &line[4..];
    let (_, mut n) = number(q);
    let before = if q.get(n) == Some(&b',') {
        q = &q[n + 1..];
        let (v, len) = number(q);
        n = len;
        v
    } else {
        1
    };
    if n == 0 || q.get(n) != Some(&b' ') || q.get(n + 1) != Some(&b'+') {
        return None;
    }
    let mut r = &q[n + 2..];
    let (_, mut n) = number(r);
    let after = if r.get(n) == Some(&b',') {
        r = &r[n + 1..];
        let (v, len) = number(r);
        n = len;
        v
    } else {
        1
    };
    (n > 0).then_some((before, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_diff_has_no_patch_id() {
        assert_eq!(patch_id(""), None);
    }

    #[test]
    fn hunk_header_counts_default_to_one() {
        assert_eq!(scan_hunk_header(b"@@ -3 +4,2 @@ fn x\n"), Some((1, 2)));
        assert_eq!(scan_hunk_header(b"@@ -0,0 +1 @@\n"), Some((0, 1)));
    }
}
