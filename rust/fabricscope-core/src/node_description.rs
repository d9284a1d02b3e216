//! What a node description (an InfiniBand NodeDescription, as `ibnetdiscover`, `iblinkinfo`,
//! `ibdiagnet2` and UFM print it) says about the node's name. Entity resolution joins these names
//! with the hosts other inputs give; the spelling rules live here, beside the readers that read them.

/// RDMA driver names a device of an HCA's description starts with (`mlx5_0`, `hfi1_0`, `irdma0`...).
const RDMA_DRIVERS: [&str; 7] = ["mlx", "hfi", "qib", "bnxt", "irdma", "rxe", "efa"];

/// The (host, RDMA device) an HCA's node description names, when it has rdma-ndd's `%h %d` shape
/// (`gpu02 mlx5_0`, the default of rdma-ndd(8)); `None` for anything else: a SHARP aggregation node
/// (`Mellanox Technologies Aggregation Node`), a vendor default (`MT4123 ConnectX6 Mellanox
/// Technologies`), a description with more or fewer words.
///
/// ```
/// use fabricscope_core::node_description::hca_host_device;
/// assert_eq!(hca_host_device("gpu02 mlx5_0"), Some(("gpu02", "mlx5_0")));
/// assert_eq!(hca_host_device("p0001 HCA-1"), None);
/// assert_eq!(hca_host_device("Mellanox Technologies Aggregation Node"), None);
/// ```
pub fn hca_host_device(description: &str) -> Option<(&str, &str)> {
    let mut words = description.split_whitespace();
    let (host, device) = (words.next()?, words.next()?);
    if words.next().is_some() || !RDMA_DRIVERS.iter().any(|d| device.starts_with(d)) {
        return None;
    }
    Some((host, device))
}

/// A switch's own name from its node description: NVIDIA/Mellanox managed switches describe
/// themselves `MF0;<hostname>:<model>/<unit>` (`MF0;ib-leaf01:MQM9700/U1`), and the hostname is the
/// name LLDP and the switch's CLI use. Other descriptions are the name, trimmed.
///
/// ```
/// use fabricscope_core::node_description::switch_name;
/// assert_eq!(switch_name("MF0;ib-leaf01:MQM9700/U1"), "ib-leaf01");
/// assert_eq!(switch_name(" leaf7 "), "leaf7");
/// assert_eq!(switch_name("MF0;:MQM9700/U1"), "MF0;:MQM9700/U1");
/// ```
pub fn switch_name(description: &str) -> &str {
    let d = description.trim();
    if let Some((_, rest)) = d.split_once(';')
        && let Some((name, _model)) = rest.split_once(':')
        && !name.is_empty()
    {
        return name;
    }
    d
}
