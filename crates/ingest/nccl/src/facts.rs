//! INFO lines that say how a process was set up, and the trail a failed call leaves: what the
//! diagnosis compares across ranks (settings, network, versions) and where an error started.
//! Read from a body no other family took (one line, no state):
//! ```text
//! NCCL_SOCKET_IFNAME set by environment to enp179s0f0
//! NCCL_IB_HCA set to mlx5_0
//! NCCL_CHECK_POINTERS set by environment to 1.
//! Using network IB
//! Bootstrap : Using enp179s0f0:198.18.2.2<0>          (2.25+: `Bootstrap: Using`, older `[0]eth0:...`)
//! NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB enp179s0f0:198.18.2.2<0>
//! NET/Socket : Using [0]ens7:10.128.0.33<0>
//! transport/net.cc:1008 -> 6                           (a call that returned ncclResult_t 6)
//! proxy.cc:858 -> 6 [Proxy Thread]
//! ```

use crate::scan;
use model::log::{ProcessKey, SourceLine};

/// One set-up fact a process printed.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigLine {
    pub process: Option<ProcessKey>,
    pub fact: ConfigFact,
    pub source: SourceLine,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigFact {
    /// `NCCL_X set by environment to Y` / `NCCL_X set to Y` (a trailing `.` dropped).
    Setting { name: String, value: String },
    /// `Using network IB` (or `Socket`, or a plugin's name).
    Network(String),
    /// An address this process uses (bootstrap or the network's out-of-band interface):
    /// how a peer named by address in another rank's error is found.
    Address { iface: String, ip: String },
}

/// `file.cc:123 -> N`: a call inside NCCL returned `ncclResult_t` N (not success); NCCL prints
/// one per stack frame on the way out.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedCall {
    pub process: Option<ProcessKey>,
    pub tid: u32,
    /// `transport/net.cc:1008`.
    pub site: String,
    pub code: i32,
    /// `Proxy Thread`, `Async thread`, ... when printed.
    pub thread: Option<String>,
    pub timestamp_ns: Option<i64>,
    pub source: SourceLine,
}

/// What [`read`] found in a body.
pub(crate) enum Fact {
    Config(Vec<ConfigFact>),
    Failed {
        site: String,
        code: i32,
        thread: Option<String>,
    },
}

/// The facts of an INFO body no other family read, if it has any. Cheap for the hundreds of
/// other INFO shapes: each test starts from the body's first bytes or its last `->`.
pub(crate) fn read(body: &[u8]) -> Option<Fact> {
    let b = body.trim_ascii();
    if b.starts_with(b"NCCL_") {
        return setting(b).map(|f| Fact::Config(vec![f]));
    }
    if let Some(rest) = b.strip_prefix(b"Using network ") {
        let name = rest.trim_ascii();
        return (!name.is_empty())
            .then(|| Fact::Config(vec![ConfigFact::Network(scan::text(name))]));
    }
    if b.starts_with(b"Bootstrap") || b.starts_with(b"NET/") {
        let addrs = addresses(b);
        return (!addrs.is_empty()).then_some(Fact::Config(addrs));
    }
    failed_call(b)
}

fn setting(b: &[u8]) -> Option<ConfigFact> {
    let name_end = b
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))?;
    let (name, rest) = b.split_at(name_end);
    let rest = rest
        .strip_prefix(b" set by environment to ")
        .or_else(|| rest.strip_prefix(b" set to "))?;
    let value = rest.trim_ascii();
    let value = value.strip_suffix(b".").unwrap_or(value);
    Some(ConfigFact::Setting {
        name: scan::text(name),
        value: scan::text(value),
    })
}

/// The `iface:ip<port>` addresses after `Using` (bootstrap, sockets) or `OOB` (IB).
fn addresses(b: &[u8]) -> Vec<ConfigFact> {
    let Some(using) = scan::find(b, b"Using ") else {
        return Vec::new();
    };
    let rest = b.get(using + 6..).unwrap_or_default();
    // On `NET/IB` lines the devices come first; the address is the OOB interface's.
    let rest = match scan::find(rest, b"OOB ") {
        Some(at) => rest.get(at + 4..).unwrap_or_default(),
        None if b.starts_with(b"NET/IB") => return Vec::new(),
        None => rest,
    };
    scan::tokens(rest).filter_map(address).collect()
}

/// `[0]eth0:10.0.0.1<0>` or `eth0:10.0.0.1<0>` (IPv6 too: the interface ends at the first `:`).
fn address(tok: &[u8]) -> Option<ConfigFact> {
    let tok = match tok.strip_prefix(b"[") {
        Some(t) => t.get(scan::find_byte(t, b']')? + 1..)?,
        None => tok,
    };
    let open = scan::find_byte(tok, b'<')?;
    let (head, port) = tok.split_at(open);
    if !port.ends_with(b">") {
        return None;
    }
    let colon = scan::find_byte(head, b':')?;
    let (iface, ip) = (head.get(..colon)?, head.get(colon + 1..)?);
    let plausible = !iface.is_empty()
        && !ip.is_empty()
        && ip
            .iter()
            .all(|c| c.is_ascii_hexdigit() || matches!(c, b'.' | b':' | b'%'));
    plausible.then(|| ConfigFact::Address {
        iface: scan::text(iface),
        ip: scan::text(ip),
    })
}

