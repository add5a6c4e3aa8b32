//! The busy-neighbours check: processes other than loadlab and its target that used CPU
//! while the machine was sampled. Its advice must be one a person can follow (issue 27, item
//! 7): never `kill` a kernel thread (`kworker/0:0` works for the kernel and cannot be killed),
//! and never the target itself (the processes listening on its port; a launched or watched
//! server is left out of the readings already).

use super::{check, BUSY_CORES};
use crate::readings::{BusyProcess, Readings};
use loadlab_result::{Check, CheckStatus};

pub fn busy_processes(r: &Readings) -> Check {
    let target: &[u32] = r.listener.as_ref().map_or(&[], |l| &l.pids);
    let busy: Vec<&BusyProcess> = r
        .busy
        .iter()
        .filter(|b| b.cores >= BUSY_CORES && !target.contains(&b.pid))
        .collect();
    let needs = format!(
        "a quiet machine: no other process above {:.0}% of a CPU",
        BUSY_CORES * 100.0
    );
    if busy.is_empty() {
        return check(
            "busy_processes",
            CheckStatus::Pass,
            format!(
                "no other process above {:.0}% of a CPU over {:.1} s",
                BUSY_CORES * 100.0,
                r.sampled_s
            ),
            needs,
            None,
        );
    }
    let shown: Vec<String> = busy
        .iter()
        .take(5)
        .map(|b| {
            format!(
                "{} (pid {}{}) {:.0}%",
                b.name,
                b.pid,
                if b.kernel_thread {
                    ", kernel thread"
                } else {
                    ""
                },
                b.cores * 100.0
            )
        })
        .collect();
    let total: f64 = busy.iter().map(|b| b.cores).sum();
    let killable: Vec<String> = busy
        .iter()
        .filter(|b| !b.kernel_thread)
        .take(5)
        .map(|b| b.pid.to_string())
        .collect();
    let kernel: Vec<&str> = busy
        .iter()
        .filter(|b| b.kernel_thread)
        .take(3)
        .map(|b| b.name.as_str())
        .collect();
    let mut fix = if killable.is_empty() {
        "wait until the machine is quieter".to_string()
    } else {
        format!(
            "wait until they finish, or stop them (kill {})",
            killable.join(" ")
        )
    };
    if !kernel.is_empty() {
        fix.push_str(&format!(
            "; {} {} the kernel's own work (I/O, interrupts, memory): not to be killed; it \
             calms down when what drives it (disk, network, another load) stops",
            kernel.join(", "),
            if kernel.len() == 1 { "is" } else { "are" }
        ));
    }
    check(
        "busy_processes",
        CheckStatus::Warn,
        format!(
            "{} other process{} used {:.1} CPUs over {:.1} s: {}{}",
            busy.len(),
            if busy.len() == 1 { "" } else { "es" },
            total,
            r.sampled_s,
            shown.join(", "),
            if busy.len() > 5 { ", ..." } else { "" }
        ),
        needs,
        Some(fix),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readings::Listener;

    fn process(pid: u32, name: &str, cores: f64, kernel_thread: bool) -> BusyProcess {
        BusyProcess {
            pid,
            name: name.into(),
            cores,
            kernel_thread,
        }
    }

    fn readings(busy: Vec<BusyProcess>, listener_pids: Vec<u32>) -> Readings {
        Readings {
            sampled_s: 0.5,
            busy,
            listener: (!listener_pids.is_empty()).then(|| Listener {
                backlog: 511,
                pids: listener_pids,
                cpus: Default::default(),
            }),
            ..Readings::default()
        }
    }

    fn text(c: &Check) -> String {
        format!("{} | {}", c.found, c.fix.clone().unwrap_or_default())
    }

    #[test]
    fn a_busy_user_process_may_be_stopped() {
        let c = busy_processes(&readings(
            vec![
                process(100, "job0", 0.95, false),
                process(101, "job1", 0.4, false),
                process(102, "idle", 0.01, false),
            ],
            vec![],
        ));
        assert_eq!(c.status, CheckStatus::Warn);
        let t = text(&c);
        assert!(t.contains("2 other processes used 1.4 CPUs"), "{t}");
        assert!(t.contains("job0 (pid 100) 95%"), "{t}");
        assert!(t.contains("(kill 100 101)"), "{t}");
    }

    #[test]
    fn a_kernel_thread_is_named_as_one_and_never_to_be_killed() {
        let c = busy_processes(&readings(
            vec![
                process(9, "kworker/0:0", 0.3, true),
                process(100, "job0", 0.5, false),
            ],
            vec![],
        ));
        assert_eq!(c.status, CheckStatus::Warn);
        let t = text(&c);
        assert!(t.contains("kworker/0:0 (pid 9, kernel thread) 30%"), "{t}");
        assert!(t.contains("(kill 100)"), "{t}");
        assert!(!t.contains("kill 9") && !t.contains(" 9)"), "{t}");
        assert!(t.contains("kworker/0:0 is the kernel's own work"), "{t}");

        // Only kernel threads: no kill at all.
        let c = busy_processes(&readings(
            vec![process(9, "kworker/0:0", 0.3, true)],
            vec![],
        ));
        assert_eq!(c.status, CheckStatus::Warn);
        let t = text(&c);
        assert!(!t.contains("(kill"), "{t}");
        assert!(t.contains("wait until the machine is quieter"), "{t}");
    }

    #[test]
    fn the_target_listening_on_its_port_is_not_a_neighbour() {
        let c = busy_processes(&readings(
            vec![
                process(4242, "my-server", 0.9, false),
                process(4243, "my-server", 0.3, false),
            ],
            vec![4242, 4243],
        ));
        assert_eq!(c.status, CheckStatus::Pass, "{}", text(&c));
        let c = busy_processes(&readings(
            vec![
                process(4242, "my-server", 0.9, false),
                process(100, "job0", 0.5, false),
            ],
            vec![4242],
        ));
        let t = text(&c);
        assert!(t.contains("1 other process used 0.5 CPUs"), "{t}");
        assert!(!t.contains("4242"), "{t}");
    }
}
