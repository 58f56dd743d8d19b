//! git's own character classes (`sane_ctype` in git's `git-compat-util.h`), which differ from
//! the C library's: shared by the diff writer, the funcname matcher and the patch id, below all
//! three so that none of them imports another for it.

/// git's `isspace`: space, tab, LF and CR only (not vertical tab or form feed).
pub(crate) fn is_git_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}
