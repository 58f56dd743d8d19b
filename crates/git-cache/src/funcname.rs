//! The hunk-header ("function name") patterns of git's built-in diff drivers, for paths with a
//! `diff=<driver>` attribute.
//!
//! The patterns are git 2.47's `userdiff.c` funcname patterns, verbatim: POSIX extended regular
//! expressions, one per line, a leading `!` marking a line that is *not* a function line, and
//! `IPATTERN` drivers matched case-insensitively. [`FuncName::find`] follows git's `ff_regexp`
//! (`xdiff-interface.c`): the first pattern that matches decides; a negated one means "no";
//! the text is the first group when it took part in the match, else the whole match, cut to 80
//! bytes and stripped of trailing whitespace. The POSIX bracket expressions are translated to
//! the `regex` crate's syntax (a `]` first, `[` and `\` are literal inside POSIX brackets).
//!
//! One difference is left: the `regex` crate takes the leftmost-first match where POSIX takes
//! the leftmost-longest. The patterns are anchored and greedy, so the two agree on the code the
//! tests compare with git; where they would not, only a hunk header's text differs, never the
//! patch id (which skips hunk headers).

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::bytes::{Regex, RegexBuilder};

use crate::ctype::is_git_space;

/// git's function-name buffer (`struct func_line`).
pub(crate) const FUNC_LINE_MAX: usize = 80;

