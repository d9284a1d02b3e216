//! Helpers several readers share: IBA port-state names and the `date`-style start stamp.

/// Logical port state id (IBA PortInfo:PortState) from ibdiagnet's short names or libibmad's
/// long ones (`Down`, `Initialize`, `Armed`, `Active`).
pub(crate) fn state_id(s: &str) -> Option<u64> {
    match s.to_ascii_uppercase().as_str() {
        "DOWN" => Some(1),
        "INI" | "INIT" | "INITIALIZE" => Some(2),
        "ARM" | "ARMED" => Some(3),
        "ACT" | "ACTIVE" => Some(4),
        "ACT_DEFER" | "ACTIVE_DEFER" => Some(5),
        _ => None,
    }
}

/// Physical port state id (IBA PortInfo:PortPhysicalState).
pub(crate) fn phys_state_id(s: &str) -> Option<u64> {
    let u = s.to_ascii_uppercase().replace(['_', ' '], "");
    match u.as_str() {
        "SLEEP" => Some(1),
        "POLLING" | "POLL" => Some(2),
        "DISABLED" | "DISABLE" => Some(3),
        "TRAINING" | "PORTCONFIGURATIONTRAINING" => Some(4),
        "LINKUP" | "UP" => Some(5),
        "LINKERRORRECOVERY" | "ERRORRECOVERY" => Some(6),
        "PHYTEST" => Some(7),
        _ => None,
    }
}

/// `Wed Dec  2 14:00:00 2026` → ns (read as UTC).
pub(crate) fn parse_started(s: &str) -> Option<i64> {
    let norm = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let t = chrono::NaiveDateTime::parse_from_str(&norm, "%a %b %d %H:%M:%S %Y").ok()?;
    t.and_utc().timestamp_nanos_opt()
}
