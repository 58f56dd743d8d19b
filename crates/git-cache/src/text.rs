//! The diff as text for the model: git's bytes stay the diff of record (the
//! patch id is computed from them), and the model reads a UTF-8 copy in which each line that is
//! not valid UTF-8 (Latin-1, EUC-JP, Shift-JIS content...) has every non-ASCII byte written as
//! `\xNN`, so it is visible and exact instead of silently becoming U+FFFD. The whole line is
//! escaped, not only the invalid sequences: legacy encodings often contain byte pairs that
//! happen to be valid UTF-8 (EUC-JP `\xDC\xB8` would show as U+0738), which would mislead.

use std::fmt::Write as _;

/// `diff` as UTF-8 text: lines that are valid UTF-8 unchanged; in every other line each byte
/// of 0x80 and above becomes the four characters `\xNN` (upper-case hex). Line structure is
/// unchanged, so line numbers and hunk headers still match the bytes.
///
/// Example: `b"+caf\xe9\n"` (Latin-1) becomes `"+caf\\xE9\n"`.
pub fn diff_text(diff: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(diff) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(diff.len() + diff.len() / 8);
    for line in diff.split_inclusive(|&b| b == b'\n') {
        match std::str::from_utf8(line) {
            Ok(text) => out.push_str(text),
            Err(_) => {
                for &byte in line {
                    if byte.is_ascii() {
                        out.push(char::from(byte));
                    } else {
                        let _ = write!(out, "\\x{byte:02X}");
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_utf8_is_unchanged() {
        assert_eq!(diff_text("+caf\u{e9} \u{65e5}\n".as_bytes()), "+café 日\n");
    }

    #[test]
    fn invalid_bytes_are_escaped_not_replaced() {
        assert_eq!(
            diff_text(
                "+caf\u{e9}\n"
                    .as_bytes()
                    .iter()
                    .chain(b"-caf\xe9 \xdc\xb8\n")
                    .copied()
                    .collect::<Vec<u8>>()
                    .as_slice()
            ),
            "+café\n-caf\\xE9 \\xDC\\xB8\n"
        );
    }
}