/// `(driver, case-insensitive, funcname pattern)` from git 2.47's `userdiff.c`.
const BUILTIN: &[(&str, bool, &str)] = &[
    (
        "ada",
        true,
        "!^(.*[ \t])?(is[ \t]+new|renames|is[ \t]+separate)([ \t].*)?$\n\
         !^[ \t]*with[ \t].*$\n\
         ^[ \t]*((procedure|function)[ \t]+.*)$\n\
         ^[ \t]*((package|protected|task)[ \t]+.*)$",
    ),
    (
        "bash",
        false,
        "^[ \t]*(([a-zA-Z_][a-zA-Z0-9_]*[ \t]*\\([ \t]*\\))|(function[ \t]+[a-zA-Z_][a-zA-Z0-9_]*(([ \t]*\\([ \t]*\\))|([ \t]+)))[ \t]*(\\{|\\(\\(?|\\[\\[))",
    ),
    (
        "bibtex",
        false,
        "(@[a-zA-Z]{1,}[ \t]*\\{{0,1}[ \t]*[^ \t\"@',\\#}{~%]*).*$",
    ),
    (
        "cpp",
        false,
        "!^[ \t]*[A-Za-z_][A-Za-z_0-9]*:[[:space:]]*($|/[/*])\n\
         ^((::[[:space:]]*)?[A-Za-z_].*)$",
    ),
    (
        "csharp",
        false,
        "!(^|[ \t]+)(do|while|for|foreach|if|else|new|default|return|switch|case|throw|catch|using|lock|fixed)([ \t(]+|$)\n\
         ^[ \t]*(([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+([ \t]+([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+)+[ \t]*\\([^;]*)$\n\
         ^[ \t]*(([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+([ \t]+([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+)+[^;=:,()]*)$\n\
         ^[ \t]*(((static|public|internal|private|protected|new|unsafe|sealed|abstract|partial)[ \t]+)*(class|enum|interface|struct|record)[ \t]+.*)$\n\
         ^[ \t]*(namespace[ \t]+.*)$",
    ),
    ("css", true, "![:;][[:space:]]*$\n^[:[@.#]?[_a-z0-9].*$"),
    ("dts", false, "!;\n!=\n^[ \t]*((/[ \t]*\\{|&?[a-zA-Z_]).*)"),
    (
        "elixir",
        false,
        "^[ \t]*((def(macro|module|impl|protocol|p)?|test)[ \t].*)$",
    ),
    (
        "fortran",
        true,
        "!^([C*]|[ \t]*!)\n\
         !^[ \t]*MODULE[ \t]+PROCEDURE[ \t]\n\
         ^[ \t]*((END[ \t]+)?(PROGRAM|MODULE|BLOCK[ \t]+DATA|([^!'\" \t]+[ \t]+)*(SUBROUTINE|FUNCTION))[ \t]+[A-Z].*)$",
    ),
    (
        "fountain",
        true,
        "^((\\.[^.]|(int|ext|est|int\\.?/ext|i/e)[. ]).*)$",
    ),
    (
        "golang",
        false,
        "^[ \t]*(func[ \t]*.*(\\{[ \t]*)?)\n\
         ^[ \t]*(type[ \t].*(struct|interface)[ \t]*(\\{[ \t]*)?)",
    ),
    ("html", false, "^[ \t]*(<[Hh][1-6]([ \t].*)?>.*)$"),
    (
        "java",
        false,
        "!^[ \t]*(catch|do|for|if|instanceof|new|return|switch|throw|while)\n\
         ^[ \t]*(([a-z-]+[ \t]+)*(class|enum|interface|record)[ \t]+.*)$\n\
         ^[ \t]*(([A-Za-z_<>&][][?&<>.,A-Za-z_0-9]*[ \t]+)+[A-Za-z_][A-Za-z_0-9]*[ \t]*\\([^;]*)$",
    ),
    (
        "kotlin",
        false,
        "^[ \t]*(([a-z]+[ \t]+)*(fun|class|interface)[ \t]+.*)$",
    ),
    ("markdown", false, "^ {0,3}#{1,6}[ \t].*"),
    (
        "matlab",
        false,
        "^[[:space:]]*((classdef|function)[[:space:]].*)$|^(%%%?|##)[[:space:]].*$",
    ),
    (
        "objc",
        false,
        "!^[ \t]*(do|for|if|else|return|switch|while)\n\
         ^[ \t]*([-+][ \t]*\\([ \t]*[A-Za-z_][A-Za-z_0-9* \t]*\\)[ \t]*[A-Za-z_].*)$\n\
         ^[ \t]*(([A-Za-z_][A-Za-z_0-9]*[ \t]+)+[A-Za-z_][A-Za-z_0-9]*[ \t]*\\([^;]*)$\n\
         ^(@(implementation|interface|protocol)[ \t].*)$",
    ),
    (
        "pascal",
        false,
        "^(((class[ \t]+)?(procedure|function)|constructor|destructor|interface|implementation|initialization|finalization)[ \t]*.*)$\n\
         ^(.*=[ \t]*(class|record).*)$",
    ),
    (
        "perl",
        false,
        "^package .*\n\
         ^sub [[:alnum:]_':]+[ \t]*(\\([^)]*\\)[ \t]*)?(:[^;#]*)?(\\{[ \t]*)?(#.*)?$\n\
         ^(BEGIN|END|INIT|CHECK|UNITCHECK|AUTOLOAD|DESTROY)[ \t]*(\\{[ \t]*)?(#.*)?$\n\
         ^=head[0-9] .*",
    ),
    (
        "php",
        false,
        "^[\t ]*(((public|protected|private|static|abstract|final)[\t ]+)*function.*)$\n\
         ^[\t ]*((((final|abstract)[\t ]+)?class|enum|interface|trait).*)$",
    ),
    (
        "python",
        false,
        "^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$",
    ),
    ("ruby", false, "^[ \t]*((class|module|def)[ \t].*)$"),
    (
        "rust",
        false,
        "^[\t ]*((pub(\\([^\\)]+\\))?[\t ]+)?((async|const|unsafe|extern([\t ]+\"[^\"]+\"))[\t ]+)?(struct|enum|union|mod|trait|fn|impl|macro_rules!)[< \t]+[^;]*)$",
    ),
    (
        "scheme",
        false,
        "^[\t ]*(\\(((define|def(struct|syntax|class|method|rules|record|proto|alias)?)[-*/ \t]|(library|module|struct|class)[*+ \t]).*)$",
    ),
    (
        "tex",
        false,
        "^(\\\\((sub)*section|chapter|part)\\*{0,1}\\{.*)$",
    ),
];

/// The compiled function-name patterns of one driver.
#[derive(Debug)]
pub(crate) struct FuncName {
    /// `(negated, regex)` in order.
    patterns: Vec<(bool, Regex)>,
}

impl FuncName {
    /// git's `ff_regexp`: the function-name text of `record` (a line with its newline), or
    /// `None` when the line is not a function line.
    pub(crate) fn find(&self, record: &[u8]) -> Option<Vec<u8>> {
        let mut line = record.strip_suffix(b"\n").unwrap_or(record);
        if record.ends_with(b"\n") {
            line = line.strip_suffix(b"\r").unwrap_or(line);
        }
        for (negated, regex) in &self.patterns {
            let Some(caps) = regex.captures(line) else {
                continue;
            };
            if *negated {
                return None;
            }
            let found = caps.get(1).or_else(|| caps.get(0))?.as_bytes();
            let mut text = &found[..found.len().min(FUNC_LINE_MAX)];
            while let Some((&last, rest)) = text.split_last() {
                if !is_git_space(last) {
                    break;
                }
                text = rest;
            }
            return Some(text.to_vec());
        }
        None
    }
}

