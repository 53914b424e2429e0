//! Partita's own figures (docs/benchmarks.md, "Hypervisor figures"), from two kinds of
//! console lines that carry the same counters (`partita_core::counters::Counter`):
//! - `bench: partita vm=<index> counter=<id> value=<v>`: read by the FreeRTOS guest with the
//!   PARTITA_COUNTER hypercall at the end of its run, for every VM (index in configuration
//!   order, named by the caller's `vm_names`);
//! - `[partita] counters vm=<name> <counter>=<value> ...`: printed by Partita when a VM
//!   stops (the only source for a Linux-only system, whose guest cannot make the call from
//!   user space).
//!
//! A VM the guest reported is taken from the guest's lines, the others from Partita's first
//! line for them (a Linux row boots once per job: its first boot's figures).
//! Each VM's figures become experiment `partita/<vm>`, one metric per counter, plus
//! `traps` (all causes), `traps-per-s` (per second of `elapsed`) and `el2-share` (EL2
//! time / (guest + EL2 time), %).

use partita_core::counters::Counter;

use super::{key_values, Measure};

/// Prefix of Partita's counter line (after the console's `[partita] `).
const PARTITA_LINE: &str = "[partita] counters ";
/// Prefix of the guest's counter line.
const GUEST_LINE: &str = "bench: partita ";

/// Every VM's figures in `console`.
pub fn parse(console: &str, vm_names: &[&str]) -> Vec<Measure> {
    let mut vms: Vec<(String, Vec<(Counter, f64)>)> = Vec::new();
    for line in console.lines().map(crate::bench::console::clean) {
        if let Some(text) = line.strip_prefix(GUEST_LINE) {
            if let Some((name, counter, value)) = guest_line(text, vm_names) {
                entry(&mut vms, name).push((counter, value));
            }
        }
    }
    for line in console.lines().map(|l| l.trim_end_matches(['\r', '\n'])) {
        if let Some(text) = line.strip_prefix(PARTITA_LINE) {
            let mut words = key_values(text);
            let Some(("vm", name)) = words.next() else {
                continue;
            };
            if vms.iter().any(|(seen, _)| seen == name) {
                continue;
            }
            let values: Vec<(Counter, f64)> = words
                .filter_map(|(k, v)| Some((Counter::from_name(k)?, v.parse().ok()?)))
                .collect();
            *entry(&mut vms, name) = values;
        }
    }
    vms.iter()
        .flat_map(|(name, values)| measures(name, values))
        .collect()
}

fn entry<'a>(
    vms: &'a mut Vec<(String, Vec<(Counter, f64)>)>,
    name: &str,
) -> &'a mut Vec<(Counter, f64)> {
    let at = match vms.iter().position(|(seen, _)| seen == name) {
        Some(at) => at,
        None => {
            vms.push((name.to_owned(), Vec::new()));
            vms.len() - 1
        }
    };
    &mut vms[at].1
}

fn guest_line<'a>(text: &str, vm_names: &[&'a str]) -> Option<(&'a str, Counter, f64)> {
    let field = |key: &str| key_values(text).find(|&(k, _)| k == key).map(|(_, v)| v);
    let vm: usize = field("vm")?.parse().ok()?;
    let counter = Counter::from_id(field("counter")?.parse().ok()?)?;
    Some((vm_names.get(vm)?, counter, field("value")?.parse().ok()?))
}

/// The records of one VM: every counter, then the derived figures.
fn measures(vm: &str, values: &[(Counter, f64)]) -> Vec<Measure> {
    let experiment = format!("partita/{vm}");
    let get = |c: Counter| values.iter().find(|(k, _)| *k == c).map(|(_, v)| *v);
    let mut out: Vec<Measure> = values
        .iter()
        .map(|(c, v)| Measure::new(&experiment, c.name(), *v, c.unit()))
        .collect();
    let traps: f64 = values
        .iter()
        .filter(|(c, _)| c.name().starts_with("traps-"))
        .map(|(_, v)| v)
        .sum();
    out.push(Measure::new(&experiment, "traps", traps, "count"));
    if let Some(elapsed) = get(Counter::ElapsedNs).filter(|&e| e > 0.0) {
        let per_s = (traps / (elapsed / 1e9)).round();
        out.push(Measure::new(&experiment, "traps-per-s", per_s, "1/s"));
    }
    if let (Some(guest), Some(el2)) = (get(Counter::GuestNs), get(Counter::El2Ns)) {
        if guest + el2 > 0.0 {
            let share = (el2 / (guest + el2) * 1e4).round() / 1e2;
            out.push(Measure::new(&experiment, "el2-share", share, "%"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONSOLE: &str = "\
[freertos] bench: partita vm=0 counter=0 value=2\r
[freertos] bench: partita vm=0 counter=11 value=750\r
[freertos] bench: partita vm=0 counter=12 value=250\r
[freertos] bench: partita vm=0 counter=25 value=2000000000\r
[freertos] bench: partita vm=1 counter=7 value=8\r
[freertos] bench: partita vm=9 counter=7 value=8\r
[freertos] bench: partita vm=1 counter=99 value=8\r
[partita] counters vm=freertos traps-hvc=3 guest-time=1 el2-time=1 elapsed=5\r
[partita] counters vm=other traps-wfi=4 unknown=7 elapsed=1000000000\r
";

    #[test]
    fn guest_lines_first_then_partita_lines_for_the_other_vms() {
        let m = parse(CONSOLE, &["freertos", "linux"]);
        let find = |e: &str, metric: &str| {
            m.iter()
                .find(|x| x.experiment == e && x.metric == metric)
                .map(|x| (x.value, x.unit.as_str()))
        };
        assert_eq!(find("partita/freertos", "traps-hvc"), Some((2.0, "count")));
        assert_eq!(find("partita/freertos", "guest-time"), Some((750.0, "ns")));
        assert_eq!(find("partita/freertos", "traps-per-s"), Some((1.0, "1/s")));
        assert_eq!(find("partita/freertos", "el2-share"), Some((25.0, "%")));
        assert_eq!(find("partita/linux", "traps-irq"), Some((8.0, "count")));
        assert_eq!(find("partita/linux", "traps"), Some((8.0, "count")));
        assert_eq!(find("partita/linux", "traps-per-s"), None);
        assert_eq!(find("partita/other", "traps-wfi"), Some((4.0, "count")));
        assert_eq!(find("partita/other", "traps-per-s"), Some((4.0, "1/s")));
        assert!(m.iter().all(|x| x.metric != "unknown"));
    }
}
