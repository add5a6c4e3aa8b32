//! Which revision and branch a run measured: the flag, else the CI's own variables, else the
//! git checkout of the working directory, else nobody knows (and the run stays out of
//! histories). Pure: the caller hands in how to read a variable and how to ask git, so every
//! CI's spelling is table-tested here; this module must not read the environment or run git
//! itself.

use serde::Serialize;

/// CI variables holding the commit being built, in the order they are tried. Each is set by
/// its CI only, so the order matters only on a machine that sets several.
pub const REVISION_VARIABLES: &[&str] = &[
    "LOADLAB_REVISION",
    "GITHUB_SHA",                        // GitHub Actions
    "CI_COMMIT_SHA",                     // GitLab CI, Woodpecker
    "BUILDKITE_COMMIT",                  // Buildkite
    "CIRCLE_SHA1",                       // CircleCI
    "GIT_COMMIT",                        // Jenkins (git plugin)
    "TRAVIS_COMMIT",                     // Travis CI
    "BITBUCKET_COMMIT",                  // Bitbucket Pipelines
    "DRONE_COMMIT_SHA",                  // Drone
    "BUILD_SOURCEVERSION",               // Azure Pipelines
    "SEMAPHORE_GIT_SHA",                 // Semaphore
    "APPVEYOR_REPO_COMMIT",              // AppVeyor
    "CODEBUILD_RESOLVED_SOURCE_VERSION", // AWS CodeBuild
    "BUILD_VCS_NUMBER",                  // TeamCity
];

/// CI variables holding the branch. GitHub's `GITHUB_HEAD_REF` (a pull request's source
/// branch) comes before `GITHUB_REF_NAME`, which for a pull request is `123/merge`.
pub const BRANCH_VARIABLES: &[&str] = &[
    "LOADLAB_BRANCH",
    "GITHUB_HEAD_REF",
    "GITHUB_REF_NAME",
    "CI_COMMIT_BRANCH",
    "CI_COMMIT_REF_NAME",
    "BUILDKITE_BRANCH",
    "CIRCLE_BRANCH",
    "GIT_BRANCH",
    "TRAVIS_BRANCH",
    "BITBUCKET_BRANCH",
    "DRONE_BRANCH",
    "BUILD_SOURCEBRANCHNAME",
    "SEMAPHORE_GIT_BRANCH",
    "APPVEYOR_REPO_BRANCH",
];

/// What a run measured, and where each part came from (for `--verbose` and the docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Provenance {
    pub revision: Option<String>,
    pub branch: Option<String>,
    /// `--revision`, the variable's name, `git`, or `none`.
    pub revision_from: String,
}

/// Resolves a run's revision and branch. `var` reads an environment variable; `git` runs
/// `git ARGS` in the working directory and gives its trimmed output, or `None` when that
/// fails (no git, not a repository).
pub fn resolve(
    flag_revision: Option<&str>,
    flag_branch: Option<&str>,
    var: &dyn Fn(&str) -> Option<String>,
    git: &dyn Fn(&[&str]) -> Option<String>,
) -> Provenance {
    let non_empty = |v: Option<String>| {
        v.map(|s| printable(s.trim().to_string()))
            .filter(|s| !s.is_empty())
    };
    let from_vars = |names: &[&'static str]| {
        names
            .iter()
            .find_map(|&name| non_empty(var(name)).map(|v| (v, name)))
    };
    let (revision, revision_from) = match non_empty(flag_revision.map(str::to_string)) {
        Some(r) => (Some(r), "--revision".to_string()),
        None => match from_vars(REVISION_VARIABLES) {
            Some((r, name)) => (Some(r), name.to_string()),
            None => match non_empty(git(&["rev-parse", "HEAD"])) {
                Some(r) => (Some(r), "git".to_string()),
                None => (None, "none".to_string()),
            },
        },
    };
    let branch = non_empty(flag_branch.map(str::to_string))
        .or_else(|| from_vars(BRANCH_VARIABLES).map(|(b, _)| b))
        .or_else(|| {
            // `HEAD` is git's answer for a detached checkout: no branch.
            non_empty(git(&["rev-parse", "--abbrev-ref", "HEAD"])).filter(|b| b != "HEAD")
        })
        .map(|b| clean_branch(&b));
    Provenance {
        revision,
        branch,
        revision_from,
    }
}

/// A revision or branch given on the command line: refused when it holds a control
/// character (an escape, a bell, a line break), which every listing of runs would otherwise
/// carry to a terminal. The error names the flag and shows the value escaped.
pub fn check_flag(flag: &str, value: &str) -> Result<(), String> {
    match value.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "{flag} \"{}\": it holds the control character {}; give the {} as plain text \
             (a commit hash, a tag, a branch name)",
            value.escape_debug(),
            c.escape_debug(),
            flag.trim_start_matches('-')
        )),
        None => Ok(()),
    }
}

/// A value from a CI variable or git, kept as text that prints safely: a control character
/// in it is escaped (`escape_debug`), as a peer's text is, not dropped.
fn printable(value: String) -> String {
    match value.chars().any(char::is_control) {
        true => value.escape_debug().to_string(),
        false => value,
    }
}

