//! Whether a target's build tools are installed: a `PATH` lookup, nothing more, so `lab list`
//! can say "toolchain missing" instead of failing halfway through a build.

use std::path::{Path, PathBuf};

/// Where `program` would be found on `PATH`, if anywhere.
pub fn find(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

/// The programs of `programs` that are not on `PATH`.
pub fn missing(programs: &[String]) -> Vec<String> {
    programs
        .iter()
        .filter(|p| find(p).is_none())
        .cloned()
        .collect()
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sh_and_not_a_made_up_program() {
        assert!(find("sh").is_some());
        assert_eq!(
            missing(&["sh".into(), "no-such-toolchain-xyz".into()]),
            vec!["no-such-toolchain-xyz".to_string()]
        );
    }
}
