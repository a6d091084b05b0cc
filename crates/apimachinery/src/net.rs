//! IP parsing as `k8s.io/utils/net` (`ParseIPSloppy`) and `k8s.io/component-helpers/node/util`
//! (`ParseNodeIPArgument`) do it.

use std::net::{IpAddr, Ipv4Addr};

/// `netutils.ParseIPSloppy`: Go's `net.ParseIP` of before Go 1.17, which also accepts IPv4
/// octets with leading zeros (read as decimal: `010.001.002.003` is `10.1.2.3`), alone or
/// at the end of an IPv6 address.
pub fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse() {
        return Some(ip);
    }
    if let Some(v4) = parse_ipv4_sloppy(s) {
        return Some(IpAddr::V4(v4));
    }
    // An IPv6 address ending in a dotted quad with leading zeros.
    let (head, tail) = s.rsplit_once(':')?;
    let v4 = parse_ipv4_sloppy(tail)?;
    format!("{head}:{v4}").parse().ok()
}

fn parse_ipv4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut fields = s.split('.');
    for o in &mut octets {
        let f = fields.next()?;
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let digits = f.trim_start_matches('0');
        *o = if digits.is_empty() {
            0
        } else if digits.len() > 3 {
            return None;
        } else {
            digits.parse().ok()?
        };
    }
    fields.next().is_none().then_some(Ipv4Addr::from(octets))
}

/// Why a `--node-ip` value cannot be used (`ParseNodeIPArgument`'s errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeIpError {
    /// More than two IPs, or two of the same family.
    #[error("must contain either a single IP or a dual-stack pair of IPs")]
    NotSingleOrDualStack,
    /// A pair with a cloud provider that does not allow dual-stack.
    #[error("dual-stack not supported in this configuration")]
    DualStackNotSupported,
    /// A pair that includes `0.0.0.0` or `::`.
    #[error("dual-stack node IP cannot include '0.0.0.0' or '::'")]
    DualStackUnspecified,
}

/// The node IPs of `--node-ip` and the entries that do not parse (upstream logs and ignores
/// those), as `nodeutil.ParseNodeIPArgument`: dual-stack pairs are allowed when
/// `cloud_provider` is empty or `external`.
pub fn parse_node_ip_argument(
    node_ip: &str,
    cloud_provider: &str,
) -> Result<(Vec<IpAddr>, Vec<String>), NodeIpError> {
    let allow_dual = cloud_provider.is_empty() || cloud_provider == "external";
    let mut ips = Vec::new();
    let mut invalid = Vec::new();
    if !node_ip.is_empty() {
        for entry in node_ip.split(',') {
            let entry = entry.trim();
            match parse_ip_sloppy(entry) {
                Some(ip) => ips.push(ip),
                None => invalid.push(entry.to_string()),
            }
        }
    }
    match ips.as_slice() {
        [a, b] if a.is_ipv6() == b.is_ipv6() => Err(NodeIpError::NotSingleOrDualStack),
        [_, _, _, ..] => Err(NodeIpError::NotSingleOrDualStack),
        [_, _] if !allow_dual => Err(NodeIpError::DualStackNotSupported),
        [a, b] if a.is_unspecified() || b.is_unspecified() => {
            Err(NodeIpError::DualStackUnspecified)
        }
        _ => Ok((ips, invalid)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn sloppy_accepts_leading_zeros() {
        assert_eq!(parse_ip_sloppy("010.001.002.003"), Some(ip("10.1.2.3")));
        assert_eq!(
            parse_ip_sloppy("::ffff:010.0.0.1"),
            Some(ip("::ffff:10.0.0.1"))
        );
        assert_eq!(parse_ip_sloppy("fd00::1"), Some(ip("fd00::1")));
        for bad in [
            "",
            "garbage",
            "1.2.3",
            "1.2.3.4.5",
            "256.0.0.1",
            "1.2.3.-4",
            "0001.2.3.4x",
        ] {
            assert_eq!(parse_ip_sloppy(bad), None, "{bad}");
        }
    }

    #[test]
    fn node_ip_argument() {
        assert_eq!(parse_node_ip_argument("", ""), Ok((vec![], vec![])));
        assert_eq!(
            parse_node_ip_argument("garbage", ""),
            Ok((vec![], vec!["garbage".to_string()]))
        );
        assert_eq!(
            parse_node_ip_argument(" 10.0.0.1 , nope", ""),
            Ok((vec![ip("10.0.0.1")], vec!["nope".to_string()]))
        );
        assert_eq!(
            parse_node_ip_argument("10.0.0.1,fd00::1", "external"),
            Ok((vec![ip("10.0.0.1"), ip("fd00::1")], vec![]))
        );
        assert_eq!(
            parse_node_ip_argument("10.0.0.1,10.0.0.2", ""),
            Err(NodeIpError::NotSingleOrDualStack)
        );
        assert_eq!(
            parse_node_ip_argument("10.0.0.1,fd00::1", "gce"),
            Err(NodeIpError::DualStackNotSupported)
        );
        assert_eq!(
            parse_node_ip_argument("0.0.0.0,fd00::1", ""),
            Err(NodeIpError::DualStackUnspecified)
        );
    }
}
