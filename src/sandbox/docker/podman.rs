//! Podman behind the Docker API (`podman system service`): telling it from Docker by the
//! version reply, refusing a service that cannot limit a container (rootless on cgroups v1),
//! asking for the open-file and process limits Docker gives without being asked, and reading
//! back a created container's settings, so that a hardening option the engine did not honour
//! ends the start with one line instead of being lost.

use std::collections::BTreeSet;
use std::path::Path;

use bollard::models::{
    HostConfig, ResourcesUlimits, SystemInfo, SystemInfoCgroupVersionEnum, SystemVersion,
};

/// The engine that answers on the Docker API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// Docker's daemon.
    Docker,
    /// Podman's API service.
    Podman,
}

/// The engine whose version reply this is: Podman names a component `Podman Engine`.
pub(super) fn engine_of(version: &SystemVersion) -> Engine {
    let podman = version
        .components
        .iter()
        .flatten()
        .any(|component| component.name == "Podman Engine");
    if podman {
        Engine::Podman
    } else {
        Engine::Docker
    }
}

/// Why aci cannot run tasks on this Podman service, when it cannot: rootless Podman on
/// cgroups v1 ignores memory, CPU and process limits (it only warns, in its own log).
pub(super) fn refusal(info: &SystemInfo) -> Option<String> {
    let rootless = info
        .security_options
        .iter()
        .flatten()
        .any(|option| option.split(',').any(|field| field == "name=rootless"));
    let v1 = info.cgroup_version == Some(SystemInfoCgroupVersionEnum::_1);
    (rootless && v1).then(|| {
        "rootless Podman on cgroups v1 cannot limit a container's memory, CPUs or processes, \
         which aci sets: run Podman's service as root, or on a host with cgroups v2"
            .to_owned()
    })
}

/// The open-file and process limits of the Podman service listening on `socket`, for its
/// containers: Podman as root asks for 1048576 of each unless told, which a service without
/// `CAP_SYS_RESOURCE` cannot give (the start fails with `error setting rlimits`), while Docker's
/// containers inherit the daemon's. The service is the socket's peer; none is found for a
/// socket that is not on this machine, and then Podman's own choice stands.
pub(super) fn service_ulimits(socket: &Path) -> Vec<ResourcesUlimits> {
    let Ok(stream) = std::os::unix::net::UnixStream::connect(socket) else {
        return Vec::new();
    };
    let Ok(peer) = rustix::net::sockopt::socket_peercred(&stream) else {
        return Vec::new();
    };
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", peer.pid.as_raw_nonzero()));
    limits.map(|text| ulimits_of(&text)).unwrap_or_default()
}

/// The `nofile` and `nproc` ulimits of a `/proc/PID/limits` text (`unlimited` is -1).
fn ulimits_of(limits: &str) -> Vec<ResourcesUlimits> {
    let value = |word: &str| match word {
        "unlimited" => Some(-1),
        number => number.parse::<i64>().ok(),
    };
    [("Max open files", "nofile"), ("Max processes", "nproc")]
        .into_iter()
        .filter_map(|(label, name)| {
            let line = limits.lines().find(|line| line.starts_with(label))?;
            let mut words = line[label.len()..].split_whitespace();
            Some(ResourcesUlimits {
                name: Some(name.to_owned()),
                soft: Some(value(words.next()?)?),
                hard: Some(value(words.next()?)?),
            })
        })
        .collect()
}

/// The capabilities Podman's default configuration gives a container (those of Podman 3 and
/// 4): its inspect reply lists the ones dropped from these and the ones added to them.
const PODMAN_DEFAULT_CAPABILITIES: [&str; 14] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "NET_RAW",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// A capability's name without the `CAP_` prefix, in capitals.
fn capability(name: &str) -> String {
    let name = name.to_ascii_uppercase();
    name.strip_prefix("CAP_").unwrap_or(&name).to_owned()
}

/// The capabilities a container keeps by its inspected host configuration.
fn kept_capabilities(config: &HostConfig) -> BTreeSet<String> {
    let dropped: BTreeSet<String> = config
        .cap_drop
        .iter()
        .flatten()
        .map(|c| capability(c))
        .collect();
    let added = config.cap_add.iter().flatten().map(|c| capability(c));
    let defaults: BTreeSet<String> = if dropped.contains("ALL") {
        BTreeSet::new()
    } else {
        PODMAN_DEFAULT_CAPABILITIES
            .iter()
            .map(|c| (*c).to_owned())
            .filter(|c| !dropped.contains(c))
            .collect()
    };
    defaults.into_iter().chain(added).collect()
}

