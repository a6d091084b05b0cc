//! Network interface counters from `/proc/<pid>/net/dev` (cAdvisor's
//! `container/libcontainer/handler.go` `networkStatsFromProc`), converted as upstream's
//! `cadvisorInfoToNetworkStats`: every interface listed, `eth0` also inline.

use crate::types::{InterfaceStats, NetworkStats, Time};

/// The interface reported inline (upstream `network.DefaultInterfaceName`).
pub const DEFAULT_INTERFACE: &str = "eth0";

/// Interfaces cAdvisor leaves out (`isIgnoredDevice`).
fn ignored(name: &str) -> bool {
    ["lo", "veth", "docker", "nerdctl"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// Parses `net/dev` into interface counters, skipping the ignored devices.
pub fn parse_net_dev(s: &str) -> Vec<InterfaceStats> {
    s.lines()
        .skip(2)
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let name = name.trim();
            if ignored(name) {
                return None;
            }
            let f: Vec<u64> = rest
                .split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect();
            Some(InterfaceStats {
                name: name.to_string(),
                rx_bytes: f.first().copied(),
                rx_errors: f.get(2).copied(),
                tx_bytes: f.get(8).copied(),
                tx_errors: f.get(10).copied(),
            })
        })
        .collect()
}

/// `NetworkStats` of the interfaces (`None` when there are none).
pub fn network_stats(time: Time, interfaces: Vec<InterfaceStats>) -> Option<NetworkStats> {
    if interfaces.is_empty() {
        return None;
    }
    let default = interfaces
        .iter()
        .find(|i| i.name == DEFAULT_INTERFACE)
        .cloned()
        .unwrap_or_default();
    Some(NetworkStats {
        time,
        default,
        interfaces,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn net_dev_columns() {
        let s = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo:    100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0\n  eth0:   5000      40    2    0    0     0          0         0     7000      50    3    0    0     0       0          0\nveth12:   1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n";
        let i = parse_net_dev(s);
        assert_eq!(i.len(), 1);
        let n = network_stats(Time::default(), i).unwrap();
        assert_eq!(n.default.name, "eth0");
        assert_eq!(
            (
                n.default.rx_bytes,
                n.default.rx_errors,
                n.default.tx_bytes,
                n.default.tx_errors
            ),
            (Some(5000), Some(2), Some(7000), Some(3))
        );
        assert!(network_stats(Time::default(), Vec::new()).is_none());
    }
}