/// Jenkins says `origin/main`, some CIs `refs/heads/main`: the branch is `main`.
fn clean_branch(branch: &str) -> String {
    let b = branch.strip_prefix("refs/heads/").unwrap_or(branch);
    b.strip_prefix("origin/").unwrap_or(b).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(
        vars: &[(&str, &str)],
        git_head: Option<&str>,
        git_branch: Option<&str>,
        flags: (Option<&str>, Option<&str>),
    ) -> Provenance {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let var = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let git = move |args: &[&str]| match args {
            ["rev-parse", "HEAD"] => git_head.map(str::to_string),
            ["rev-parse", "--abbrev-ref", "HEAD"] => git_branch.map(str::to_string),
            _ => None,
        };
        resolve(flags.0, flags.1, &var, &git)
    }

    #[test]
    fn flags_then_ci_variables_then_git_then_none() {
        struct Case<'a> {
            vars: &'a [(&'a str, &'a str)],
            git: (Option<&'a str>, Option<&'a str>),
            flags: (Option<&'a str>, Option<&'a str>),
            want: (Option<&'a str>, Option<&'a str>, &'a str),
        }
        let cases = [
            Case {
                vars: &[("GITHUB_SHA", "gh1"), ("GITHUB_REF_NAME", "main")],
                git: (Some("g1"), Some("local")),
                flags: (Some("f1"), Some("fb")),
                want: (Some("f1"), Some("fb"), "--revision"),
            },
            Case {
                vars: &[("GITHUB_SHA", "gh1"), ("GITHUB_REF_NAME", "main")],
                git: (Some("g1"), Some("local")),
                flags: (None, None),
                want: (Some("gh1"), Some("main"), "GITHUB_SHA"),
            },
            Case {
                vars: &[
                    ("GITHUB_SHA", "gh2"),
                    ("GITHUB_HEAD_REF", "topic"),
                    ("GITHUB_REF_NAME", "7/merge"),
                ],
                git: (None, None),
                flags: (None, None),
                want: (Some("gh2"), Some("topic"), "GITHUB_SHA"),
            },
            Case {
                vars: &[("GITHUB_HEAD_REF", ""), ("GITHUB_REF_NAME", "main")],
                git: (None, None),
                flags: (None, None),
                want: (None, Some("main"), "none"),
            },
            Case {
                vars: &[("CI_COMMIT_SHA", "gl1"), ("CI_COMMIT_BRANCH", "dev")],
                git: (None, None),
                flags: (None, None),
                want: (Some("gl1"), Some("dev"), "CI_COMMIT_SHA"),
            },
            Case {
                vars: &[("BUILDKITE_COMMIT", "bk1"), ("BUILDKITE_BRANCH", "main")],
                git: (None, None),
                flags: (None, None),
                want: (Some("bk1"), Some("main"), "BUILDKITE_COMMIT"),
            },
            Case {
                vars: &[("CIRCLE_SHA1", "c1"), ("CIRCLE_BRANCH", "x")],
                git: (None, None),
                flags: (None, None),
                want: (Some("c1"), Some("x"), "CIRCLE_SHA1"),
            },
            Case {
                vars: &[("GIT_COMMIT", "j1"), ("GIT_BRANCH", "origin/release")],
                git: (None, None),
                flags: (None, None),
                want: (Some("j1"), Some("release"), "GIT_COMMIT"),
            },
            Case {
                vars: &[("GIT_COMMIT", "  ")],
                git: (Some("abc123"), Some("feature")),
                flags: (Some(""), None),
                want: (Some("abc123"), Some("feature"), "git"),
            },
            Case {
                vars: &[],
                git: (Some("abc123"), Some("HEAD")),
                flags: (None, None),
                want: (Some("abc123"), None, "git"),
            },
            Case {
                vars: &[],
                git: (None, None),
                flags: (None, Some("refs/heads/main")),
                want: (None, Some("main"), "none"),
            },
        ];
        for (i, c) in cases.iter().enumerate() {
            let got = with(c.vars, c.git.0, c.git.1, c.flags);
            assert_eq!(
                (
                    got.revision.as_deref(),
                    got.branch.as_deref(),
                    got.revision_from.as_str()
                ),
                c.want,
                "case {i}"
            );
        }
    }
}

#[cfg(test)]
mod control_tests {
    use super::*;

    /// Table: what the flags refuse (ESC, BEL, CR LF, NUL, DEL) with the value escaped in
    /// the error, and what they take (hashes, tags, Unicode names).
    #[test]
    fn flags_refuse_control_characters() {
        for bad in [
            "abc\u{1b}[2J",
            "v1\u{7}",
            "main\r\nFAKE: ok",
            "a\0b",
            "x\u{7f}",
        ] {
            let e = check_flag("--revision", bad).unwrap_err();
            assert!(e.contains("control character"), "{e}");
            assert!(!e.chars().any(char::is_control), "{e:?}");
        }
        for good in ["1a2b3c4d5e6f", "v1.0.0-beta.1", "feature/é", ""] {
            assert_eq!(check_flag("--branch", good), Ok(()), "{good}");
        }
    }

    /// A CI variable or git's answer with a control character is kept escaped.
    #[test]
    fn variables_with_control_characters_are_kept_escaped() {
        let var = |name: &str| (name == "GITHUB_SHA").then(|| "abc\u{1b}]0;x\u{7}".to_string());
        let p = resolve(None, None, &var, &|_| None);
        assert_eq!(p.revision.as_deref(), Some("abc\\u{1b}]0;x\\u{7}"));
    }
}