/// A ulimit's name as Docker writes it (`fsize`; Podman answers `RLIMIT_FSIZE`).
fn ulimit_name(name: &str) -> String {
    let name = name.to_ascii_lowercase();
    name.strip_prefix("rlimit_").unwrap_or(&name).to_owned()
}

/// The CPU limit of an inspected configuration, in billionths of a CPU.
fn nano_cpus(config: &HostConfig) -> Option<i64> {
    match (config.nano_cpus, config.cpu_quota, config.cpu_period) {
        (Some(nano), _, _) if nano > 0 => Some(nano),
        (_, Some(quota), Some(period)) if quota > 0 && period > 0 => {
            Some(quota.saturating_mul(1_000_000_000) / period)
        }
        _ => None,
    }
}

/// The settings of `asked` that the created container's `got` does not have, each as a few
/// words saying what was asked and what the container has; empty when all were honoured.
pub(super) fn unhonoured(asked: &HostConfig, got: &HostConfig) -> Vec<String> {
    let mut missing = Vec::new();
    let shown = |value: Option<i64>| value.map_or_else(|| "none".to_owned(), |v| v.to_string());
    let mut compare = |what: &str, asked: Option<i64>, got: Option<i64>| {
        if asked.is_some() && asked != got {
            missing.push(format!(
                "{what} {} (the container has {})",
                shown(asked),
                shown(got)
            ));
        }
    };
    compare("memory limit", asked.memory, got.memory);
    compare("memory+swap limit", asked.memory_swap, got.memory_swap);
    compare("CPU limit (nano CPUs)", asked.nano_cpus, nano_cpus(got));
    compare("process limit", asked.pids_limit, got.pids_limit);
    for ulimit in asked.ulimits.iter().flatten() {
        let name = ulimit_name(ulimit.name.as_deref().unwrap_or_default());
        let found = got
            .ulimits
            .iter()
            .flatten()
            .find(|u| ulimit_name(u.name.as_deref().unwrap_or_default()) == name);
        let (soft, hard) = found.map_or((None, None), |u| (u.soft, u.hard));
        if (soft, hard) != (ulimit.soft, ulimit.hard) {
            missing.push(format!(
                "ulimit {name} {}:{} (the container has {}:{})",
                shown(ulimit.soft),
                shown(ulimit.hard),
                shown(soft),
                shown(hard)
            ));
        }
    }
    if asked.network_mode.is_some() && asked.network_mode != got.network_mode {
        missing.push(format!(
            "network {} (the container has {})",
            asked.network_mode.as_deref().unwrap_or_default(),
            got.network_mode.as_deref().unwrap_or("none given")
        ));
    }
    for option in asked.security_opt.iter().flatten() {
        if !got.security_opt.iter().flatten().any(|o| o == option) {
            missing.push(format!("security option {option}"));
        }
    }
    if asked.init == Some(true) && got.init != Some(true) {
        missing.push("an init process".to_owned());
    }
    if asked.cap_drop.is_some() || asked.cap_add.is_some() {
        let (want, have) = (kept_capabilities(asked), kept_capabilities(got));
        if want != have {
            let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(",");
            missing.push(format!(
                "capabilities {} only (the container has {})",
                list(&want),
                list(&have)
            ));
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::SystemVersionComponents;

    fn aci_config() -> HostConfig {
        HostConfig {
            memory: Some(536_870_912),
            memory_swap: Some(536_870_912),
            nano_cpus: Some(1_000_000_000),
            pids_limit: Some(256),
            network_mode: Some("none".to_owned()),
            cap_drop: Some(vec!["ALL".to_owned()]),
            cap_add: Some(
                ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"]
                    .map(str::to_owned)
                    .to_vec(),
            ),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            ulimits: Some(vec![ResourcesUlimits {
                name: Some("fsize".to_owned()),
                soft: Some(1_048_576),
                hard: Some(1_048_576),
            }]),
            init: Some(true),
            ..Default::default()
        }
    }

    /// What Podman 4.3's inspect reply says of a container created with [`aci_config`].
    fn podman_reply() -> HostConfig {
        HostConfig {
            cpu_quota: Some(100_000),
            cpu_period: Some(100_000),
            cap_drop: Some(
                [
                    "AUDIT_WRITE",
                    "KILL",
                    "MKNOD",
                    "NET_BIND_SERVICE",
                    "NET_RAW",
                    "SETFCAP",
                    "SETGID",
                    "SETPCAP",
                    "SETUID",
                    "SYS_CHROOT",
                ]
                .map(str::to_owned)
                .to_vec(),
            ),
            cap_add: Some(vec![]),
            ulimits: Some(vec![
                ResourcesUlimits {
                    name: Some("RLIMIT_NOFILE".to_owned()),
                    soft: Some(20_000),
                    hard: Some(20_000),
                },
                ResourcesUlimits {
                    name: Some("RLIMIT_FSIZE".to_owned()),
                    soft: Some(1_048_576),
                    hard: Some(1_048_576),
                },
            ]),
            ..aci_config()
        }
    }

    #[test]
    fn podman_is_told_from_docker_by_its_engine_component() {
        let version = |name: &str| SystemVersion {
            components: Some(vec![SystemVersionComponents {
                name: name.to_owned(),
                version: "4.3.1".to_owned(),
                details: None,
            }]),
            ..Default::default()
        };
        assert_eq!(engine_of(&version("Podman Engine")), Engine::Podman);
        assert_eq!(engine_of(&version("Engine")), Engine::Docker);
        assert_eq!(engine_of(&SystemVersion::default()), Engine::Docker);
    }

    #[test]
    fn podmans_reply_for_aci_settings_honours_them_all() {
        assert_eq!(
            unhonoured(&aci_config(), &podman_reply()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn each_setting_the_container_lacks_is_named_with_what_it_has() {
        let got = HostConfig {
            memory: Some(0),
            nano_cpus: Some(0),
            cpu_quota: Some(0),
            pids_limit: None,
            cap_drop: Some(vec!["NET_RAW".to_owned()]),
            ulimits: Some(vec![]),
            security_opt: Some(vec![]),
            init: Some(false),
            ..podman_reply()
        };
        assert_eq!(
            unhonoured(&aci_config(), &got),
            [
                "memory limit 536870912 (the container has 0)",
                "CPU limit (nano CPUs) 1000000000 (the container has none)",
                "process limit 256 (the container has none)",
                "ulimit fsize 1048576:1048576 (the container has none:none)",
                "security option no-new-privileges",
                "an init process",
                "capabilities CHOWN,DAC_OVERRIDE,FOWNER,FSETID only (the container has \
                 AUDIT_WRITE,CHOWN,DAC_OVERRIDE,FOWNER,FSETID,KILL,MKNOD,NET_BIND_SERVICE,\
                 SETFCAP,SETGID,SETPCAP,SETUID,SYS_CHROOT)",
            ]
        );
    }

    #[test]
    fn the_services_open_file_and_process_limits_are_read_from_its_proc_limits() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max processes             32768                unlimited            processes \n\
                      Max open files            20000                20000                files     \n";
        let got: Vec<_> = ulimits_of(limits)
            .into_iter()
            .map(|u| (u.name.unwrap_or_default(), u.soft, u.hard))
            .collect();
        assert_eq!(
            got,
            [
                ("nofile".to_owned(), Some(20_000), Some(20_000)),
                ("nproc".to_owned(), Some(32_768), Some(-1)),
            ]
        );
    }

    #[test]
    fn rootless_podman_on_cgroups_v1_is_refused_and_rootful_or_v2_is_not() {
        let info = |options: &[&str], version| SystemInfo {
            security_options: Some(options.iter().map(|o| (*o).to_owned()).collect()),
            cgroup_version: Some(version),
            ..Default::default()
        };
        let rootless = ["name=seccomp,profile=default", "name=rootless"];
        assert_eq!(
            refusal(&info(&rootless, SystemInfoCgroupVersionEnum::_1)).as_deref(),
            Some(
                "rootless Podman on cgroups v1 cannot limit a container's memory, CPUs or \
                 processes, which aci sets: run Podman's service as root, or on a host with \
                 cgroups v2"
            )
        );
        assert_eq!(
            refusal(&info(&rootless, SystemInfoCgroupVersionEnum::_2)),
            None
        );
        assert_eq!(
            refusal(&info(
                &["name=seccomp,profile=default"],
                SystemInfoCgroupVersionEnum::_1
            )),
            None
        );
    }
}