/// `path/file.cc:123 -> 6` with an optional ` [Thread name]` after.
fn failed_call(b: &[u8]) -> Option<Fact> {
    let arrow = scan::find(b, b" -> ")?;
    let (site, rest) = (b.get(..arrow)?, b.get(arrow + 4..)?);
    let colon = site.iter().rposition(|c| *c == b':')?;
    let (file, line) = (site.get(..colon)?, site.get(colon + 1..)?);
    let source_file = [&b".cc"[..], b".cu", b".c", b".h", b".cpp"]
        .iter()
        .any(|e| file.ends_with(e))
        && file
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'/' | b'_' | b'.' | b'-'));
    if !source_file || scan::dec_u32(line).is_none() {
        return None;
    }
    let code_end = rest
        .iter()
        .position(|c| !(c.is_ascii_digit() || *c == b'-'))
        .unwrap_or(rest.len());
    let code = std::str::from_utf8(rest.get(..code_end)?)
        .ok()?
        .parse::<i32>()
        .ok()?;
    let tail = rest.get(code_end..)?.trim_ascii();
    let thread = match tail {
        [] => None,
        t if t.starts_with(b"[") && t.ends_with(b"]") => {
            Some(scan::text(t.get(1..t.len() - 1).unwrap_or_default()))
        }
        _ => return None,
    };
    Some(Fact::Failed {
        site: scan::text(site),
        code,
        thread,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(body: &str) -> Vec<ConfigFact> {
        match read(body.as_bytes()) {
            Some(Fact::Config(v)) => v,
            _ => panic!("no config fact: {body}"),
        }
    }

    fn setting(name: &str, value: &str) -> ConfigFact {
        ConfigFact::Setting {
            name: name.into(),
            value: value.into(),
        }
    }

    fn addr(iface: &str, ip: &str) -> ConfigFact {
        ConfigFact::Address {
            iface: iface.into(),
            ip: ip.into(),
        }
    }

    #[test]
    fn settings_networks_and_addresses_as_the_fixtures_print_them() {
        assert_eq!(
            config("NCCL_SOCKET_IFNAME set by environment to enp179s0f0"),
            [setting("NCCL_SOCKET_IFNAME", "enp179s0f0")]
        );
        assert_eq!(
            config("NCCL_IB_HCA set to mlx5_0"),
            [setting("NCCL_IB_HCA", "mlx5_0")]
        );
        assert_eq!(
            config("NCCL_CHECK_POINTERS set by environment to 1."),
            [setting("NCCL_CHECK_POINTERS", "1")]
        );
        assert_eq!(
            config("Using network IB"),
            [ConfigFact::Network("IB".into())]
        );
        assert_eq!(
            config("Bootstrap : Using enp179s0f0:198.18.2.2<0>"),
            [addr("enp179s0f0", "198.18.2.2")]
        );
        assert_eq!(
            config("Bootstrap: Using bond0:172.19.50.38<0>"),
            [addr("bond0", "172.19.50.38")]
        );
        assert_eq!(
            config("Bootstrap : Using [0]eth0:10.100.62.64<0>"),
            [addr("eth0", "10.100.62.64")]
        );
        assert_eq!(
            config("NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_2:1/IB [RO]; OOB ibp209s0f0:10.128.3.13<0>"),
            [addr("ibp209s0f0", "10.128.3.13")]
        );
        assert_eq!(
            config("NET/Socket : Using [0]ens7:10.128.0.33<0>"),
            [addr("ens7", "10.128.0.33")]
        );
    }

    #[test]
    fn lines_that_are_not_facts() {
        for body in [
            "P2P Chunksize set to 131072",
            "Comm config Blocking set to 1",
            "NET/IB : No device found.",
            "NET/Plugin : No plugin found, using internal implementation",
            "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
            "Ring 00 : 6 -> 7 -> 0",
            "262144 Bytes -> Algo 0 proto 1 time 54.707825",
            "init.cc:1234 -> x",
            "see file.cc:12 -> 3 and more",
        ] {
            assert!(read(body.as_bytes()).is_none(), "{body}");
        }
    }

    #[test]
    fn failed_calls() {
        for (body, site, code, thread) in [
            (
                "transport/net.cc:1008 -> 6",
                "transport/net.cc:1008",
                6,
                None,
            ),
            (
                "proxy.cc:858 -> 6 [Proxy Thread]",
                "proxy.cc:858",
                6,
                Some("Proxy Thread"),
            ),
            (
                "group.cc:72 -> 3 [Async thread]",
                "group.cc:72",
                3,
                Some("Async thread"),
            ),
            ("misc/socket.cc:58 -> 3", "misc/socket.cc:58", 3, None),
        ] {
            match read(body.as_bytes()) {
                Some(Fact::Failed {
                    site: s,
                    code: c,
                    thread: t,
                }) => assert_eq!((s.as_str(), c, t.as_deref()), (site, code, thread)),
                _ => panic!("{body}"),
            }
        }
    }
}
