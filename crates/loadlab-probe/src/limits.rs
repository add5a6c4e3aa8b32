//! Resource limits as a user writes them, parsed and checked before anything starts.

use crate::ProbeError;

/// What a launched server may use. `None` means unlimited.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// CPU quota in cores (0.08 = 8% of one core), enforced per 100 ms period as Docker and
    /// Kubernetes do.
    pub cpus: Option<f64>,
    /// Memory limit in bytes; past it the kernel reclaims, then OOM-kills.
    pub memory: Option<u64>,
    /// The CPUs the server may run on.
    pub pin: Option<Vec<usize>>,
}

impl Limits {
    pub fn is_empty(&self) -> bool {
        self.cpus.is_none() && self.memory.is_none() && self.pin.is_none()
    }
}

/// What to do when a limit cannot be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LimitsMode {
    /// Refuse to run: numbers measured without the asked-for limits would mislead.
    #[default]
    Strict,
    /// Run anyway and say in the result which limits held.
    BestEffort,
}

/// The CFS period loadlab uses, as `docker run --cpus` does.
pub const CPU_PERIOD_US: u64 = 100_000;
/// The smallest quota the kernel accepts.
const MIN_QUOTA_US: u64 = 1_000;

/// `--cpus`: a positive number of cores, at most the machine's.
pub fn parse_cpus(raw: &str, online: usize) -> Result<f64, ProbeError> {
    let cpus: f64 = raw.trim().parse().map_err(|_| {
        ProbeError::Invalid(format!(
            "--cpus {raw:?} is not a number of cores; write e.g. --cpus 0.5 or --cpus 2"
        ))
    })?;
    let min = MIN_QUOTA_US as f64 / CPU_PERIOD_US as f64;
    if !cpus.is_finite() || cpus < min {
        return Err(ProbeError::Invalid(format!(
            "--cpus {raw} is below the smallest quota the kernel enforces ({min} of a core); \
             write e.g. --cpus 0.08"
        )));
    }
    if cpus > online as f64 {
        return Err(ProbeError::Invalid(format!(
            "--cpus {raw} is more than the {online} CPUs this machine has; drop --cpus to leave \
             the server unlimited"
        )));
    }
    Ok(cpus)
}

/// The quota in microseconds per [`CPU_PERIOD_US`] for `cpus` cores.
pub fn quota_us(cpus: f64) -> u64 {
    ((cpus * CPU_PERIOD_US as f64).round() as u64).max(MIN_QUOTA_US)
}

/// `--memory`: `128Mi`, `1Gi`, `64M`, `512MiB`, `1.5G` or plain bytes. Binary (`Ki`, `Mi`,
/// `Gi`) and decimal (`K`, `M`, `G`) suffixes mean what Kubernetes means by them.
pub fn parse_memory(raw: &str) -> Result<u64, ProbeError> {
    let bad = || {
        ProbeError::Invalid(format!(
            "--memory {raw:?} is not a size; write e.g. 128Mi, 1Gi, 500M or a byte count"
        ))
    };
    let text = raw.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let unit = unit.trim();
    let unit = unit
        .strip_suffix("iB")
        .map(|u| format!("{u}i"))
        .unwrap_or_else(|| unit.trim_end_matches(['B', 'b']).to_string());
    let factor: f64 = match unit.as_str() {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let bytes = number * factor;
    if !bytes.is_finite() || bytes < (4 << 20) as f64 {
        return Err(ProbeError::Invalid(format!(
            "--memory {raw} is below 4Mi, too little for any server to start; write e.g. 64Mi"
        )));
    }
    Ok(bytes as u64)
}

/// `--pin`: `1`, `0,2`, `0-3` or a mix; every CPU must be one this machine has.
pub fn parse_cpu_list(raw: &str, online: usize) -> Result<Vec<usize>, ProbeError> {
    let bad = |detail: String| {
        ProbeError::Invalid(format!(
            "--pin {raw:?}: {detail}; write CPU numbers from 0 to {} such as 1, 0,1 or 0-1",
            online.saturating_sub(1)
        ))
    };
    let mut cpus = Vec::new();
    for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo: usize = lo
            .parse()
            .map_err(|_| bad(format!("{part:?} is not a CPU")))?;
        let hi: usize = hi
            .parse()
            .map_err(|_| bad(format!("{part:?} is not a CPU")))?;
        if lo > hi {
            return Err(bad(format!("{part:?} runs backwards")));
        }
        for cpu in lo..=hi {
            if cpu >= online {
                return Err(bad(format!("this machine has no CPU {cpu}")));
            }
            if !cpus.contains(&cpu) {
                cpus.push(cpu);
            }
        }
    }
    if cpus.is_empty() {
        return Err(bad("no CPU given".into()));
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// `0-2,5` for `[0, 1, 2, 5]`: the kernel's list format, for cpuset files and messages.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// The number of CPUs the kernel has online.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes() {
        for (raw, bytes) in [
            ("128Mi", 128 << 20),
            ("128MiB", 128 << 20),
            ("1Gi", 1 << 30),
            ("64M", 64_000_000),
            ("1.5Gi", 3 << 29),
            ("5000000", 5_000_000),
            (" 8Mi ", 8 << 20),
        ] {
            assert_eq!(parse_memory(raw).unwrap(), bytes, "{raw}");
        }
        for raw in ["", "Mi", "12Qi", "-5Mi", "1Mi", "lots"] {
            let err = parse_memory(raw).unwrap_err().to_string();
            assert!(err.contains("--memory"), "{raw}: {err}");
        }
    }

    #[test]
    fn cpu_quotas() {
        assert_eq!(parse_cpus("0.08", 2).unwrap(), 0.08);
        assert_eq!(quota_us(0.08), 8_000);
        assert_eq!(quota_us(1.5), 150_000);
        assert!(parse_cpus("0.001", 2)
            .unwrap_err()
            .to_string()
            .contains("smallest"));
        assert!(parse_cpus("3", 2)
            .unwrap_err()
            .to_string()
            .contains("2 CPUs"));
        assert!(parse_cpus("half", 2).is_err());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("1", 2).unwrap(), vec![1]);
        assert_eq!(parse_cpu_list("0-3,2,6", 8).unwrap(), vec![0, 1, 2, 3, 6]);
        assert!(parse_cpu_list("2", 2)
            .unwrap_err()
            .to_string()
            .contains("no CPU 2"));
        assert!(parse_cpu_list("3-1", 8).is_err());
        assert!(parse_cpu_list(",", 8).is_err());
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(format_cpu_list(&[1]), "1");
    }
}