/// The built-in drivers by name, compiled on first use. A pattern the `regex` crate cannot
/// compile (none does; a unit test checks) leaves its driver out, so it falls back to git's
/// default rule instead of failing a review.
static DRIVERS: LazyLock<HashMap<&'static str, FuncName>> = LazyLock::new(|| {
    let mut drivers = HashMap::new();
    for (name, icase, source) in BUILTIN {
        match compile(source, *icase) {
            Ok(f) => {
                drivers.insert(*name, f);
            }
            Err(e) => tracing::warn!(driver = name, error = %e, "diff driver pattern not compiled"),
        }
    }
    drivers
});

/// The funcname patterns of built-in driver `name` (`cpp`, `rust`, `python`, ...); `None` for
/// any other name, which git treats like the default driver when no config names it.
pub(crate) fn builtin(name: &[u8]) -> Option<&'static FuncName> {
    let name = std::str::from_utf8(name).ok()?;
    DRIVERS.get(name)
}

fn compile(source: &str, icase: bool) -> Result<FuncName, regex::Error> {
    let mut patterns = Vec::new();
    for line in source.split('\n') {
        let (negated, ere) = match line.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        let regex = RegexBuilder::new(&translate(ere))
            .unicode(false)
            .case_insensitive(icase)
            .build()?;
        patterns.push((negated, regex));
    }
    Ok(FuncName { patterns })
}

/// A POSIX extended regular expression in the `regex` crate's syntax: bracket expressions are
/// rewritten with every literal as a `\x{..}` escape (POSIX takes `]` first, `[` and `\`
/// literally inside brackets; the crate would read them as nesting and escapes), character
/// classes (`[:alpha:]`) kept; everything outside brackets is the same in both.
fn translate(ere: &str) -> String {
    let chars: Vec<char> = ere.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            out.push(c);
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c != '[' {
            out.push(c);
            i += 1;
            continue;
        }
        i += 1;
        out.push('[');
        if chars.get(i) == Some(&'^') {
            out.push('^');
            i += 1;
        }
        let mut first = true;
        while i < chars.len() && (first || chars[i] != ']') {
            first = false;
            if chars[i] == '['
                && chars.get(i + 1) == Some(&':')
                && let Some(end) = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == ':' && chars[j + 1] == ']')
            {
                out.extend(&chars[i..end + 2]);
                i = end + 2;
                continue;
            }
            let lo = chars[i];
            if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|&hi| hi != ']') {
                out.push_str(&format!(
                    "\\x{{{:x}}}-\\x{{{:x}}}",
                    lo as u32,
                    chars[i + 2] as u32
                ));
                i += 3;
            } else {
                out.push_str(&format!("\\x{{{:x}}}", lo as u32));
                i += 1;
            }
        }
        out.push(']');
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(driver: &str, line: &str) -> Option<String> {
        builtin(driver.as_bytes())
            .unwrap()
            .find(line.as_bytes())
            .map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn every_builtin_pattern_compiles() {
        for (name, icase, source) in BUILTIN {
            compile(source, *icase).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn posix_brackets_take_brackets_and_backslashes_literally() {
        assert_eq!(
            translate("[]a-c[:alpha:]\\]"),
            "[\\x{5d}\\x{61}-\\x{63}[:alpha:]\\x{5c}]"
        );
        assert_eq!(translate("[^\\)]+"), "[^\\x{5c}\\x{29}]+");
    }

    #[test]
    fn negated_patterns_win_when_they_match_first() {
        assert_eq!(
            find("cpp", "int main(void)\n"),
            Some("int main(void)".into())
        );
        assert_eq!(find("cpp", "public:\n"), None);
        assert_eq!(find("java", "    return x(1);\n"), None);
    }

    #[test]
    fn the_first_group_is_the_name_when_present() {
        assert_eq!(
            find("rust", "    pub fn parse(input: &str) -> X {\n"),
            Some("pub fn parse(input: &str) -> X {".into())
        );
        assert_eq!(
            find("python", "    def run(self):\r\n"),
            Some("def run(self):".into())
        );
        assert_eq!(find("markdown", "## Usage  \n"), Some("## Usage".into()));
    }

    #[test]
    fn case_insensitive_drivers_ignore_case() {
        assert_eq!(
            find("fortran", "      subroutine foo(x)\n"),
            Some("subroutine foo(x)".into())
        );
    }

    #[test]
    fn unknown_drivers_have_no_patterns() {
        assert!(builtin(b"no-such-driver").is_none());
    }
}
