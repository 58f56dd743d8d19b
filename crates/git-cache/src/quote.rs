//! Path quoting as git prints paths in diff headers (`quote.c`, `core.quotePath=true`).

/// Appends the escape for `byte` when git would quote it, returning false for plain bytes.
fn escape(byte: u8, out: &mut Vec<u8>) -> bool {
    let letter = match byte {
        0x07 => b'a',
        0x08 => b'b',
        b'\t' => b't',
        b'\n' => b'n',
        0x0b => b'v',
        0x0c => b'f',
        b'\r' => b'r',
        b'"' => b'"',
        b'\\' => b'\\',
        0x00..=0x1f | 0x7f..=0xff => {
            out.extend_from_slice(format!("\\{byte:03o}").as_bytes());
            return true;
        }
        _ => return false,
    };
    out.push(b'\\');
    out.push(letter);
    true
}

fn needs_quoting(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .any(|&b| matches!(b, 0x00..=0x1f | 0x7f..=0xff | b'"' | b'\\'))
}

/// `prefix` + `path`, in double quotes with C escapes when the path needs quoting
/// (git's `quote_two`), e.g. `a/x.txt` or `"b/\303\244.txt"`.
pub(crate) fn quote_two(prefix: &[u8], path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefix.len() + path.len() + 2);
    if needs_quoting(prefix) || needs_quoting(path) {
        out.push(b'"');
        for &b in prefix.iter().chain(path) {
            if !escape(b, &mut out) {
                out.push(b);
            }
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(prefix);
        out.extend_from_slice(path);
    }
    out
}

/// `path` quoted as git's `quote_c_style` does (used by `rename from`/`rename to`).
pub(crate) fn quote(path: &[u8]) -> Vec<u8> {
    quote_two(b"", path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_stay_unquoted_and_spaces_are_plain() {
        assert_eq!(quote_two(b"a/", b"dir/my file.txt"), b"a/dir/my file.txt");
    }

    #[test]
    fn non_ascii_and_controls_are_octal_or_letter_escaped() {
        assert_eq!(
            quote_two(b"b/", "ä\t\"x\\".as_bytes()),
            br#""b/\303\244\t\"x\\""#.to_vec()
        );
        assert_eq!(quote(b"\x01"), br#""\001""#.to_vec());
    }
}
