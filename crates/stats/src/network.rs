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

/// One interface's counters of `net/dev` (cAdvisor's `InterfaceStats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetDevCounters {
    /// Interface name.
    pub name: String,
    /// Received bytes.
    pub rx_bytes: u64,
    /// Received packets.
    pub rx_packets: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Dropped received packets.
    pub rx_dropped: u64,
    /// Sent bytes.
    pub tx_bytes: u64,
    /// Sent packets.
    pub tx_packets: u64,
    /// Send errors.
    pub tx_errors: u64,
    /// Dropped sent packets.
    pub tx_dropped: u64,
}

/// Parses `net/dev` into every counter cAdvisor keeps (`scanInterfaceStats`), skipping the
/// ignored devices and lines with fewer than the 16 columns.
pub fn parse_net_dev_counters(s: &str) -> Vec<NetDevCounters> {
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
                .map(|v| v.parse().ok())
                .collect::<Option<_>>()?;
            let [
                rx_bytes,
                rx_packets,
                rx_errors,
                rx_dropped,
                _,
                _,
                _,
                _,
                tx_bytes,
                tx_packets,
                tx_errors,
                tx_dropped,
                ..,
            ] = f[..]
            else {
                return None;
            };
            Some(NetDevCounters {
                name: name.to_string(),
                rx_bytes,
                rx_packets,
                rx_errors,
                rx_dropped,
                tx_bytes,
                tx_packets,
                tx_errors,
                tx_dropped,
            })
        })
        .collect()
}

/// Parses `net/dev` into the summary's interface counters, skipping the ignored devices.
pub fn parse_net_dev(s: &str) -> Vec<InterfaceStats> {
    parse_net_dev_counters(s)
        .into_iter()
        .map(|c| InterfaceStats {
            name: c.name,
            rx_bytes: Some(c.rx_bytes),
            rx_errors: Some(c.rx_errors),
            tx_bytes: Some(c.tx_bytes),
            tx_errors: Some(c.tx_errors),
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
        let c = parse_net_dev_counters(s);
        assert_eq!(
            c,
            vec![NetDevCounters {
                name: "eth0".into(),
                rx_bytes: 5000,
                rx_packets: 40,
                rx_errors: 2,
                rx_dropped: 0,
                tx_bytes: 7000,
                tx_packets: 50,
                tx_errors: 3,
                tx_dropped: 0,
            }]
        );
    }
}
